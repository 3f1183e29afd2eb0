"""The unit of measurement every workload adapter produces and the store keeps."""

from __future__ import annotations

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
