"""Cells on several nodes at once: one run per node, in parallel, one cell per node at a time.

A spec whose cells name nodes (``engine: {kind: kubernetes, node: ...}``, one entry per node; a
docker-host's node is its daemon's URL) is split by node; each part becomes a run of its own
(``layerbench run SPEC --node NAME``, a child process), so results, the environment and resumption are
per node, and ``compare`` works across nodes as across runs. Within a part, cells run one after
another, as in any run. A baseline on another node is not carried into a part: compare the runs
instead. A node's name is used as it is (an argument, a line prefix, the run's ``node``), never in a
file name: a URL's ':' and '/' need no escaping.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from layerbench.spec.matrix import Matrix
from layerbench.spec.models import Cell
from layerbench.spec.traits import traits

THIS_HOST = "this host"


def split(matrix: Matrix) -> dict[str, Matrix]:
    """The matrix by node (cells without one: this host's), baselines kept only within a part."""
    parts: dict[str, list[Cell]] = {}
    for cell in matrix.cells:
        parts.setdefault(cell.stack.engine.node or THIS_HOST, []).append(cell)
    found = {}
    for node, cells in parts.items():
        ids = {c.id for c in cells}
        baselines = {c.id: _within(matrix.baseline_of.get(c.id), ids) for c in cells}
        found[node] = Matrix(cells, [], baselines)
    return found


def _within(baseline: str | None, ids: set[str]) -> str | None:
    return baseline if baseline in ids else None


def only(matrix: Matrix, node: str) -> Matrix:
    """One node's part (refusals kept, so the run still says what was refused)."""
    part = split(matrix).get(node)
    if part is None:
        return Matrix([], matrix.refused, {})
    return Matrix(part.cells, matrix.refused, part.baseline_of)


def on_this_machine(matrix: Matrix, local: dict[str, bool]) -> list[str]:
    """The parts that would run on this very machine: its own cells, every Swarm node (their daemons are
    this host's), Kubernetes nodes whose boot id is this host's and Docker hosts found to be this machine
    (``local``: node name or daemon URL → local)."""
    found = []
    for node, part in split(matrix).items():
        here = any(traits(c.stack.engine.kind).node_here for c in part.cells)
        if node == THIS_HOST or here or local.get(node, False):
            found.append(node)
    return found


def docker_hosts(matrix: Matrix) -> list[str]:
    """The daemons of the matrix's docker-host cells (their URLs, with any TLS files: EngineSpec.daemon)."""
    engines = {e for c in matrix.cells for e in c.stack.node_engines()}
    return sorted(e.daemon for e in engines if traits(e.kind).daemon_url and e.daemon)


@dataclass(frozen=True)
class Child:
    node: str
    argv: list[str]


def children(matrix: Matrix, argv: Sequence[str]) -> list[Child]:
    """A `layerbench run ... --node NAME` per node (``argv``: this run's own arguments, without
    --parallel-nodes)."""
    return [Child(node, [sys.executable, "-m", "layerbench.cli", *argv, "--node", node]) for node in split(matrix)]


def run_all(kids: list[Child], say: Callable[[str], None]) -> int:
    """Start every child, pass its lines on prefixed with its node, wait for all; the worst exit code."""
    procs = [(k, subprocess.Popen(k.argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)) for k in kids]
    lock = threading.Lock()

    def relay(node: str, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            with lock:
                say(f"[{node}] {line.rstrip()}")

    threads = [threading.Thread(target=relay, args=(k.node, p.stdout), daemon=True) for k, p in procs]
    for t in threads:
        t.start()
    codes = [p.wait() for _, p in procs]
    for t in threads:
        t.join()
    return max(codes, default=0)
