"""No wait without a deadline, checked by reading the code (issue 28): every place in src/, tests/, tools/ and
bench/ that blocks on a process, a thread or a loop is found from the syntax tree and must either pass a
timeout or be one of the bounded kinds below. A new wait that fits neither fails here, naming its line.

Bounded without a timeout argument:
- reaping a process this code just killed (SIGKILL, or its group): the kernel ends it at once;
- `assert p.poll() is None, p.communicate()`: the message is read only when the process has already exited;
- the waits in ALLOWED, each with why it is bounded;
- a `while` loop whose body sleeps or polls only if it also reads a deadline (its source names one).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TREES = ("src", "tests", "tools", "bench")
RUNNERS = {"run", "check_output", "check_call", "call"}
BLOCKERS = {"wait", "communicate"}
KILLS = re.compile(r"\bkill\(|killpg|_kill_group|SIGKILL|kill_if_same")
SLEEPS = re.compile(r"time\.sleep\(|\.wait\(|select\(|poll\(")
DEADLINE = re.compile(r"deadline|monotonic\(\)|timeout|limit|_S\b|wait_for", re.I)

# (file, enclosing function) -> why the wait there is bounded without a timeout of its own.
ALLOWED: dict[tuple[str, str], str] = {
    ("src/layerbench/run/measure/monitor.py", "__exit__"): "the sampler thread checks its stop event every interval",
    ("src/layerbench/run/nodes.py", "run_all"): "child runs of --parallel-nodes: as long as the user's run, which "
    "has its own trials' deadlines; the relays end when the children's pipes close",
    ("src/layerbench/proc.py", "_collect_all"): "each thread's communicate() has the caller's timeout",
    (
        "src/layerbench/stack/engines/kubernetes/kube_api.py",
        "_pump",
    ): "reads an exec stream until the process ends; the trial's deadline kills the process",
    ("tests/unit/test_sqlitefile.py", "test_concurrent_opens_of_one_database_file_all_succeed"): "eight threads "
    "that each open a file once; the per-test timeout bounds them",
    (
        "src/layerbench/run/measure/monitor.py",
        "_loop",
    ): "samples until its stop event is set (Event.wait(interval) each time)",
    ("tools/localcluster/provisioner.py", "main"): "the provisioner is a server: it runs until the cluster stops it",
    ("tools/localcluster/swarm.py", "up"): "Docker's API call, under the SDK client's own timeout",
}


class Source:
    """A file's lines, split once: ast.get_source_segment splits the whole file at every call."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()

    def of(self, node: ast.AST, most: int = 10**9) -> str:
        first, last = node.lineno - 1, min(node.end_lineno or node.lineno, node.lineno + most - 1)
        chunk = self.lines[first:last]
        if not chunk:
            return ""
        if last == node.end_lineno:
            chunk[-1] = chunk[-1][: node.end_col_offset]
        chunk[0] = chunk[0][node.col_offset :]
        return "\n".join(chunk)


def waits(path: Path) -> Iterator[tuple[int, str, str]]:
    """(line, enclosing function, what) for each wait in one file with no timeout of its own."""
    text = path.read_text()
    tree, src = ast.parse(text), Source(text)
    for func, node, parent_src in _calls(tree, src):
        what = _unbounded(node, src, parent_src)
        if what:
            yield node.lineno, func, what
    for func, loop in _loops(tree):
        seg = src.of(loop)
        if SLEEPS.search(seg) and not DEADLINE.search(seg):
            yield loop.lineno, func, "a waiting loop that reads no deadline"


def _calls(tree: ast.AST, src: Source) -> Iterator[tuple[str, ast.Call, str]]:
    # Walk statements so each call knows its function and the statements just before it (a kill there
    # makes a reap bounded).
    def visit(node: ast.AST, func: str, before: str) -> Iterator[tuple[str, ast.Call, str]]:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            func = node.name
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                seen = [before]
                for stmt in block:
                    yield from visit(stmt, func, "\n".join(seen[-3:]))
                    seen.append(_head(stmt, src))
        if isinstance(node, ast.stmt):
            for call in _own_calls(node):
                yield func, call, before + "\n" + _head(node, src)

    yield from visit(tree, "<module>", "")


def _head(stmt: ast.stmt, src: Source) -> str:
    """A statement's own text, at most its first lines (a kill is in the statement just before a reap)."""
    return src.of(stmt, most=4)


def _own_calls(stmt: ast.stmt) -> Iterator[ast.Call]:
    """Calls in a statement, not in the statements nested in its blocks (those are visited on their own)."""
    nested = {id(s) for f in ("body", "orelse", "finalbody", "handlers") for s in getattr(stmt, f, []) or []}
    todo: list[ast.AST] = [stmt]
    while todo:
        node = todo.pop()
        for child in ast.iter_child_nodes(node):
            if id(child) in nested or isinstance(child, ast.excepthandler):
                continue
            if isinstance(child, ast.Call):
                yield child
            todo.append(child)


def _unbounded(call: ast.Call, src: Source, context: str) -> str:
    if not isinstance(call.func, ast.Attribute) or any(k.arg == "timeout" for k in call.keywords):
        return ""
    name, base = call.func.attr, src.of(call.func.value)
    if name in RUNNERS and base == "subprocess":
        return f"subprocess.{name} without a timeout"
    if name in BLOCKERS and not call.args:
        if KILLS.search(context) or re.search(rf"{re.escape(base)}\.poll\(\) is None, {re.escape(base)}", context):
            return ""
        return f"{base}.{name}() without a timeout"
    if name == "join" and not call.args and "thread" in base.lower() + context.lower():
        return f"{base}.join() without a timeout"
    return ""


def _loops(tree: ast.AST) -> Iterator[tuple[str, ast.While]]:
    for func in ast.walk(tree):
        if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(func):
                if isinstance(node, ast.While):
                    yield func.name, node


def test_every_wait_has_a_deadline() -> None:
    found = []
    for tree in TREES:
        for path in sorted((ROOT / tree).rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            found += [
                f"{rel}:{line} in {func}: {what}" for line, func, what in waits(path) if (rel, func) not in ALLOWED
            ]
    assert not found, "waits with no deadline:\n" + "\n".join(found)


def test_the_check_finds_each_kind_of_unbounded_wait(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import subprocess, threading, time\n"
        "def f(p, t):\n"
        "    subprocess.run(['true'])\n"
        "    p.wait()\n"
        "    thread = threading.Thread(target=print); thread.start(); thread.join()\n"
        "    while not p.done():\n"
        "        time.sleep(1)\n"
    )
    assert [what for _, _, what in waits(bad)] == [
        "subprocess.run without a timeout",
        "p.wait() without a timeout",
        "thread.join() without a timeout",
        "a waiting loop that reads no deadline",
    ]


def test_the_check_accepts_bounded_waits(tmp_path: Path) -> None:
    good = tmp_path / "good.py"
    good.write_text(
        "import os, signal, subprocess, time\n"
        "def f(p):\n"
        "    subprocess.run(['true'], timeout=5)\n"
        "    assert p.poll() is None, p.communicate()\n"
        "    try:\n"
        "        p.wait(timeout=5)\n"
        "    finally:\n"
        "        os.kill(p.pid, signal.SIGKILL)\n"
        "        p.wait()\n"
        "    deadline = time.monotonic() + 5\n"
        "    while not p.done() and time.monotonic() < deadline:\n"
        "        time.sleep(1)\n"
    )
    assert list(waits(good)) == []
