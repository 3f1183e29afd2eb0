"""The whole package's layers, measured: imports point one way through them, and no module imports itself
back at load time (issue 52). The order, bottom first, is DESIGN.md's data flow:

    core (errors, proc, records/, core/) < spec/ < workloads/, stack/, profiling/ < run/ < store/ < analysis/
    < report/ < serve/ < api < cli/

Every import counts for the order, a function's own and a type checker's too: a lazy import still makes the
lower layer depend on the higher. For cycles only what runs when a module loads counts (its top level, not
under ``if TYPE_CHECKING``): an import inside a function is how a module defers a heavy one, not a cycle.
Within stack/, which every engine builds on, a finer order holds too (``STACK_LAYERS``), and there no import
may form a cycle at all. ``python tests/unit/test_layers.py [SRC]`` prints the figures for a tree."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "layerbench"

# Each layer's top-level names under layerbench/ (a package or a module); a new one takes its place here.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core", ("errors", "proc", "records", "core")),
    ("spec", ("spec",)),
    ("workloads and stack", ("workloads", "stack", "profiling")),
    ("run", ("run",)),
    ("store", ("store",)),
    ("analysis", ("analysis",)),
    ("report", ("report",)),
    ("serve", ("serve",)),
    ("api", ("api", "__init__")),
    ("cli", ("cli",)),
)


def layer_of(module: str) -> int:
    """``module`` without the ``layerbench.`` prefix (``run.loop``, ``api``, ``__init__``)."""
    head = module.split(".")[0]
    for i, (_, names) in enumerate(LAYERS):
        if head in names:
            return i
    raise AssertionError(f"layerbench.{head} is in no layer of test_layers.LAYERS: give it its place")


def module_name(path: Path, src: Path) -> str:
    rel = path.relative_to(src).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" and len(rel.parts) > 1 else rel.parts
    return ".".join(parts)


def _targets(node: ast.stmt, modules: set[str]) -> list[str]:
    """The layerbench modules one import statement names (``from layerbench import proc`` names ``proc``)."""
    if isinstance(node, ast.Import):
        return [a.name.removeprefix("layerbench.") for a in node.names if a.name.startswith("layerbench.")]
    if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
        return []
    if node.module == "layerbench":
        return [a.name for a in node.names if a.name in modules] or ["__init__"]
    if not node.module.startswith("layerbench."):
        return []
    base = node.module.removeprefix("layerbench.")
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]


def _type_checking(node: ast.stmt) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


def _load_time(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements that run when a module loads: its top level, into if/try blocks but not TYPE_CHECKING."""
    found: list[ast.stmt] = []
    for node in body:
        if isinstance(node, ast.If) and not _type_checking(node):
            found += _load_time(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            found += _load_time(node.body + node.orelse + node.finalbody)
        elif not _type_checking(node):
            found.append(node)
    return found


def import_graphs(src: Path = SRC) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Every module's imports of layerbench modules: (all of them, those that run at load time)."""
    trees = {module_name(p, src): ast.parse(p.read_text(), str(p)) for p in sorted(src.rglob("*.py"))}
    modules = set(trees)
    every: dict[str, set[str]] = {}
    at_load: dict[str, set[str]] = {}
    for name, tree in trees.items():
        nodes = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
        every[name] = {t for n in nodes for t in _targets(n, modules)} - {name}
        at_load[name] = {t for n in _load_time(tree.body) for t in _targets(n, modules) if t in modules} - {name}
    return every, at_load


def against_the_order(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"layerbench.{m} ({LAYERS[layer_of(m)][0]}) imports layerbench.{t} ({LAYERS[layer_of(t)][0]})"
        for m, targets in graph.items()
        for t in targets
        if layer_of(t) > layer_of(m)
    )


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected sets of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, children = work[-1]
            child = next((c for c in children if c in graph), None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    members = stack[stack.index(node) :]
                    del stack[stack.index(node) :]
                    if len(members) > 1:
                        found.append(sorted(members))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in stack:
                low[node] = min(low[node], index[child])
    return found


def top_level_modules(src: Path = SRC) -> list[str]:
    return sorted(p.name for p in src.glob("*.py"))


def test_no_import_goes_against_the_layers() -> None:
    every, _ = import_graphs()
    found = against_the_order(every)
    assert not found, f"{len(found)} imports against the layers' order (move the code down, or hand it in):\n" + (
        "\n".join(found)
    )


def test_no_module_imports_itself_back_at_load_time() -> None:
    _, at_load = import_graphs()
    found = [" -> ".join(one_cycle(at_load, c)) for c in cycles(at_load)]
    assert not found, f"{len(found)} import cycles at load time:\n" + "\n".join(found)


def test_the_top_level_holds_the_public_api_and_little_else() -> None:
    assert top_level_modules() == ["__init__.py", "api.py", "errors.py", "proc.py"]


def test_the_checks_see_an_import_against_the_order_and_a_cycle(tmp_path: Path) -> None:
    """The same scan on a small tree: a store module importing the CLI, a lazy import of the analysis from the
    run stage, and two modules of spec/ importing each other at load time (but not under TYPE_CHECKING)."""
    files = {
        "store/db.py": "from layerbench.cli import app\n",
        "run/loop.py": "def f():\n    from layerbench.analysis import stats\n",
        "spec/a.py": "from layerbench.spec import b\n",
        "spec/b.py": "from layerbench.spec.a import X\n",
        "spec/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from layerbench.spec import d\n",
        "spec/d.py": "from layerbench.spec import c\n",
        "cli/app.py": "",
        "analysis/stats.py": "",
    }
    for rel, code in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(textwrap.dedent(code))
    every, at_load = import_graphs(tmp_path)
    assert against_the_order(every) == [
        "layerbench.run.loop (run) imports layerbench.analysis.stats (analysis)",
        "layerbench.store.db (store) imports layerbench.cli.app (cli)",
    ]
    assert cycles(at_load) == [["spec.a", "spec.b"]]


# stack/'s own layers, finer than the package's: what its engines build on comes first. Every import counts
# here, and importing a module from outside its package runs the package's __init__ first, so it depends on
# that package too (every engine, through stack/engines/__init__).
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
    assert not found, "imports pointing up stack/'s layers (test_layers.STACK_LAYERS):\n" + "\n".join(found)


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


# stack/'s layers, bottom first (docs/architecture.md): an import from a module to one of a higher layer
# points up. A new module of stack/ takes its place here.
# A module of an engine's package below its engine (its adapter, the VM's qemu) is named with its package;
# the longest name that is a prefix of a module gives its layer ("engines" holds each engine itself).
STACK_LAYERS: tuple[tuple[str, ...], ...] = (
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
        found = [i for i, names in enumerate(STACK_LAYERS) if ".".join(parts[:n]) in names]
        if found:
            return found[0]
    raise AssertionError(f"{module} is in none of test_layers.STACK_LAYERS: give it its layer")


def upward(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The imports in stack/ from a module to one of a higher layer."""
    return sorted((m, t) for m, ts in graph.items() for t in ts if _layer(t) > _layer(m))


if __name__ == "__main__":
    import json
    import sys

    src = Path(sys.argv[1]) if len(sys.argv) > 1 else SRC
    every, at_load = import_graphs(src)
    figures = {
        "top-level modules": top_level_modules(src),
        "imports against the layers": against_the_order(every),
        "load-time cycles": cycles(at_load),
        "import cycles in stack/": cycles(import_graph(src / "stack")),
        "imports in stack/ pointing up its layers": [f"{m} -> {t}" for m, t in upward(import_graph(src / "stack"))],
    }
    print(json.dumps(figures, indent=1))
