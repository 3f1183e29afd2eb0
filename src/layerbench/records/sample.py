"""The unit of measurement every workload adapter produces and the store keeps."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Sample:
    """One number a tool reported: metric, value, unit, and where it came from.

    ``direction`` is "read", "write", "trim" or "" (not directional);
    ``job`` is the tool's own job or operation name, "" for the aggregate.
    """

    metric: str
    value: float
    unit: str
    direction: str = ""
    job: str = ""


# An IOzone point's job: the file and record size in kB, written by the adapter and read back by the surface
# analysis, here together so the two cannot drift apart.
_POINT = re.compile(r"s(?P<size>\d+)k-r(?P<record>\d+)k")


def point_job(size_kb: int, record_kb: int) -> str:
    return f"s{size_kb}k-r{record_kb}k"


def job_point(job: str) -> tuple[int, int] | None:
    """(size_kb, record_kb) of a job ``point_job`` wrote; None for any other job."""
    match = _POINT.fullmatch(job)
    return (int(match["size"]), int(match["record"])) if match else None
