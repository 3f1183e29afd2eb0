"""RBD: a Ceph cluster layerbench builds (a monitor and a manager here, one OSD per storage host), its image
reached by fio's own rbd engine (librbd), by rbd-fuse under a direct-I/O loop device, or by the kernel's rbd
driver (krbd)."""

from __future__ import annotations

from typing import Self
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator

from layerbench.spec.transports.row import ClientRow, TransportRow

KIND = "rbd"
SCHEME = "rbd://"
MAX_OSDS = 9  # one storage host each: a test host runs a few, each OSD takes about 1 GB under load


class ClusterSpec(BaseModel):
    """The Ceph cluster layerbench builds for a cell: its OSDs (one storage host each) and its pool's replicas."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    osds: int = Field(default=3, ge=1, le=MAX_OSDS, description="OSDs, each on a storage host of its own")
    size: int = Field(default=3, ge=1, le=MAX_OSDS, description="the pool's replicas (each on another host)")
    min_size: int | None = Field(
        default=None, ge=1, le=MAX_OSDS, description="replicas a write needs; Ceph's default: size - size/2"
    )

    @model_validator(mode="after")
    def _fits(self) -> Self:
        if self.size > self.osds:
            raise ValueError(
                f"device.remote.cluster.size {self.size} is more than cluster.osds {self.osds}: "
                "each replica needs a storage host of its own"
            )
        if self.min_size is not None and self.min_size > self.size:
            raise ValueError(f"device.remote.cluster.min_size {self.min_size} is more than cluster.size {self.size}")
        return self

    def writes_need(self) -> int:
        return self.min_size if self.min_size is not None else self.size - self.size // 2

    def label(self) -> str:
        return f"{self.osds}osd,size{self.size}/{self.writes_need()}"


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
            "fio's own rbd engine (librbd; no block device here: raw, native fio only)",
            "fio's rbd engine",
            SCHEME,
            fio_args,
            fio_env,
        ),
        "fuse": ClientRow((KIND, "rbd-fuse"), "rbd-fuse under a direct-I/O loop device", "rbd-fuse"),
        "kernel": ClientRow((KIND, "rbd-kernel"), "the kernel's rbd driver (krbd)"),
    },
    cluster=ClusterSpec,
)
