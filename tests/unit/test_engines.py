"""The engine registry and the engines' spec rules, without root: every engine kind registered,
Podman's drivers and refusals, failures classified by the engine that owns them."""

from __future__ import annotations

import dataclasses
from typing import get_args

import pytest

from layerbench.run.kinds.single import category
from layerbench.spec import load
from layerbench.spec.engines import podman, vm
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.matrix import expand
from layerbench.spec.models import EngineKind, EngineSpec
from layerbench.spec.traits import TRAITS
from layerbench.stack.cleanup import REMOVERS
from layerbench.stack.engines import ENGINES, failure_category

BASE = "name: t\ndevice: {kind: loop, size: 1GiB}\nstacks:\n"
FIO = "workloads:\n  - {name: RR}\n"


def test_every_engine_kind_is_registered_and_container_engines_have_rules() -> None:
    assert set(ENGINES) == set(get_args(EngineKind))
    assert {kind for kind, t in TRAITS.items() if t.rule is None} == {"native"}
    assert {"dockerd", "podman", "vm"} <= set(REMOVERS)


def test_podman_drivers_default_and_validate() -> None:
    assert EngineSpec.model_validate("podman").driver == "overlay"
    assert EngineSpec.model_validate("docker").driver == "overlay2"
    assert EngineSpec.model_validate("vm+docker").driver == "overlay2"
    for wrong in ("podman:overlay2", "docker:overlay", "vm+docker:btrfs"):
        with pytest.raises(ValueError, match="allowed values"):
            EngineSpec.model_validate(wrong)


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("{filesystem: ext4, engine: 'podman:btrfs'}", "needs a btrfs host filesystem"),
        ("{filesystem: none, engine: podman}", "Podman needs a host filesystem"),
        ("{filesystem: ext4, engine: podman, placement: host-dir}", "in a container use one of"),
        ("{filesystem: ext4, engine: podman, placement: volume, server: {kind: postgres}}", "not supported yet"),
        ("{filesystem: ext4, engine: vm, placement: volume}", "a VM's disk is 'raw'"),
        ("{filesystem: ext4, engine: vm, placement: host-dir, limits: {cpus: 1}}", "limits on a VM cell"),
        (
            "{filesystem: ext4, engine: 'vm+docker', placement: volume, server: {kind: postgres}, tuning: cpuset}",
            "in a VM",
        ),
        ("{filesystem: ext4, engine: vm, placement: host-dir, server: {kind: postgres}, instances: 9}", "at most 8"),
        ("{filesystem: ext4, engine: vm, placement: host-dir, server: {kind: postgres}, profile: MEM}", "in a VM"),
        ("{filesystem: none, engine: 'vm+docker', placement: raw}", "Docker in a VM needs a host filesystem"),
        ("{filesystem: ext4, engine: 'vm+docker', placement: host-dir}", "in a container use one of"),
    ],
)
def test_impossible_engine_cells_are_refused_with_reason(full_caps: HostCaps, entry: str, reason: str) -> None:
    workloads = "workloads:\n  - {name: p, kind: pgbench}\n" if "server" in entry else FIO
    m = expand(load.parse(BASE + f"  - {entry}\n" + workloads), full_caps)
    assert not m.cells and m.refused and reason in m.refused[0].reason, m.refused


def test_a_host_without_podman_refuses_it(full_caps: HostCaps) -> None:
    caps = dataclasses.replace(full_caps, binaries=full_caps.binaries - {"podman"}).with_engine(
        podman.KIND, podman.PodmanCaps()
    )
    m = expand(load.parse(BASE + "  - {filesystem: ext4, engine: podman}\n" + FIO), caps)
    assert "apt-get install podman" in m.refused[0].reason


def test_the_engines_preset_builds_every_cell_on_a_full_host(full_caps: HostCaps) -> None:
    m = expand(load.load("engines"), full_caps)
    assert not m.refused
    assert {c.stack.engine.kind for c in m.cells} == {"native", "docker", "podman"}


def test_failures_are_classified_by_the_engine_that_owns_them() -> None:
    assert failure_category(125, "podman exec in lb-1 failed: gone") == "engine-error"
    assert failure_category(125, "docker exec in lb-1 failed: gone") == "engine-error"
    assert failure_category(125, "fio: bad option") is None
    assert category(125, "podman exec failed: connection refused") == "engine-error"
    assert category(1, "fio: error") == "tool-error"


VM = (
    BASE
    + "  - {filesystem: ext4, engine: vm, placement: host-dir}\n"
    + "  - {filesystem: none, engine: vm, placement: raw}\n"
    + "  - {filesystem: ext4, engine: 'vm+docker', placement: [writable-layer, bind]}\n"
)


def test_vm_cells_build_on_a_host_whose_kvm_runs_guests(full_caps: HostCaps) -> None:
    m = expand(load.parse(VM + FIO), full_caps)
    assert not m.refused and {c.stack.placement.kind for c in m.cells} == {"host-dir", "raw", "writable-layer", "bind"}


def test_vm_cells_under_emulation_are_refused_unless_the_spec_allows_it(full_caps: HostCaps) -> None:
    tcg = full_caps.with_engine(vm.KIND, vm.GuestCaps(accel="tcg", missing=None))
    refused = expand(load.parse(VM + FIO), tcg)
    assert not refused.cells and all("emulation: allow" in r.reason for r in refused.refused)
    allowed = expand(load.parse(VM + "emulation: allow\n" + FIO), tcg)
    assert len(allowed.cells) == 4 and not allowed.refused


def test_a_host_without_a_guest_image_refuses_vm_cells_with_why(full_caps: HostCaps) -> None:
    caps = full_caps.with_engine(vm.KIND, vm.GuestCaps(missing="no test VM image in /c/vm (make vm-image builds it)"))
    m = expand(load.parse(VM + "emulation: allow\n" + FIO), caps)
    assert not m.cells and all("make vm-image" in r.reason for r in m.refused)


def test_a_guest_gone_under_a_command_is_the_engines_failure() -> None:
    assert category(255, "layerbench: the guest is gone (qemu exited with -9)") == "engine-error"
    assert category(255, "fio: exited with 255") == "tool-error"


def test_the_operational_models_preset_is_seed_002s_six_models(full_caps: HostCaps) -> None:
    m = expand(load.load("operational-models"), full_caps)
    assert not m.refused
    models = {(c.stack.engine.kind, c.stack.placement.kind) for c in m.cells}
    assert models == {
        ("native", "host-dir"), ("docker", "writable-layer"), ("docker", "bind"),
        ("vm", "host-dir"), ("vm+docker", "writable-layer"), ("vm+docker", "bind"),
    }  # fmt: skip
    tcg = expand(
        load.load("operational-models"), full_caps.with_engine(vm.KIND, vm.GuestCaps(accel="tcg", missing=None))
    )
    assert {r.cell.stack.engine.kind for r in tcg.refused} == {"vm", "vm+docker"}
    assert {c.stack.engine.kind for c in tcg.cells} == {"native", "docker"}


def test_the_seybold_models_preset_runs_what_each_host_can(full_caps: HostCaps) -> None:
    m = expand(load.load("seybold-models"), full_caps)
    models = {(c.stack.engine.kind, c.stack.placement.kind) for c in m.cells}
    assert not m.refused and models == {
        ("native", "host-dir"), ("docker", "writable-layer"), ("docker", "bind"),
        ("vm", "host-dir"), ("vm+docker", "writable-layer"), ("vm+docker", "bind"),
    }  # fmt: skip
    assert {c.stack.server.data for c in m.cells if c.stack.server} == {0.5, 4}
    tcg = expand(load.load("seybold-models"), full_caps.with_engine(vm.KIND, vm.GuestCaps(accel="tcg", missing=None)))
    assert "emulation: allow" in next(r.reason for r in tcg.refused if r.cell.stack.engine.kind == "vm")
