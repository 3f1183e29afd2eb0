"""Findings between Ceph cells (issue 56's questions): on a cluster layerbench builds, a degraded or recovering
cell is judged against the same cluster healthy, and a healthy one with replicas against one replica; the
`ceph` preset's cells find each other so."""

from __future__ import annotations

from layerbench.analysis.comparisons import reference, references
from layerbench.spec import load
from layerbench.spec.matrix import expand_stacks
from layerbench.spec.models import StackSpec
from layerbench.spec.presets import __path__ as presets


def _stacks() -> dict[str, StackSpec]:
    with open(presets[0] + "/ceph.yaml") as f:
        exp = load.parse(f.read())
    return {s.label(): s for s in expand_stacks(exp)}


def test_the_ceph_presets_cells_are_judged_against_the_state_and_the_replicas_beneath() -> None:
    stacks = _stacks()
    beneath = {label: (r.label() if (r := reference(s)) is not None else None) for label, s in stacks.items()}
    size1, size3 = "loop@rbd-fio(3osd,size1/1)/none/native/raw", "loop@rbd-fio(3osd,size3/2)/none/native/raw"
    assert beneath["loop@rbd-fio(3osd,size2/1)/none/native/raw"] == size1
    assert beneath[size3] == size1
    assert beneath[size1] is None  # one replica, healthy: nothing beneath it on the cluster
    for state in ("degraded", "recovering"):
        label = f"loop@rbd-fio(3osd,size3/2,{state},recovery(sleep=0))/none/native/raw"
        nearest, then = (r.label() for r in references(stacks[label]))
        assert nearest == "loop@rbd-fio(3osd,size3/2,recovery(sleep=0))/none/native/raw" and then == size3
        assert then in stacks  # the preset's healthy size 3, whose recovery settings are Ceph's own
