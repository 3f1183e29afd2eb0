"""The engine seam, measured: no code outside stack/engines/ and spec/engines/ (the engines' registry) writes an
engine's or an OCI runtime's name; what differs between engines is read from their rows (issues 30 and 52).
The remote transports' seam likewise: no transport's name, client label or host feature outside stack/remote/'s
transports and spec/transports/ (issue 56)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import get_args

import pytest

from layerbench.spec.engines.runtimes import RUNTIMES
from layerbench.spec.models import EngineKind
from layerbench.spec.traits import TRAITS
from layerbench.spec.transports import DEFAULT_CLIENT, STORAGE_HOST, TRANSPORTS, doctor_remotes
from layerbench.stack.remote import TRANSPORTS as STACK_TRANSPORTS
from layerbench.stack.remote import TransportType

SRC = Path(__file__).resolve().parents[2] / "src" / "layerbench"
KINDS = frozenset(get_args(EngineKind))
NAMES = KINDS | frozenset(RUNTIMES)
# Where naming an engine is the point: the engines themselves, and their registry (their rows, rules and what
# their probes learn; the OCI runtimes' registry beside it).
ALLOWED = ("stack/engines/", "spec/engines/")


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of a module's, class's and function's docstrings: prose that may name an engine."""
    return {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }


def _literals(tree: ast.Module, names: frozenset[str] = NAMES) -> list[tuple[int, str]]:
    """(line, name) for each string literal in one module that is one of ``names`` (an engine's or a runtime's,
    unless told), wherever it stands: a comparison, a subscript, a dict's key, a default, data, a program's
    name; docstrings aside."""
    prose = _docstrings(tree)
    return sorted(
        (n.lineno, n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in names and id(n) not in prose
    )


def name_literals(names: frozenset[str], allowed: tuple[str, ...], src: Path = SRC) -> list[str]:
    """``file:line: name`` for each of ``names`` written outside the modules under ``allowed``."""
    found: list[str] = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        if rel.startswith(allowed):
            continue
        tree = ast.parse(path.read_text())
        found += [f"src/layerbench/{rel}:{line}: {name!r}" for line, name in _literals(tree, names)]
    return found


def engine_name_literals(src: Path = SRC) -> list[str]:
    """``file:line: name`` for each engine or runtime name written outside the engines and their registry."""
    return name_literals(NAMES, ALLOWED, src)


# A remote transport's names: its own, its clients' labels (a device's kind: "nbd-fio") and the host features its
# clients need (keys of HostCaps.remote), a storage host's aside.
TRANSPORT_NAMES = (
    frozenset(TRANSPORTS)
    | frozenset(label for label, _ in doctor_remotes())
    | frozenset(f for r in TRANSPORTS.values() for c in r.clients.values() for f in c.needs)
) - {STORAGE_HOST}


def _stack_side(t: TransportType) -> str:
    """Where a transport lives on the stack's side: its module (nbd.py), or its package (ceph/, for rbd)."""
    module = sys.modules[(t.attach or t.build).__module__]  # type: ignore[union-attr]
    rel = Path(module.__file__ or "").relative_to(SRC).as_posix()
    return rel.removesuffix("__init__.py") if rel.endswith("/__init__.py") else rel


# Where naming a transport is the point: the registry's rows, and each transport's module (or package) with the
# registry that lists them on the stack's side.
TRANSPORT_ALLOWED = (
    "spec/transports/",
    "stack/remote/__init__.py",
    *(_stack_side(t) for t in STACK_TRANSPORTS.values()),
)
# The same word meaning something else: fio's own engines' names (an ioengine "nbd" is fio's, not a transport).
HOMONYMS = {"workloads/jobfile.py": frozenset({"nbd", "rbd"})}


def transport_name_literals(src: Path = SRC) -> list[str]:
    """``file:line: name`` for each transport name written outside the transports and their registry."""
    found = name_literals(TRANSPORT_NAMES, TRANSPORT_ALLOWED, src)
    return [f for f in found if f.split(": ")[1].strip("'") not in HOMONYMS.get(_rel(f), frozenset())]


def _rel(found: str) -> str:
    return found.removeprefix("src/layerbench/").split(":")[0]


def test_no_engine_or_runtime_name_is_written_outside_the_engines_and_their_registry() -> None:
    found = engine_name_literals()
    assert not found, (
        f"{len(found)} engine or runtime names outside stack/engines/ and spec/engines/ (read a trait of the "
        "engine's row, or a role of spec/engines/: HOST_ENGINE, API_ENGINE, DEFAULT_RUNTIME_BINARY):\n"
        + "\n".join(found)
    )


def test_no_transport_name_is_written_outside_the_transports_and_their_registry() -> None:
    found = transport_name_literals()
    assert not found, (
        f"{len(found)} remote transport names outside spec/transports/ and stack/remote/'s transports (read the "
        "transport's row: spec.transports' label, needs, device_clients, without_device):\n" + "\n".join(found)
    )


def test_each_transport_has_its_stack_side_and_each_feature_its_probe() -> None:
    """A transport of the spec is one the stack can attach, and every host feature a client needs is one a
    transport's module tells the probe how to look for (and none is probed that no client needs)."""
    from layerbench.stack.remote import TRANSPORTS as STACK_TRANSPORTS

    assert list(STACK_TRANSPORTS) == list(TRANSPORTS)
    needed = {f for r in TRANSPORTS.values() for c in r.clients.values() for f in c.needs}
    needed |= {f for r in TRANSPORTS.values() for f in r.features}
    assert needed == {f for t in STACK_TRANSPORTS.values() for f in t.needs}
    assert all(DEFAULT_CLIENT in r.clients for r in TRANSPORTS.values())


def test_each_local_device_kind_has_its_builder() -> None:
    """A device kind of the spec (spec/devices/) is one the stack builds (stack/device.py's BUILDERS)."""
    from layerbench.spec.devices import DEVICES
    from layerbench.spec.models import DeviceKind
    from layerbench.stack.device import BUILDERS

    assert list(DEVICES) == list(get_args(DeviceKind))
    assert set(BUILDERS) == set(DEVICES)


def test_the_scan_sees_each_form_of_literal() -> None:
    code = '''"""A docstring may say docker."""
KINDS = frozenset({"vm", "vm+docker"})
a = kind == "native"
b = "swarm" in kinds
c = {"podman": 1}
d = caps.engines["kubernetes"]
e = ("docker-host",)
def f(kind="runc"):
    """Nor is this one counted: crun."""
match kind:
    case "runsc":
        pass
g = kind == "fio"
h = "podman" in caps.binaries
i = f"{kind} on docker"
'''
    lines = [line for line, _ in _literals(ast.parse(code))]
    assert lines == [2, 2, 3, 4, 5, 6, 7, 8, 11, 14]


def test_the_traits_table_has_a_row_per_engine_kind_and_registered_engine() -> None:
    from layerbench.stack.engines import ENGINES

    assert list(TRAITS) == list(get_args(EngineKind))
    assert set(ENGINES) == set(TRAITS)


def test_a_targets_facts_are_the_keys_its_engine_gave_typed() -> None:
    from layerbench.stack.target import Facts

    info = {"accel": "tcg", "guest_kernel": None, "limits": {"cpus": 1.0}, "pid": 42, "other": "kept aside"}
    facts = Facts.of(info)
    assert (facts.accel, facts.guest_kernel, facts.limits, facts.pid, facts.limits_set) == (
        "tcg",
        None,
        {"cpus": 1.0},
        42,
        None,
    )
    # A fact given as None is recorded as it was given; one not given is not recorded.
    assert facts.recorded(("container", "accel", "guest_kernel")) == {"accel": "tcg", "guest_kernel": None}


def test_an_emulated_guests_trial_is_flagged_from_its_facts() -> None:
    from layerbench.run.kinds.single import trial_checks
    from layerbench.run.measure.monitor import Monitor
    from layerbench.stack.target import Device, Target

    target = Target(
        lambda a, t: None,  # type: ignore[arg-type,return-value]
        lambda n, x: n,
        "/data",
        False,
        Device("", "none", 0),
        "vm",
        {"accel": "tcg"},
        mount_table=lambda: "",
    )
    names = {c.name: c.status for c in trial_checks([], Monitor([]), target, "")}
    assert names["not-comparable"] == "flag"


def test_the_cli_imports_no_module_of_stack_anywhere() -> None:
    """Not at start (test_cli_start.py) nor in a command: it goes through host.py and session.py."""
    found = sorted(
        f"src/layerbench/{path.relative_to(SRC).as_posix()}: {name}"
        for path in (SRC / "cli").rglob("*.py")
        for name in _imports_of(path)
        if name.startswith("layerbench.stack")
    )
    assert not found, "\n".join(found)


def test_doctor_says_how_to_name_a_cluster_and_a_swarm(monkeypatch: pytest.MonkeyPatch) -> None:
    from layerbench.run import host

    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("LAYERBENCH_SWARM_MANAGER", raising=False)
    rows = host.engine_rows([])
    assert [(engine, ok) for engine, _, ok, _ in rows] == [("kubernetes", False), ("swarm", False)]
    assert all("not probed: pass --" in note for *_, note in rows)


def _imports_of(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("layerbench."):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("layerbench.")}
    return found


if (
    __name__ == "__main__"
):  # the engine names left outside the engines, for a tree: python tests/unit/test_seam.py [SRC]
    import sys

    tree = Path(sys.argv[1]) if len(sys.argv) > 1 else SRC
    print("\n".join(engine_name_literals(tree) + transport_name_literals(tree)) or "none")
