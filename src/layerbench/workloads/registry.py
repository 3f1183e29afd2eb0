"""The workload types, by their spec kind: an explicit dict, as ``stack.engines.ENGINES`` is.

Adding a workload type is its model in spec/ (a ``WorkloadSpec``, its tag in
``spec.models.Workload``), its module here declaring a ``WorkloadType``, and one
line below; docs/architecture.md lists the files.
"""

from __future__ import annotations

from layerbench.spec.models import Workload
from layerbench.workloads import fio_kind, iozone, pgbench, ycsb
from layerbench.workloads.kind import WorkloadType

__all__ = ["WORKLOADS", "WorkloadType", "of"]

WORKLOADS: dict[str, WorkloadType] = {
    "fio": fio_kind.WORKLOAD,
    "iozone": iozone.WORKLOAD,
    "ycsb": ycsb.WORKLOAD,
    "pgbench": pgbench.WORKLOAD,
}


def of(w: Workload) -> WorkloadType:
    """The type of a workload, by its spec kind (the one place a workload's type is looked up)."""
    return WORKLOADS[w.kind]
