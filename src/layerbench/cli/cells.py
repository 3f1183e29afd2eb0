"""The cells a run will measure and the ones refused, with reasons, as `run` and `run --dry-run` print them."""

from __future__ import annotations

from rich.markup import escape

from layerbench.cli.options import console
from layerbench.spec.matrix import Matrix
from layerbench.spec.models import StackSpec
from layerbench.workloads import jobfile

PLAN_NAMES_SHOWN = 12


def _names(names: list[str]) -> str:
    """A few names and how many more: a 500-point sweep's names are a screenful nobody reads."""
    if len(names) <= PLAN_NAMES_SHOWN:
        return ", ".join(names)
    return f"{', '.join(names[: PLAN_NAMES_SHOWN - 2])}, ... {names[-1]} ({len(names)} in all)"


def print_plan(matrix: Matrix, header: str | None = None) -> None:
    if header:
        console.print(f"[bold]{header}[/]")
    per_stack: dict[StackSpec, list[str]] = {}
    for c in matrix.cells:  # one pass: a sweep makes thousands of cells
        per_stack.setdefault(c.stack, []).append(c.workload.name)
    n_work = len({c.workload.name for c in matrix.cells})
    shape = f"{len(per_stack)} stacks x {n_work} workloads"
    console.print(f"{len(matrix.cells)} cells ({shape}), {len(matrix.refused)} refused")
    shared = len({tuple(v) for v in per_stack.values()}) == 1
    if shared and per_stack:
        console.print(f"  workloads: {_names(next(iter(per_stack.values())))}")
    for stack, names in per_stack.items():
        console.print(f"  [cyan]{escape(stack.label())}[/]" + ("" if shared else f"  {_names(names)}"))
    _print_given(matrix)
    # A stack's own reason once; a reason some of its workloads have (a job file's) with their names.
    refused: dict[tuple[str, str], list[str]] = {}
    for r in matrix.refused:
        refused.setdefault((r.cell.stack.label(), r.reason), []).append(r.cell.workload.name)
    reasons_of: dict[str, int] = {}
    for label, _ in refused:
        reasons_of[label] = reasons_of.get(label, 0) + 1
    running = {stack.label() for stack in per_stack}
    for (label, reason), names in refused.items():
        which = f" {_names(names)}" if label in running or reasons_of[label] > 1 else ""
        console.print(f"  [red]refused[/] {escape(label)}{escape(which)}: {escape(reason)}")


def _print_given(matrix: Matrix) -> None:
    """Each job file's options the spec gave (size:, runtime_s: ...), and which jobs kept their own: what a
    user reads to know what fio will run, as ``fio --size=... FILE`` would."""
    shown: set[str] = set()
    for c in matrix.cells:
        w = c.workload
        if w.name in shown:
            continue
        shown.add(w.name)
        for given in jobfile.given_of(w):
            console.print(f"  {escape(w.name)}: {escape(given.said())}")
