"""What the spec layer asks of a workload type, declared on its model (``WorkloadSpec``).

The spec layer cannot import ``workloads/`` (it sits below it), so the spec-level
answers of each workload type (does it need a server, why it cannot run on a
stack, the data set it gives the stack's server, whether its client is set up here,
its sweep) are methods of its pydantic model; what faces the tool (its command, its parser, its summaries) is declared
in its module under ``workloads/`` (``workloads/registry.py``). Expansion, rules
and the space check call these methods and never test a workload's class.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

# Validation context of cells read back from a results database (``STORED_CONTEXT`` in models.py): a user's
# own files (a job file, pgbench scripts) were read when the cell ran and need not be there when it is read.
STORED = "stored"

if TYPE_CHECKING:
    from layerbench.spec.feasibility import HostCaps
    from layerbench.spec.models import StackSpec


class WorkloadSpec:
    """A mixin of the workload models (no fields): the defaults a workload type overrides."""

    # A database client runs against a stack's server; a file workload on a stack without one.
    needs_server: ClassVar[bool] = False

    def refused_on(self, stack: StackSpec) -> str | None:
        """Why this workload cannot run on ``stack`` (the stack's own rules are spec/rules.py's), or None."""
        return None

    def sized(self, stack: StackSpec) -> StackSpec:
        """The stack as this workload's cells run on it: the same, unless the workload sizes its server's
        data set (a YCSB workload file's recordcount); the matrix makes its cells on this stack."""
        return stack

    def data_on(self, stack: StackSpec) -> dict[str, int]:
        """What it keeps on the stack's filesystem through the stack's server (a name shared by the workloads
        sharing it → bytes); its own files are its workload type's (``WorkloadType.files``)."""
        return {}

    def client_missing(self, caps: HostCaps) -> str | None:
        """Why the tool that runs this workload is not ready on this host, or None."""
        return None

    def own_files(self) -> dict[str, str | None]:
        """The user's files it runs whose content is part of its cells' identity: path → digest (None where the
        file could not be read; spec/own_files.py)."""
        return {}

    def sweep_axes(self) -> dict[str, tuple[Any, ...]]:
        """The fields swept (each with its values): one workload per combination (spec/matrix.py)."""
        return {}

    def kept_in_sweep(self) -> bool:
        """Whether a combination of the sweep's values makes sense as a workload (fio: bs <= size)."""
        return True


def existing_file(value: str, what: str, context: dict[str, Any] | None) -> str:
    """A user's file a workload names (a job file, a script): it must be there when the spec is read, but not
    when a stored cell is (``STORED`` in the validation context): it was read when it ran, and its results are
    read anywhere, without it."""
    if (context or {}).get(STORED):
        return value
    try:
        found = Path(value).is_file()
    except OSError as err:  # a name too long or otherwise unusable is as absent as a missing file
        raise ValueError(f"no {what} at {value!r}: {err.strerror}") from err
    if not found:
        raise ValueError(f"no {what} at {value!r}")
    return value
