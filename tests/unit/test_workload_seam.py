"""The workload seam, measured: generic code asks the registry (workloads/registry.py) and each workload's
model (spec/workload_spec.py) instead of testing a workload's class (issue 52, part 6)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

from layerbench.spec.models import WORKLOAD_KINDS, Workload
from layerbench.workloads import registry

SRC = Path(__file__).resolve().parents[2] / "src" / "layerbench"


def _class_names(node: ast.AST) -> list[str]:
    """The names an isinstance's class argument holds: a name, an attribute, a tuple or a union of them."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.Tuple):
        return [n for e in node.elts for n in _class_names(e)]
    if isinstance(node, ast.BinOp):
        return _class_names(node.left) + _class_names(node.right)
    return []


def workload_class_checks(src: Path = SRC) -> list[str]:
    """Every ``isinstance(x, ...Workload)`` outside workloads/, as "path:line"."""
    found = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src)
        if rel.parts[0] == "workloads":
            continue  # the registry and the workload types may look at their own classes
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "isinstance"
                and len(node.args) == 2
                and any(n.endswith("Workload") for n in _class_names(node.args[1]))
            ):
                found.append(f"{rel}:{node.lineno}")
    return found


def test_no_workload_class_is_tested_outside_workloads() -> None:
    found = workload_class_checks()
    assert not found, "ask workloads.registry.of(w) or the workload's model instead:\n" + "\n".join(found)


def test_the_scan_sees_each_form_of_check(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "isinstance(w, FioWorkload)\nisinstance(w, m.IozoneWorkload)\n"
        "isinstance(w, YcsbWorkload | PgbenchWorkload)\nisinstance(w, (FioWorkload, int))\nisinstance(w, int)\n"
    )
    assert workload_class_checks(tmp_path) == ["a.py:1", "a.py:2", "a.py:3", "a.py:4"]


def test_the_registry_has_one_type_per_workload_kind_in_the_specs_order() -> None:
    assert tuple(registry.WORKLOADS) == WORKLOAD_KINDS
    assert all(t.kind == kind for kind, t in registry.WORKLOADS.items())
    assert list(_models()) == list(WORKLOAD_KINDS)


def test_a_file_workload_type_builds_a_command_and_a_client_type_does_not() -> None:
    for kind, model in _models().items():
        assert (registry.WORKLOADS[kind].argv is None) == model.needs_server, kind


def _models() -> dict[str, type]:
    """The spec's workload models by their kind, in the order of ``spec.models.Workload``'s union."""
    models = [get_args(a)[0] for a in get_args(get_args(Workload)[0])]  # Annotated[Union[Annotated[M, Tag]], ...]
    return {get_args(m.model_fields["kind"].annotation)[0]: m for m in models}


def test_each_type_answers_for_its_own_workloads() -> None:
    from layerbench.spec.databases import PgbenchWorkload, YcsbWorkload
    from layerbench.spec.models import FioWorkload, IozoneWorkload

    rand, seq = FioWorkload(name="r", size="64M"), FioWorkload(name="s", rw="write", bs="1M", iodepth=4)
    surface = IozoneWorkload(kind="iozone", name="z", sizes=("64k", "32M"))
    ycsb, pg = YcsbWorkload(name="y"), PgbenchWorkload(name="p")
    kinds = [registry.of(w) for w in (rand, seq, surface, ycsb, pg)]
    assert [k.headline(w) for k, w in zip(kinds, (rand, seq, surface, ycsb, pg), strict=True)] == [
        "iops",
        "bw",
        "iozone_geomean",
        "ops",
        "ops",
    ]
    assert [k.comms for k in kinds] == [("fio",), ("fio",), ("iozone",), ("java",), ("pgbench",)]
    assert [k.data_bytes(w) for k, w in zip(kinds, (rand, seq, surface, ycsb, pg), strict=True)] == [
        64 * 2**20,
        256 * 2**20,
        32 * 2**20,
        0,
        0,
    ]
    assert registry.of(rand).qd1_direction(rand) == "read" and registry.of(seq).qd1_direction(seq) is None
    assert registry.of(surface).writes(surface, "randwrite") and registry.of(surface).writes(surface, "") is None
    assert [k.surface for k in kinds] == [False, False, True, False, False]
