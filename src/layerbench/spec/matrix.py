"""Expand an experiment into cells, refusing the impossible ones with a reason.

Each ``stacks:`` entry is a partial stack; a field given as a list is an axis,
and the entry expands to the product of its axes. Fields left out take the
experiment's defaults (device) or the natural choice for the engine
(placement: raw for no filesystem, host-dir natively, writable-layer in a container).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from layerbench.errors import SpecError
from layerbench.spec.engines import HOST_ENGINE
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.load import spec_error
from layerbench.spec.models import Cell, EngineSpec, Experiment, StackSpec, Workload
from layerbench.spec.rules import (
    client_ready,
    emulation_refused,
    pairs,
    profile_refused,
    why_not,
    workload_fits,
)
from layerbench.spec.space import Files, overflowing
from layerbench.spec.traits import TRAITS

STACK_FIELDS = (
    "device",
    "filesystem",
    "engine",
    "placement",
    "limits",
    "server",
    "instances",
    "profile",
    "tuning",
    "clients",
)


@dataclass(frozen=True)
class Refusal:
    cell: Cell
    reason: str


@dataclass(frozen=True)
class Matrix:
    cells: list[Cell]
    refused: list[Refusal]
    baseline_of: dict[str, str | None]  # cell id → its baseline cell id

    def stacks(self) -> list[StackSpec]:
        return list(dict.fromkeys(c.stack for c in self.cells))


def expand_stacks(exp: Experiment) -> list[StackSpec]:
    stacks: list[StackSpec] = []
    for i, entry in enumerate(exp.stacks):
        for combo in _product(entry):
            stacks.append(_stack(exp, combo, f"stacks[{i}]."))
    return list(dict.fromkeys(stacks))


def expand(
    exp: Experiment,
    caps: HostCaps,
    rule: Callable[[StackSpec, HostCaps], str | None] = why_not,
    files: Files | None = None,
    usable_share: float = 0.9,
    reads: Callable[[StackSpec, Workload], str | None] | None = None,
) -> Matrix:
    """Cells and the refused, with why; with ``files`` (what each workload keeps on the filesystem),
    also the cells whose files would not fit on their device; with ``reads`` (a reading of what a workload
    asks that needs a tool: a user's job file, read by fio), the cells it refuses."""
    check_baseline(exp)
    cells, refused = [], []
    unsized: dict[str, StackSpec] = {}  # cell id -> the spec's stack, before its workload sized its server
    workloads = expand_workloads(exp)
    for stack in expand_stacks(exp):
        stack_reason = (
            rule(stack, caps)
            or emulation_refused(stack, caps, exp.emulation)
            or profile_refused(stack, caps, exp.profile)
        )
        for w in workloads:
            if not pairs(stack, w):
                continue
            cell = Cell(stack=w.sized(stack), workload=w)
            unsized[cell.id] = stack
            sized = cell.stack
            reason = stack_reason or workload_fits(sized, w) or client_ready(w, caps) or (reads and reads(sized, w))
            (refused.append(Refusal(cell, reason)) if reason else cells.append(cell))
    full = overflowing(cells, files, usable_share) if files else {}
    refused += [Refusal(c, full[c.id]) for c in cells if c.id in full]
    cells = [c for c in cells if c.id not in full]
    return Matrix(cells, refused, _baselines(exp, cells, unsized))


def expand_workloads(exp: Experiment) -> list[Workload]:
    """Each workload, or one per combination of its ``sweep`` values (bs <= size, as IOzone)."""
    out: list[Workload] = []
    for w in exp.workloads:
        out += swept(w, f"spec {exp.name!r}") if w.sweep_axes() else [w]
    return out


def swept(w: Workload, where: str, context: dict[str, Any] | None = None) -> list[Workload]:
    """One workload per combination of ``w``'s sweep values, named after its point; a combination its type
    does not keep (fio: bs > size) is skipped."""
    axes = w.sweep_axes()
    assert axes
    keys = list(axes)
    out = []
    for values in itertools.product(*(axes[k] for k in keys)):
        fields = dict(zip(keys, values, strict=True))
        name = w.name + "".join(f"-{k}{_compact(v)}" for k, v in fields.items())
        data = {**w.model_dump(exclude={"sweep"}), **fields, "name": name[:40]}
        try:
            point = type(w).model_validate(data, context=context)
        except ValidationError as exc:
            raise spec_error(exc, where, prefix=f"workloads[{w.name}].sweep.") from None
        if point.kept_in_sweep():
            out.append(point)
    return out


@dataclass(frozen=True)
class SweepPoint:
    """Where a workload sits in its spec's sweep: the workload it came from and each swept field's value."""

    origin: str  # the spec's workload name ("read" for "read-size4M-bs4k")
    values: dict[str, Any]  # swept field → its value here (bytes for sizes); empty for a workload not swept


SweepPoints = dict[str, tuple[Workload, SweepPoint]]  # a swept workload's name → it and its point


def sweep_points(spec_workloads: Sequence[Workload], context: dict[str, Any] | None = None) -> SweepPoints:
    """Every point the spec's sweeps expand into, with the workload it came from and its swept values."""
    out: SweepPoints = {}
    for s in spec_workloads:
        axes = s.sweep_axes()
        if axes:
            for p in swept(s, f"workload {s.name!r}", context):
                out[p.name] = (p, SweepPoint(s.name, {k: getattr(p, k) for k in axes}))
    return out


def sweep_point(w: Workload, points: SweepPoints) -> SweepPoint:
    """``w``'s place in its sweep, found by the expansion it is part of, never read back from its name."""
    found = points.get(w.name)
    return found[1] if found is not None and found[0] == w else SweepPoint(w.name, {})


def _compact(value: Any) -> str:
    return str(value).replace(" ", "").replace(".", "_")


def _product(entry: dict[str, Any]) -> list[dict[str, Any]]:
    keys = [k for k in STACK_FIELDS if entry.get(k) is not None]
    options = [entry[k] if isinstance(entry[k], list) else [entry[k]] for k in keys]
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*options)]


def _stack(exp: Experiment, combo: dict[str, Any], where: str) -> StackSpec:
    data: dict[str, Any] = {"device": exp.device, "filesystem": "none", "engine": HOST_ENGINE, **combo}
    if isinstance(data["device"], dict):
        data["device"] = {**exp.device.model_dump(), **data["device"]}
    if "placement" not in combo:
        data["placement"] = _default_placement(data)
    try:
        return StackSpec.model_validate(data)
    except ValidationError as exc:
        raise spec_error(exc, f"spec {exp.name!r}", prefix=where) from None


def _default_placement(data: dict[str, Any]) -> str:
    fs = data["filesystem"]
    fs_type = fs if isinstance(fs, str) else fs.get("type", "none")
    engine = data["engine"]
    engine_kind = engine.partition(":")[0] if isinstance(engine, str) else engine.get("kind")
    if fs_type == "none":
        return "raw"
    engine = TRAITS.get(engine_kind or EngineSpec().kind)  # an unknown kind: the validation says so next
    return engine.default_placement if engine else "writable-layer"


def _baselines(exp: Experiment, cells: list[Cell], unsized: dict[str, StackSpec]) -> dict[str, str | None]:
    """Each cell's baseline: the same workload on the baseline stack.

    ``baseline: {..., same: [filesystem]}`` makes one baseline per filesystem (the
    named fields taken from the cell itself): Docker on xfs against native xfs,
    Docker on ext4 against native ext4, as seed 004's ratio table compares.
    Stacks are matched as the spec wrote them (``unsized``), before a workload sized their server.
    """
    by_key = {(unsized[c.id], c.workload.name): c.id for c in cells}
    stacks = set(by_key_stack for by_key_stack, _ in by_key)
    base_of = {s: _baseline_stack(exp, s, stacks) for s in stacks}  # per stack, not per cell: sweeps repeat them
    out: dict[str, str | None] = {}
    for c in cells:
        base = base_of[unsized[c.id]]
        out[c.id] = by_key.get((base, c.workload.name)) if base else None
    return out


def check_baseline(exp: Experiment) -> None:
    """A baseline that names no stack of the experiment would leave every ratio out, silently: refuse it."""
    if exp.baseline is None:
        return
    stacks = expand_stacks(exp)
    every = set(stacks)
    if not any(_baseline_stack(exp, s, every) for s in stacks):
        raise SpecError(
            f"baseline {exp.baseline} is none of this experiment's stacks",
            hint="a baseline names a stack's fields as a stacks entry does; fields left out take their defaults "
            "(filesystem: none, engine: native), so name the filesystem too",
        )


def _baseline_stack(exp: Experiment, stack: StackSpec, stacks: set[StackSpec]) -> StackSpec | None:
    if exp.baseline is None:
        first = expand_stacks(exp)[0]
        return first if first in stacks else None
    fields = {k: v for k, v in exp.baseline.items() if k != "same"}
    for name in exp.baseline.get("same", []):
        if name not in STACK_FIELDS:
            raise SpecError(f"baseline.same: {name!r} is not a stack field; allowed: {', '.join(STACK_FIELDS)}")
        value = getattr(stack, name)
        fields[name] = value.model_dump() if isinstance(value, BaseModel) else value
    want = _stack(exp, fields, "baseline.")
    return want if want in stacks else None
