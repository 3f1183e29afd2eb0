"""The engine seam, measured: no code outside stack/engines/ and spec/engines/ (the engines' registry) writes an
engine's or an OCI runtime's name; what differs between engines is read from their rows (issues 30 and 52)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest

from layerbench.spec.engines.runtimes import RUNTIMES
from layerbench.spec.models import EngineKind
from layerbench.spec.traits import TRAITS

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


def _literals(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, name) for each string literal in one module that is an engine's or a runtime's name, wherever it
    stands: a comparison, a subscript, a dict's key, a default, data, a program's name; docstrings aside."""
    prose = _docstrings(tree)
    return sorted(
        (n.lineno, n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in NAMES and id(n) not in prose
    )


def engine_name_literals(src: Path = SRC) -> list[str]:
    """``file:line: name`` for each engine or runtime name written outside the engines and their registry."""
    found: list[str] = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        if rel.startswith(ALLOWED):
            continue
        found += [f"src/layerbench/{rel}:{line}: {name!r}" for line, name in _literals(ast.parse(path.read_text()))]
    return found


def test_no_engine_or_runtime_name_is_written_outside_the_engines_and_their_registry() -> None:
    found = engine_name_literals()
    assert not found, (
        f"{len(found)} engine or runtime names outside stack/engines/ and spec/engines/ (read a trait of the "
        "engine's row, or a role of spec/engines/: HOST_ENGINE, API_ENGINE, DEFAULT_RUNTIME_BINARY):\n"
        + "\n".join(found)
    )


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


STACK = SRC / "stack"


def _module_of(path: Path) -> str:
    whole = path.with_suffix("").parts
    parts = list(whole[len(whole) - 1 - whole[::-1].index("layerbench") :])
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = STACK) -> dict[str, set[str]]:
    """Module → the modules of ``root`` it imports, anywhere in it (at the top, in a function, or for the type
    checker alone): each is a dependency, whether or not it runs at import time."""
    modules = {_module_of(p): p for p in sorted(root.rglob("*.py"))}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base]).strip(".")
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            graph[module] |= {t for t in targets if t in modules and t != module}
    # Importing a module runs its packages' __init__ first: one imported from outside its package (a module
    # of stack/engines/vm/ from capabilities.py) depends on those packages too, and so on every engine.
    for module, targets in graph.items():
        graph[module] = targets | {
            package
            for t in targets
            for package in _packages(t)
            if package in modules and package != module and not module.startswith(package + ".")
        }
    return graph


def _packages(module: str) -> list[str]:
    """The packages a module is in, innermost last (``a.b.c`` → ``a``, ``a.b``)."""
    parts = module.split(".")
    return [".".join(parts[:n]) for n in range(1, len(parts))]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each as one cycle
    through some of its modules, named in import order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))
        return None

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def one_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """A path from the component's first module back to itself, within the component."""
    start, members = component[0], set(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & members):
            if w == start:
                return [*paths[v], start]
            if w not in paths:
                paths[w] = [*paths[v], w]
                queue.append(w)
    return component


def test_stack_has_no_import_cycle() -> None:
    graph = import_graph()
    found = cycles(graph)
    said = [
        f"{len(c)} modules: " + " -> ".join(m.removeprefix("layerbench.") for m in one_cycle(graph, c)) for c in found
    ]
    assert not found, f"{len(found)} import cycles in stack/:\n" + "\n".join(said)


def test_no_import_in_stack_points_up_its_layers() -> None:
    found = [f"{m} -> {t}" for m, t in upward(import_graph())]
    assert not found, "imports pointing up stack/'s layers (test_seam.LAYERS):\n" + "\n".join(found)


def test_the_cycle_finder_finds_one() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert one_cycle(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]


def test_an_import_from_outside_a_package_depends_on_the_package_too(tmp_path: Path) -> None:
    stack = tmp_path / "layerbench" / "stack"
    for rel, code in {
        "__init__.py": "",
        "low.py": "from layerbench.stack.engines.vm import qemu\n",
        "engines/__init__.py": "from layerbench.stack.engines import vm\n",
        "engines/vm/__init__.py": "from layerbench.stack.engines.vm import qemu\n",
        "engines/vm/qemu.py": "",
    }.items():
        (stack / rel).parent.mkdir(parents=True, exist_ok=True)
        (stack / rel).write_text(code)
    graph = import_graph(stack)
    assert graph["layerbench.stack.low"] == {
        "layerbench.stack.engines",
        "layerbench.stack.engines.vm",
        "layerbench.stack.engines.vm.qemu",
    }
    assert graph["layerbench.stack.engines.vm"] == {"layerbench.stack.engines.vm.qemu"}
    assert _layer("layerbench.stack.engines.vm.qemu") < _layer("layerbench.stack.engines.vm")
    assert _layer("layerbench.stack.engines.vm_docker") == _layer("layerbench.stack.engines")


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


def test_the_spec_imports_no_module_of_stack_anywhere() -> None:
    """spec/ is below stack/: the engines' rows, rules and probe results are read there without the stack."""
    found = sorted(
        f"src/layerbench/{path.relative_to(SRC).as_posix()}: {name}"
        for path in (SRC / "spec").rglob("*.py")
        for name in _imports_of(path)
        if name.startswith("layerbench.stack")
    )
    assert not found, "\n".join(found)


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


# stack/'s layers, bottom first (docs/architecture.md): an import from a module to one of a higher layer
# points up. A new module of stack/ takes its place here.
# A module of an engine's package below its engine (its adapter, the VM's qemu) is named with its package;
# the longest name that is a prefix of a module gives its layer ("engines" holds each engine itself).
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "ledger",
        "shared",
        "runlock",
        "target",
        "protocols",
        "mountinfo",
        "cgroups",
        "cgexec",
        "handle",
        "route",
        "engines.vm.guest_agent",
        "ldd",
        "ports",
    ),
    ("device", "devmapper", "filesystem", "cell_cgroup", "remote", "dockerd", "network", "image", "runtimes"),
    ("image_archive", "image_source", "engines.vm.qemu", "engines.vm.guest"),
    ("docker_api", "engines.kubernetes.kube_api", "engines.swarm.swarm_api", "engines.docker_host.host_api"),
    ("placement", "fleet", "engines.vm.guest_servers", "calibrate"),
    ("engines",),
    ("build", "cleanup", "capabilities", "environment", "clients", "__init__"),
    ("pool",),
)


def _layer(module: str) -> int:
    parts = (module.removeprefix("layerbench.stack").lstrip(".") or "__init__").split(".")
    for n in range(len(parts), 0, -1):
        found = [i for i, names in enumerate(LAYERS) if ".".join(parts[:n]) in names]
        if found:
            return found[0]
    raise AssertionError(f"{module} is in none of test_seam.LAYERS: give it its layer")


def upward(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The imports in stack/ from a module to one of a higher layer."""
    return sorted((m, t) for m, ts in graph.items() for t in ts if _layer(t) > _layer(m))


def figures(src: Path = SRC) -> dict[str, object]:
    graph = import_graph(src / "stack")
    return {
        "engine and runtime names outside stack/engines/ and spec/engines/": len(engine_name_literals(src)),
        "import cycles in stack/ (modules in each)": [len(c) for c in cycles(graph)],
        "imports in stack/ pointing up its layers": [f"{m} -> {t}" for m, t in upward(graph)],
        "imports from stack/ of a layer above it": sorted(
            f"{_module_of(p)} -> {t}"
            for p in (src / "stack").rglob("*.py")
            for t in _imports_of(p)
            if t.split(".")[1] in ABOVE_STACK
        ),
    }


# Packages above stack/ in `cli → report → analysis → store → workloads, stack → proc, spec, errors`.
ABOVE_STACK = frozenset({"cli", "report", "analysis", "store", "profiling", "pipeline", "session", "trial", "host"})


def _imports_of(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("layerbench."):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("layerbench.")}
    return found


if __name__ == "__main__":  # the figures of issue 30's item 3, for a tree: python tests/unit/test_seam.py [SRC]
    import json
    import sys

    print(json.dumps(figures(Path(sys.argv[1]) if len(sys.argv) > 1 else SRC), indent=1))
