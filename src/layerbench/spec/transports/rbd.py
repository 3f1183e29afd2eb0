"""RBD: a Ceph cluster layerbench builds (a monitor and a manager here, one OSD per storage host) or one the
user runs (``OwnClusterSpec``), its image reached by fio's own rbd engine (librbd), by rbd-fuse under a
direct-I/O loop device, or by the kernel's rbd driver (krbd)."""

from __future__ import annotations

from typing import Any, Literal, Self
from urllib.parse import parse_qs, urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from layerbench.spec.transports.row import STORAGE_HOST, ClientRow, TransportRow

KIND = "rbd"
OWN = "rbd-own"  # what a cluster the user runs needs of this host (the ceph and rbd tools): stack/remote/ceph
SCHEME = "rbd://"
MAX_OSDS = 9  # one storage host each: a test host runs a few, each OSD takes about 1 GB under load


ClusterState = Literal["healthy", "degraded", "recovering"]


class RecoverySpec(BaseModel):
    """Ceph's recovery settings, set on every OSD before the trials (``ceph config set osd``); unset: Ceph's own,
    which on a device the OSD takes for a hard disk include a 0.1 s sleep between recovery operations."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    osd_recovery_sleep: float | None = Field(
        default=None, ge=0, le=10, description="seconds between recovery operations (for every device class)"
    )
    osd_recovery_max_active: int | None = Field(
        default=None, ge=1, le=64, description="recovery operations at once per OSD (for every device class)"
    )
    osd_max_backfills: int | None = Field(default=None, ge=1, le=64, description="backfills at once per OSD")

    def given(self) -> dict[str, float | int]:
        return {k: v for k, v in self.model_dump().items() if v is not None}

    def label(self) -> str:
        short = {"osd_recovery_sleep": "sleep", "osd_recovery_max_active": "active", "osd_max_backfills": "backfills"}
        return ",".join(f"{short[k]}={v:g}" for k, v in self.given().items())


class ClusterSpec(BaseModel):
    """The Ceph cluster layerbench builds for a cell: its OSDs (one storage host each) and its pool's replicas."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    osds: int = Field(default=3, ge=1, le=MAX_OSDS, description="OSDs, each on a storage host of its own")
    size: int = Field(default=3, ge=1, le=MAX_OSDS, description="the pool's replicas (each on another host)")
    min_size: int | None = Field(
        default=None, ge=1, le=MAX_OSDS, description="replicas a write needs; Ceph's default: size - size/2"
    )

    state: ClusterState = Field(
        default="healthy",
        description="the cluster during each trial: healthy; degraded (one OSD stopped, its PGs degraded); "
        "recovering (data written while degraded, the OSD back, the trial runs while recovery does)",
    )
    recovery: RecoverySpec | None = Field(default=None, description="Ceph's recovery settings for the OSDs")

    @model_validator(mode="after")
    def _fits(self) -> Self:
        if self.size > self.osds:
            raise ValueError(
                f"device.remote.cluster.size {self.size} is more than cluster.osds {self.osds}: "
                "each replica needs a storage host of its own"
            )
        if self.min_size is not None and self.min_size > self.size:
            raise ValueError(f"device.remote.cluster.min_size {self.min_size} is more than cluster.size {self.size}")
        return self._state_fits()

    def beneath(self) -> tuple[ClusterSpec, ...]:
        """The clusters a finding judges this one against, the nearest first: degraded or recovering against
        the same cluster healthy (with the same recovery settings, else Ceph's: they act only while it
        recovers); healthy with replicas against the same with one (what replication costs); none for one
        replica, healthy."""
        if self.state != "healthy":
            same = self.model_copy(update={"state": "healthy"})
            return (same,) if self.recovery is None else (same, same.model_copy(update={"recovery": None}))
        if self.size > 1:
            return (self.model_copy(update={"size": 1, "min_size": None}),)
        return ()

    def _state_fits(self) -> Self:
        """An OSD down leaves each PG size - 1 replicas: writes go on only while that is at least min_size."""
        if self.state == "healthy":
            return self
        field = f"device.remote.cluster.state {self.state}"
        if self.osds < 2 or self.size < 2:
            raise ValueError(
                f"{field} needs cluster.size >= 2 and cluster.osds >= 2 (one OSD is stopped, and its PGs "
                f"go on from another replica); given osds {self.osds}, size {self.size}"
            )
        if self.writes_need() > self.size - 1:
            raise ValueError(
                f"{field} needs cluster.min_size < size: with one OSD down a PG has size - 1 = {self.size - 1} "
                f"replicas and would stop taking writes (min_size {self.writes_need()})"
            )
        return self

    @model_serializer(mode="wrap")
    def _as_before(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A healthy cluster with Ceph's recovery settings dumps as it did before the state existed: its cells'
        # ids (hashes of the dump) stay those of runs already stored.
        data = handler(self)
        if data.get("state") == "healthy":
            data.pop("state")
        if data.get("recovery") is None:
            data.pop("recovery", None)
        return data

    def writes_need(self) -> int:
        return self.min_size if self.min_size is not None else self.size - self.size // 2

    def host_needs(self, needs: list[str]) -> list[str]:
        """What this host must have: a storage host per OSD and Ceph's daemons, beside the client's needs."""
        return needs

    def label(self) -> str:
        state = "" if self.state == "healthy" else f",{self.state}"
        recovery = f",recovery({self.recovery.label()})" if self.recovery and self.recovery.given() else ""
        return f"{self.osds}osd,size{self.size}/{self.writes_need()}{state}{recovery}"


NAME = r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$"  # a pool's or a Ceph user's name, as a word of a command line


class OwnClusterSpec(BaseModel):
    """A Ceph cluster the user runs (``conf`` given): layerbench makes an image of the run's own in ``pool``,
    runs, and removes it. It creates or deletes no pool, changes no setting of the cluster, starts or stops
    none of its daemons, and injects no fault there unless the user names it (`run --allow-faults-on FSID`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    conf: str = Field(description="the cluster's ceph.conf on this host (its monitors), as `ceph -c` takes it")
    pool: str = Field(pattern=NAME, description="an RBD pool of the cluster (layerbench creates none)")
    user: str = Field(default="admin", pattern=NAME, description="the Ceph user (client.USER) layerbench acts as")
    keyring: str | None = Field(
        default=None, description="that user's keyring; unset: where the conf says, or /etc/ceph's default"
    )
    state: ClusterState = Field(
        default="healthy",
        description="healthy; degraded or recovering only where `run --allow-faults-on FSID` names this cluster "
        "(one of its OSDs is then held down with `ceph osd add-noup` and `ceph osd down`, its daemon untouched)",
    )

    @model_serializer(mode="wrap")
    def _without_defaults(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        return {k: v for k, v in data.items() if not (k == "state" and v == "healthy") and v is not None}

    def host_needs(self, needs: list[str]) -> list[str]:
        """The ceph and rbd tools and the client's needs: no storage host, no daemon of Ceph's here."""
        return [OWN, *(n for n in needs if n not in (STORAGE_HOST, KIND))]

    def label(self) -> str:
        state = "" if self.state == "healthy" else f",{self.state}"
        return f"own:{self.pool}{state}"


def cluster_model(value: dict[str, Any]) -> type[ClusterSpec] | type[OwnClusterSpec]:
    """A cluster the user runs names its conf; any other is one layerbench builds. Chosen before validating, so
    that an error names the field as the spec spells it (``cluster.pool``), with one model's complaint only."""
    return OwnClusterSpec if "conf" in value else ClusterSpec


def image_size(size: int) -> int:
    """An image on the user's cluster: the device's size in whole MiB (as `rbd create --size` takes it)."""
    return int(size) // 2**20 * 2**20


def export_uri(conf: str, pool: str, image: str, user: str) -> str:
    """The device's path with fio as the client: what fio's rbd engine needs to reach the image."""
    return f"{SCHEME}{pool}/{image}?conf={conf}&user={user}"


def _parts(uri: str) -> tuple[str, str, str, str]:
    split = urlsplit(uri)
    query = {k: v[0] for k, v in parse_qs(split.query).items()}
    return query["conf"], split.netloc, split.path.lstrip("/"), query["user"]


def fio_args(uri: str) -> list[str]:
    """fio's rbd engine (librbd) and the image, in place of a file and an engine."""
    _, pool, image, user = _parts(uri)
    return ["--ioengine=rbd", f"--clientname={user}", f"--pool={pool}", f"--rbdname={image}"]


def fio_env(uri: str) -> dict[str, str]:
    """librados reads its configuration (monitors, keyring) from CEPH_CONF: fio's rbd engine has no option for it."""
    return {"CEPH_CONF": _parts(uri)[0]}


TRANSPORT = TransportRow(
    {
        "fio": ClientRow(
            (KIND, "rbd-fio"),
            "fio's own rbd engine (librbd; no block device here: raw, fio natively or in Docker)",
            "fio's rbd engine",
            SCHEME,
            fio_args,
            fio_env,
        ),
        "fuse": ClientRow((KIND, "rbd-fuse"), "rbd-fuse under a direct-I/O loop device", "rbd-fuse"),
        "kernel": ClientRow((KIND, "rbd-kernel"), "the kernel's rbd driver (krbd)"),
    },
    cluster=ClusterSpec,
    features=(OWN,),
)
