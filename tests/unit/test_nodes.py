"""Splitting a matrix by node for --parallel-nodes: every cell in exactly one part, baselines within."""

from __future__ import annotations

from layerbench.run import nodes
from layerbench.spec.engines import kubernetes
from layerbench.spec.engines.kubernetes import ClusterNode, KubeCaps
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.load import validate
from layerbench.spec.matrix import expand


def test_cells_are_split_by_node_and_baselines_stay_within_a_part(full_caps: HostCaps) -> None:
    caps = full_caps.with_engine(kubernetes.KIND, KubeCaps({n: ClusterNode(True, True) for n in ("a", "b")}))
    pods = [{"kind": "kubernetes", "node": "a"}, {"kind": "kubernetes", "node": "b"}]
    native = {"filesystem": "ext4", "engine": "native", "placement": "host-dir"}
    spec = {
        "name": "n",
        "device": {"kind": "zram"},
        "stacks": [native, {"filesystem": "ext4", "engine": pods, "placement": ["bind", "tmpfs"]}],
        "workloads": [{"name": "RR", "rw": "randread"}],
        "baseline": native,
    }
    matrix = expand(validate(spec), caps)
    parts = nodes.split(matrix)
    assert sorted(parts) == ["a", "b", nodes.THIS_HOST]
    assert [len(parts[n].cells) for n in ("a", "b", nodes.THIS_HOST)] == [2, 2, 1]
    assert sorted(c.id for p in parts.values() for c in p.cells) == sorted(c.id for c in matrix.cells)
    base = parts[nodes.THIS_HOST].cells[0].id
    assert all(matrix.baseline_of[c.id] == base for c in parts["a"].cells)  # the whole run's baseline...
    assert all(parts["a"].baseline_of[c.id] is None for c in parts["a"].cells)  # ...is on another part
    assert nodes.only(matrix, "b").cells == parts["b"].cells
    assert nodes.only(matrix, "z").cells == []


def test_each_child_is_this_run_with_its_node(full_caps: HostCaps) -> None:
    caps = full_caps.with_engine(kubernetes.KIND, KubeCaps({"a": ClusterNode(True, True)}))
    one = {"filesystem": "ext4", "engine": {"kind": "kubernetes", "node": "a"}, "placement": "tmpfs"}
    spec = {"name": "n", "device": {"kind": "zram"}, "stacks": [one], "workloads": [{"name": "RR", "rw": "read"}]}
    (kid,) = nodes.children(expand(validate(spec), caps), ["run", "spec.yaml", "--db", "r.db"])
    assert kid.node == "a" and kid.argv[-6:] == ["run", "spec.yaml", "--db", "r.db", "--node", "a"]


def test_parts_on_this_machine_are_named_for_the_contention_warning(full_caps: HostCaps) -> None:
    caps = full_caps.with_engine(kubernetes.KIND, KubeCaps({n: ClusterNode(True, True) for n in ("a", "b")}))
    pods = [{"kind": "kubernetes", "node": "a"}, {"kind": "kubernetes", "node": "b"}]
    one = {"filesystem": "ext4", "engine": pods, "placement": "tmpfs"}
    spec = {"name": "n", "device": {"kind": "zram"}, "stacks": [one], "workloads": [{"name": "RR", "rw": "read"}]}
    matrix = expand(validate(spec), caps)
    assert sorted(nodes.on_this_machine(matrix, {"a": True, "b": True})) == ["a", "b"]
    assert nodes.on_this_machine(matrix, {"a": True, "b": False}) == ["a"]
