"""The file workloads' models: one fio job (built from fields, or a user's own job file run as fio's command
line would run it) and an IOzone sweep; the database workloads' are spec/databases.py."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from layerbench.spec.engines.runtimes import RUNTIMES
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.own_files import job_file_digest
from layerbench.spec.sizes import ByteSize
from layerbench.spec.workload_spec import STORED, WorkloadSpec, existing_file

if TYPE_CHECKING:
    from layerbench.spec.models import StackSpec

FioRw = Literal["read", "write", "randread", "randwrite", "rw", "randrw"]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# The fields a job file takes as fio takes options on its command line (fio's option of each): given in the spec,
# they are every job's defaults, and a job's own value in the file wins (workloads/jobfile.py, ``given``).
JOB_FILE_FIELDS = {"size": "size", "runtime_s": "runtime", "numjobs": "numjobs", "iodepth": "iodepth", "bs": "bs"}
# The variable layerbench fills in with the placement's directory (or device) where a job file names it.
TARGET_VARIABLE = "LAYERBENCH_TARGET"


class FioWorkload(Frozen, WorkloadSpec):
    """One fio job, built from these fields, or a user's own job file."""

    kind: Literal["fio"] = "fio"
    name: str = Field(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_.-]+$")
    rw: FioRw = "randread"
    bs: ByteSize = 4096
    numjobs: int = Field(default=1, ge=1, le=256)
    iodepth: int = Field(default=1, ge=1, le=4096)
    size: ByteSize = Field(default=256 * 1024**2, description="the test file (or region)")
    runtime_s: float = Field(default=5.0, gt=0, le=86400)
    ramp_s: float = Field(default=1.0, ge=0, le=3600)
    direct: bool = True
    ioengine: Literal["libaio", "io_uring", "psync", "sync", "posixaio", "mmap"] = "libaio"
    rwmixread: int | None = Field(default=None, ge=0, le=100)
    job_file: str | None = Field(default=None, description="a user's own fio job file")
    job_file_digest: str | None = Field(
        default=None,
        description="job_file: a digest of the file's content and its includes', part of the cell's identity "
        "(set by layerbench when the spec is read; a value given is replaced)",
    )
    allow_outside_placement: bool = Field(
        default=False,
        description="job_file: let it name files, devices and logs outside the placement (absolute paths, '..')",
    )
    allow_programs: bool = Field(
        default=False,
        description="job_file: let it run programs as root (exec_prerun, exec_postrun, ioengine=exec or external)",
    )
    env: dict[str, str] | None = Field(
        default=None,
        description=f"job_file: the values of the ${{NAME}} variables it uses (fio's environment); "
        f"${{{TARGET_VARIABLE}}} is the placement's directory (or device), filled in by layerbench",
    )
    personality: (
        Literal["fileserver-like", "varmail-like", "videoserver-like", "webproxy-like", "webserver-like"] | None
    ) = Field(default=None, description="a Filebench-style personality (see docs/personalities.md)")
    scale: float = Field(default=1.0, gt=0, le=100, description="personality: multiplies its file and op counts")
    time_based: bool = Field(default=True, description="false: one pass over the file (as IOzone), runtime is a cap")
    precondition: Literal["fill", "steady", "sparse", "none"] = Field(
        default="fill",
        description=(
            "fill: write the file once with incompressible data; steady: fill, then random writes until "
            "fio's steady-state detector says IOPS are flat (as SSD tests do); sparse: a file never "
            "written (only to demonstrate the trap: its reads never reach the device); none: a fresh file "
            "each trial, created by the workload itself and removed after it (IOzone's write)"
        ),
    )
    steadystate: str | None = Field(
        default=None,
        pattern=r"^(iops|bw|iops_slope|bw_slope):[0-9.]+%?$",
        description="end the run once fio sees steady state, e.g. 'iops_slope:0.3%' (fio --steadystate)",
    )
    ss_dur_s: float = Field(default=10.0, gt=0, description="fio --ss_dur: the window steady state is judged on")
    verify: Literal["crc32c", "md5", "sha256"] | None = Field(
        default=None,
        description="write each block with a checksum (fio's verify) and read every block back once the trial is "
        "over (on a Ceph cluster degraded or recovering: once it is healthy again); a bad block fails the trial "
        "with fio's words (its offset). Needs a write, time_based: false and numjobs: 1",
    )
    sweep: dict[str, tuple[Any, ...]] | None = Field(
        default=None,
        description="numeric fields as axes, e.g. {size: [1M, 16M], bs: [4k, 64k]}: one workload per combination "
        "(combinations with bs > size are skipped, as IOzone does)",
    )

    @model_validator(mode="before")
    @classmethod
    def _digest_job_file(cls, value: Any, info: ValidationInfo) -> Any:
        # Read whenever the spec is (a resumed run's too), so an edited file or include makes other cells; a
        # stored cell keeps what it ran with (spec/own_files.py).
        if (
            not isinstance(value, dict)
            or not isinstance(value.get("job_file"), str)
            or (info.context or {}).get(STORED)
        ):
            return value
        return {**value, "job_file_digest": job_file_digest(value["job_file"])}

    @field_validator("sweep")
    @classmethod
    def _sweep_numeric_fields(cls, value: dict[str, tuple[Any, ...]] | None) -> dict[str, tuple[Any, ...]] | None:
        allowed = {"bs", "size", "numjobs", "iodepth", "runtime_s", "rwmixread", "scale"}
        for key, values in (value or {}).items():
            if key not in allowed:
                raise ValueError(f"sweep.{key}: not a numeric workload field; allowed: {', '.join(sorted(allowed))}")
            if not values:
                raise ValueError(f"sweep.{key}: give at least one value")
        return value

    @field_validator("job_file")
    @classmethod
    def _job_file_readable(cls, value: str | None, info: ValidationInfo) -> str | None:
        return value if value is None else existing_file(value, "fio job file", info.context)

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        for name in value or {}:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ValueError(f"env.{name}: not a variable's name (letters, digits and _, not first a digit)")
            if name == TARGET_VARIABLE:
                raise ValueError(f"env.{name}: layerbench fills it in with the placement's directory; drop it")
        return value

    @model_validator(mode="after")
    def _opt_ins_need_a_job_file(self) -> FioWorkload:
        for opt_in in ("allow_outside_placement", "allow_programs", "env", "job_file_digest"):
            if getattr(self, opt_in) and not self.job_file:
                raise ValueError(f"{opt_in}: applies to a job_file only")
        return self

    @model_validator(mode="after")
    def _verify_fits(self) -> FioWorkload:
        """fio replays a pass's offsets to read them back: one job, one pass, and writes to check."""
        if self.verify is None:
            return self
        if self.source_kind():
            raise ValueError(f"verify: applies to workloads built from fields, not a {self.source_kind()}")
        if self.rw in ("read", "randread"):
            raise ValueError(
                f"verify: needs a write to check; rw {self.rw} writes nothing (write, randwrite, rw, randrw)"
            )
        if self.time_based:
            raise ValueError("verify: needs time_based: false (one pass over the file, which fio can read back)")
        if self.numjobs != 1:
            raise ValueError(
                f"verify: needs numjobs: 1 (jobs on one file overwrite each other's blocks); given {self.numjobs}"
            )
        return self

    @model_serializer(mode="wrap")
    def _as_given(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A job file takes only the command-line fields the user wrote (``given``): they dump only when written,
        # so a dump read back (a sweep's point, a resumed run's spec, a stored cell) gives the same ones. Other
        # workloads dump as before ``env`` existed: their cell ids (hashes) stay stable.
        data = handler(self)
        for name in ("env", "job_file_digest", "verify"):
            if data.get(name) is None:
                data.pop(name, None)
        if self.job_file:
            for name in set(JOB_FILE_FIELDS) - self.model_fields_set:
                data.pop(name, None)
        return data

    def __hash__(self) -> int:
        # Frozen models hash their fields; ``env`` (and ``sweep``) are mappings, hashed here as their items.
        return hash(
            tuple((k, tuple(sorted(v.items())) if isinstance(v, dict) else v) for k, v in self.__dict__.items())
        )

    def own_files(self) -> dict[str, str | None]:
        return {self.job_file: self.job_file_digest} if self.job_file else {}

    def given(self) -> dict[str, str]:
        """A job file's command-line options from the fields the spec gives (fio's option → its value)."""
        if not self.job_file:
            return {}
        values = {"size": str(self.size), "numjobs": str(self.numjobs), "iodepth": str(self.iodepth)}
        values |= {"bs": str(self.bs), "runtime": _fio_seconds(self.runtime_s)}
        return {fio: values[fio] for name, fio in JOB_FILE_FIELDS.items() if name in self.model_fields_set}

    def label(self) -> str:
        return self.name

    def source_kind(self) -> str | None:
        """What names this workload's files, where not its fields: a user's job file or a personality."""
        return "job file" if self.job_file else "personality" if self.personality else None

    def refused_on(self, stack: StackSpec) -> str | None:
        if self.precondition == "sparse" and stack.placement.kind == "raw":
            return "a sparse (never written) file needs a filesystem; a raw device has no holes"
        source = self.source_kind()
        remote = stack.device.remote
        if remote and remote.reached_by_fio() and source:
            return f"a {source} names its own files; {remote.client_name()} takes workloads built from fields"
        runtime = RUNTIMES.get(stack.engine.runtime or "")
        if runtime and runtime.io_uring and self.ioengine == "io_uring" and not source:
            return f"ioengine io_uring under runtime {runtime.name}: {runtime.io_uring}"
        if stack.clients is not None and self.personality:
            return "clients: not yet for a personality; give the workload's fields or a job file instead"
        return None

    def sweep_axes(self) -> dict[str, tuple[Any, ...]]:
        return dict(self.sweep or {})

    def kept_in_sweep(self) -> bool:
        return self.bs <= self.size  # as IOzone skips a record larger than its file


def _fio_seconds(seconds: float) -> str:
    """A time as fio reads it: whole seconds, else milliseconds (fio takes no fraction of a second)."""
    return f"{int(seconds)}s" if seconds == int(seconds) else f"{round(seconds * 1000)}ms"


IozoneTest = Literal["write", "read", "random"]


class IozoneWorkload(Frozen, WorkloadSpec):
    """IOzone itself in automatic mode (seed 004): every file size by every record size, a surface per operation.

    ``sizes`` and ``records`` are the ranges IOzone doubles through (-n/-g, -y/-q); ``tests`` pick its
    tests: write (write and rewrite), read (read and reread), random (random read and random write).
    """

    kind: Literal["iozone"]
    name: str = Field(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_.-]+$")
    sizes: tuple[ByteSize, ByteSize] = Field(default=(64 * 2**10, 16 * 2**20), description="smallest, largest file")
    records: tuple[ByteSize, ByteSize] = Field(default=(4 * 2**10, 16 * 2**20), description="smallest, largest record")
    tests: tuple[IozoneTest, ...] = Field(default=("write", "read", "random"), min_length=1)
    direct: bool = Field(default=False, description="O_DIRECT (-I); 004 ran IOzone with its defaults, buffered")
    fsync: bool = Field(default=True, description="include fsync in write timings (-e), so writes reach the device")

    @model_validator(mode="after")
    def _ranges(self) -> IozoneWorkload:
        for field_name in ("sizes", "records"):
            low, high = getattr(self, field_name)
            if low > high or low < 4096:
                raise ValueError(f"{field_name}: give [smallest, largest], at least 4k each, smallest first")
        if self.records[0] > self.sizes[1]:
            raise ValueError("records: the smallest record is larger than the largest file")
        return self

    def label(self) -> str:
        return self.name

    def refused_on(self, stack: StackSpec) -> str | None:
        if stack.clients is not None:
            return "clients: for fio only (IOzone has no client/server mode)"
        if stack.placement.kind == "raw":
            return "IOzone writes and reads a file of its own: give the stack a filesystem"
        return None

    def client_missing(self, caps: HostCaps) -> str | None:
        if "iozone" in caps.clients:
            return None
        return "IOzone is not in the cache (make setup fetches it from Debian's non-free or Ubuntu's multiverse)"
