"""How many database containers to put on which host: seed 000's container assignment (sec. 6.3).

The paper measured aggregate throughput against the number of Cassandra
containers on one server, saw it peak (at four) where the disk saturated
(later, at six), and compared four ways of placing containers on two servers:
(1) one server filled until its disk bandwidth saturates, (2) one server
filled to its throughput peak, (3) each server filled to saturation, (4) each
server at its peak, the (4,4) that gained 51%. This module makes those four
proposals, and the cheapest one meeting a target, from measured scaling
curves, without running anything:

- a curve is one `Scaling` (a stack and a workload over instance counts)
  with the host it was measured on (its name, or the user's alias) and its
  storage (the stack's label without the instance count);
- a host's throughput at a count is the measured point, or the straight line
  between the two measured counts around it; its p99 is measured only: between
  counts a tail is not a straight line, so none is predicted there; nothing
  outside the measured counts is predicted, and a target beyond them is said
  to be out of reach;
- a proposal's aggregate is the sum of its hosts' predictions and its p99 the
  worst host's, which holds only when hosts share nothing (caveats say so, and
  a plan whose curves ran on one machine's nodes says it does not hold there);
- a proposal *meets* a target only when what the interval supports does: the
  sum of its hosts' lower bounds reaches the rate and the worst trial's p99
  stays under the ceiling; where only the means do, it *may meet* it, shown
  with its interval and never recommended.

Pure: curves in, proposals out; `curves_of` reads a loaded run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from layerbench.analysis.scaling import ScalePoint, Scaling, of_run
from layerbench.analysis.strategies import (
    BEST_UNDER_P99,
    CHEAPEST,
    PEAK_EACH,
    PEAK_ONE_HOST,
    SATURATE_BANDWIDTH,
    SATURATE_EACH,
)
from layerbench.spec.models import StackSpec, Workload
from layerbench.store.read import RunData

ROUGH_PCT = 25.0  # a measured point's CI half-width beyond which predictions from its curve are called rough

CAVEATS = (
    "Hosts are assumed to share nothing: each host's containers use only that host's CPU, memory and device. "
    "Storage or a network the hosts share (one NVMf target, one switch) makes the aggregate lower than the sum.",
    "A curve measured on one host stands for every host of its kind: same CPU, memory, device and kernel.",
    "Throughput between two measured counts is interpolated linearly, p99 not at all (a count with a p99 "
    "ceiling must have been measured); nothing beyond the largest measured count (or below the smallest) is "
    "predicted.",
    "The p99 is each host's own (its clients' operations merged); a proposal gives its worst host's.",
)


@dataclass(frozen=True)
class Origin:
    """What an emitted spec needs to rerun a curve's stack: the run's spec and host as stored."""

    run_id: str
    stack: StackSpec  # at one instance
    workload: Workload
    most: int  # the run's largest instance count: what its resource profiles divided by
    resources: dict[str, Any]  # the run spec's `resources:` (None values: the host's own)
    host_cpus: float
    host_memory: int
    repetitions: int
    machine: str = ""  # the hostname of the machine the run ran on (a node of a cluster may be one of several)
    node: str | None = None  # the cluster node or daemon the curve's cells ran on, if any


@dataclass(frozen=True)
class Curve:
    host: str  # the run's host name, or the user's alias for it
    storage: str  # the stack without its instance count
    workload: str
    scaling: Scaling
    origin: Origin | None = None

    @property
    def label(self) -> str:
        return f"{self.host}: {self.storage} · {self.workload}"

    @property
    def counts(self) -> list[int]:
        return [p.instances for p in self.scaling.points]


@dataclass(frozen=True)
class Estimate:
    """One host's prediction at ``instances``: a measured point, or the line between two (``basis``)."""

    instances: int
    throughput: float  # mean aggregate ops/s of the host's containers
    ci_low: float
    ci_high: float
    p99_us: float  # measured counts only: NaN between them
    basis: tuple[int, ...]  # the measured counts it came from: one, or the two around it
    p99_high_us: float = math.nan  # the worst trial's p99: what a ceiling must hold for

    @property
    def measured(self) -> bool:
        return len(self.basis) == 1


@dataclass(frozen=True)
class Target:
    """What the user asks for: an aggregate rate, a p99 ceiling, both, or neither (the most throughput)."""

    ops: float | None = None
    p99_us: float | None = None

    @property
    def is_max(self) -> bool:
        return self.ops is None and self.p99_us is None

    def met_by(self, throughput: float, p99_us: float) -> bool | None:
        """None when there is no target to meet; ``throughput`` and ``p99_us`` as the caller bounds them
        (lower bound and worst trial to *meet*, means to *may meet*)."""
        if self.is_max:
            return None
        rate_ok = self.ops is None or throughput >= self.ops
        tail_ok = self.p99_us is None or (not math.isnan(p99_us) and p99_us <= self.p99_us)
        return rate_ok and tail_ok

    def describe(self) -> str:
        parts = [f"{self.ops:,.0f} ops/s" if self.ops is not None else ""]
        parts.append(f"p99 ≤ {self.p99_us / 1000:g} ms on every host" if self.p99_us is not None else "")
        return " with ".join(p for p in parts if p) or "the most aggregate throughput"


@dataclass(frozen=True)
class Proposal:
    strategy: str
    curve: Curve
    hosts: tuple[Estimate, ...]  # one per host it uses, in order
    why: str  # how the counts were chosen, in the paper's terms
    notes: tuple[str, ...] = ()
    meets_target: bool | None = None  # what the interval supports meets it; None: no target
    may_meet: bool = False  # not met by the interval, but by the means: shown with its interval, never recommended

    @property
    def counts(self) -> tuple[int, ...]:
        return tuple(e.instances for e in self.hosts)

    @property
    def containers(self) -> int:
        return sum(self.counts)

    @property
    def throughput(self) -> float:
        return sum(e.throughput for e in self.hosts)

    @property
    def ci(self) -> tuple[float, float]:
        """The hosts' intervals added: wider than a joint interval, never narrower."""
        return sum(e.ci_low for e in self.hosts), sum(e.ci_high for e in self.hosts)

    @property
    def p99_us(self) -> float:
        tails = [e.p99_us for e in self.hosts]
        return math.nan if any(math.isnan(t) for t in tails) else max(tails)

    @property
    def p99_high_us(self) -> float:
        """The worst trial's p99 over its hosts: the bound a ceiling is met by."""
        tails = [e.p99_high_us for e in self.hosts]
        return math.nan if any(math.isnan(t) for t in tails) else max(tails)

    @property
    def verdict(self) -> str:
        """ "meets", "may meet", "does not meet", or "" without a target."""
        if self.meets_target is None:
            return ""
        return "meets" if self.meets_target else ("may meet" if self.may_meet else "does not meet")

    @property
    def name(self) -> str:
        """The paper's notation: (4,4) for four containers on each of two hosts."""
        return f"({','.join(map(str, self.counts))})"


@dataclass(frozen=True)
class Plan:
    target: Target
    hosts: int  # hosts available per curve
    curves: tuple[Curve, ...]
    proposals: tuple[Proposal, ...]
    unreachable: tuple[str, ...] = ()  # targets no assignment within the measured counts meets, and why
    caveats: tuple[str, ...] = field(default=CAVEATS)


def recommended(p: Plan) -> Proposal | None:
    """The proposal to act on: the cheapest meeting a rate target, else the most throughput among those meeting
    the target (all of them when there is none); None when nothing meets it. A proposal that only may meet it
    (its means do, its interval does not) is never the one to act on."""
    ok = [x for x in p.proposals if x.meets_target is not False]
    cheapest = [x for x in ok if x.strategy == CHEAPEST]
    if cheapest:
        return min(cheapest, key=lambda x: (x.containers, len(x.hosts), -x.throughput))
    return max(ok, key=lambda x: (x.throughput, -x.containers)) if ok else None


def curves_of(data: RunData, host: str | None = None) -> list[Curve]:
    """The scaling curves of a loaded run over instance counts, labelled with ``host`` or the host name the run
    recorded. A curve over clients (a stack's ``clients``) is no plan of containers: 4 clients of one server are
    one container, so those are left out."""
    name = host or str(data.run.host.get("hostname") or "host")
    over = [sc for sc in of_run(data) if sc.counted == "instance"]
    return [Curve(name, sc.group, sc.workload, sc, _origin(data, sc)) for sc in over]


def _origin(data: RunData, sc: Scaling) -> Origin:
    cell = next(c for c in data.cells if c.cell_id == sc.points[0].cell_id)
    servers = [c.stack.instances for c in data.cells if c.stack.server is not None]
    return Origin(
        run_id=data.run.id,
        stack=cell.stack.model_copy(update={"instances": 1}),
        workload=cell.cell.workload,
        most=max(servers),
        resources=dict(data.run.spec.get("resources") or {}),
        host_cpus=float(data.run.host.get("cpus") or 0),
        host_memory=int(data.run.host.get("memory_bytes") or 0),
        repetitions=data.trials_rule.repetitions,
        machine=str(data.run.host.get("hostname") or ""),
        node=cell.stack.engine.node,
    )


def estimate(sc: Scaling, instances: int) -> Estimate | None:
    """The prediction at ``instances`` containers on one host; None outside the measured counts."""
    points = sc.points
    if not points[0].instances <= instances <= points[-1].instances:
        return None
    for p in points:
        if p.instances == instances:
            return _measured(p)
    hi = next(i for i, p in enumerate(points) if p.instances > instances)
    a, b = points[hi - 1], points[hi]
    w = (instances - a.instances) / (b.instances - a.instances)

    def between(x: float, y: float) -> float:
        return x + w * (y - x)

    ta, tb = a.throughput, b.throughput
    return Estimate(
        instances,
        between(ta.mean, tb.mean),
        between(max(0.0, ta.ci_low), max(0.0, tb.ci_low)),
        between(ta.ci_high, tb.ci_high),
        math.nan,  # a tail is no straight line between two loads: not interpolated
        (a.instances, b.instances),
    )


def _measured(p: ScalePoint) -> Estimate:
    t = p.throughput
    # Two noisy trials give a t-interval reaching below zero; no host serves negative operations.
    low = max(0.0, t.ci_low) if t.n >= 2 else 0.0  # one trial: no interval, so nothing is supported
    return Estimate(p.instances, t.mean, low, t.ci_high, p.p99_us, (p.instances,), p.p99_high_us)


def plan(curves: Sequence[Curve], hosts: int = 1, target: Target = Target()) -> Plan:
    """The paper's strategies for each curve on up to ``hosts`` hosts of its kind, and the cheapest
    assignment meeting ``target`` (or, with only a p99 ceiling, the most throughput under it)."""
    if hosts < 1:
        raise ValueError("hosts must be at least 1")
    proposals: list[Proposal] = []
    unreachable: list[str] = []
    caveats = CAVEATS + _shared_machines(curves)
    for curve in curves:
        proposals += [_judged(p, target) for p in _paper_strategies(curve, hosts)]
        if target.is_max:
            continue
        found = _for_target(curve, hosts, target)
        if isinstance(found, str):
            unreachable.append(found)
        else:
            proposals.append(_judged(found, target))
    return Plan(target, hosts, tuple(curves), tuple(proposals), tuple(unreachable), caveats)


def _judged(p: Proposal, target: Target) -> Proposal:
    """Meets only on what the interval supports; may meet where only the means do."""
    meets = target.met_by(p.ci[0], p.p99_high_us)
    may = bool(not meets and target.met_by(p.throughput, p.p99_us))
    return Proposal(p.strategy, p.curve, p.hosts, p.why, p.notes, meets, may)


def _shared_machines(curves: Sequence[Curve]) -> tuple[str, ...]:
    """Where curves of different nodes ran on one machine, its nodes share its CPU, memory and device."""
    nodes: dict[str, set[str]] = {}
    for c in curves:
        if c.origin is not None and c.origin.node and c.origin.machine:
            nodes.setdefault(c.origin.machine, set()).add(c.origin.node)
    return tuple(
        f"Nodes {', '.join(sorted(ns))} ran on one machine ({machine}): they share its CPU, memory and device, so "
        "the shared-nothing assumption does not hold there and their aggregate is lower than the sum (the one "
        "prediction checked on the local cluster, two pods on one 2-core machine, was off by -59%)"
        for machine, ns in sorted(nodes.items())
        if len(ns) > 1
    )


def _paper_strategies(curve: Curve, hosts: int) -> list[Proposal]:
    sc = curve.scaling
    saturation, saturation_note = _saturation(curve)
    peak_note = _peak_note(sc)
    rough = _rough(sc)
    saturation_note, peak_note = saturation_note + rough, peak_note + rough
    at_saturation = _measured_at(sc, saturation)
    at_peak = _measured_at(sc, sc.peak)
    why_sat = f"containers added until the device's bandwidth saturated (≥90% of its bytes/s): {saturation}"
    why_peak = f"containers added until aggregate throughput peaked: {sc.peak}"
    out = [
        Proposal(SATURATE_BANDWIDTH, curve, (at_saturation,), f"one host; {why_sat}", saturation_note),
        Proposal(PEAK_ONE_HOST, curve, (at_peak,), f"one host; {why_peak}", peak_note),
    ]
    if hosts > 1:
        each = f"each of {hosts} hosts"
        out.append(Proposal(SATURATE_EACH, curve, (at_saturation,) * hosts, f"{each}; {why_sat}", saturation_note))
        out.append(Proposal(PEAK_EACH, curve, (at_peak,) * hosts, f"{each}; {why_peak}", peak_note))
    return out


def _measured_at(sc: Scaling, instances: int) -> Estimate:
    return _measured(next(p for p in sc.points if p.instances == instances))


def _saturation(curve: Curve) -> tuple[int, tuple[str, ...]]:
    """The count where the device first saturated, or the largest measured, saying so."""
    sc = curve.scaling
    if "device" in sc.saturated:
        return sc.saturated["device"], ()
    top = sc.points[-1]
    shares = [p.usage.bandwidth for p in sc.points if not math.isnan(p.usage.bandwidth)]
    if shares:
        seen = f"at most {max(shares):.0f}% of its bandwidth, up to {top.instances} containers"
        note = f"the device never saturated ({seen}): the largest measured count stands in; measure more to find it"
    else:
        note = (
            f"the run took no bandwidth for the device (profile BW or ALL measures it, resources: gives it), so "
            f"whether it saturated is unknown (%util, at most {max(p.usage.disk_util for p in sc.points):.0f}%, "
            "is no measure of bandwidth): the largest measured count stands in"
        )
    if sc.bottleneck is not None:  # the paper's disk-bound reasoning does not hold where something else ran out
        first = min(sc.saturated.values())
        note += f"; {sc.bottleneck} saturated first, at {first}: it, not the device, limits this host"
    return top.instances, (note,)


def _rough(sc: Scaling) -> tuple[str, ...]:
    """Wide intervals make every prediction from the curve rough: say so with the widest."""
    widths = [(p.throughput.ci_halfwidth_pct, p.instances) for p in sc.points if p.throughput.n >= 2]
    worst = max(((w, n) for w, n in widths if not math.isnan(w)), default=None)
    if worst is None:
        return ("one trial per count: no interval; predictions are single measurements",)
    if worst[0] <= ROUGH_PCT:
        return ()
    trials = min(p.throughput.n for p in sc.points)
    return (
        f"the curve is noisy (±{worst[0]:.0f}% at {worst[1]} over {trials} trials): the predictions are rough; "
        "measure more rounds (trials.repetitions) on a quieter host",
    )


def _peak_note(sc: Scaling) -> tuple[str, ...]:
    notes = []
    if sc.ties:
        notes.append(f"the trials cannot tell the peak at {sc.peak} from {', '.join(map(str, sc.ties))}")
    if sc.peak == sc.points[-1].instances:
        notes.append(f"throughput still rose at the largest measured count ({sc.peak}): the peak may lie beyond")
    return tuple(notes)


def _allowed(curve: Curve, target: Target, bound: bool) -> dict[int, Estimate]:
    """Every count from the smallest to the largest measured whose host p99 is under the ceiling: its worst
    trial's (``bound``: to meet it) or its merged one (to may meet it); only measured counts have a p99."""
    counts = range(curve.counts[0], curve.counts[-1] + 1)
    out = {}
    for n in counts:
        e = estimate(curve.scaling, n)
        tail = (e.p99_high_us if bound else e.p99_us) if e is not None else math.nan
        if e is not None and (target.p99_us is None or tail <= target.p99_us):
            out[n] = e
    return out


def _for_target(curve: Curve, hosts: int, target: Target) -> Proposal | str:
    """The target's proposal, or why none within the measured counts meets it: the cheapest that the interval
    supports, else the cheapest the means reach (which may meet it: said with its interval)."""
    for bound in (True, False):
        allowed = _allowed(curve, target, bound)
        if not allowed:
            continue
        if target.ops is None:
            return _best_under_p99(curve, hosts, target, allowed)
        counts = _fewest_containers(allowed, hosts, target.ops, bound)
        if counts is None:
            continue
        chosen = tuple(allowed[n] for n in sorted(counts, reverse=True))
        used = f"{len(chosen)} host{'s' if len(chosen) > 1 else ''}"
        reach = "whose predicted interval reaches" if bound else "whose predicted mean (not its interval) reaches"
        why = f"the fewest containers ({sum(counts)}, on {used}) {reach} {target.describe()}"
        return Proposal(CHEAPEST, curve, chosen, why, _interpolated_note(chosen))
    allowed = _allowed(curve, target, False)
    if not allowed:
        return _no_count_under(curve, target)
    return _out_of_reach(curve, hosts, target, allowed)


def _best_under_p99(curve: Curve, hosts: int, target: Target, allowed: dict[int, Estimate]) -> Proposal:
    # Hosts of one kind are alike: the most throughput under the ceiling is every host at the best allowed count.
    best = max(allowed.values(), key=lambda e: (e.throughput, -e.instances))
    why = f"each of {hosts} hosts at the count giving the most throughput with {target.describe()}: {best.instances}"
    return Proposal(BEST_UNDER_P99, curve, (best,) * hosts, why, _interpolated_note((best,)))


def _interpolated_note(chosen: Sequence[Estimate]) -> tuple[str, ...]:
    return tuple(
        sorted(
            {
                f"{e.instances} containers were not measured: interpolated between {e.basis[0]} and {e.basis[1]}"
                for e in chosen
                if not e.measured
            }
        )
    )


def _fewest_containers(allowed: dict[int, Estimate], hosts: int, ops: float, bound: bool = False) -> list[int] | None:
    """The counts (one per host used) with the fewest containers in all, then the fewest hosts, whose summed
    throughput (their lower bounds where ``bound``) reaches ``ops``; None if no assignment does.

    best[h][c] is the most throughput h hosts give with c containers in all; one host more adds one allowed
    count. Vectorised over c: 64 hosts x 64 counts is a few thousand array operations, not 16M Python steps.
    """
    counts = sorted(allowed)
    most = hosts * counts[-1]
    best = np.full((hosts + 1, most + 1), -np.inf)
    best[0, 0] = 0.0
    choice = np.zeros((hosts + 1, most + 1), dtype=int)
    for h in range(1, hosts + 1):
        for n in counts:
            shifted = np.full(most + 1, -np.inf)
            gives = allowed[n].ci_low if bound else allowed[n].throughput
            shifted[n:] = best[h - 1, : most + 1 - n] + gives
            better = shifted > best[h]
            best[h][better] = shifted[better]
            choice[h][better] = n
    # Fewest containers first, then fewest hosts: a host is the dearer thing only once containers tie.
    for c in range(1, most + 1):
        for h in range(1, hosts + 1):
            if best[h, c] >= ops:
                return _walk_back(choice, h, c)
    return None


def _walk_back(choice: np.ndarray, h: int, c: int) -> list[int]:
    out = []
    while h > 0:
        n = int(choice[h, c])
        out.append(n)
        h, c = h - 1, c - n
    return out


def _out_of_reach(curve: Curve, hosts: int, target: Target, allowed: dict[int, Estimate]) -> str:
    best = max(allowed.values(), key=lambda e: e.throughput)
    under = f" with p99 ≤ {target.p99_us / 1000:g} ms" if target.p99_us is not None else ""
    return (
        f"{curve.label}: {target.ops:,.0f} ops/s cannot be reached within what was measured: {hosts} "
        f"host{'s' if hosts > 1 else ''} give at most {hosts * best.throughput:,.0f} ops/s{under} "
        f"({best.instances} container{'s' if best.instances > 1 else ''} each; measured {curve.counts[0]} to "
        f"{curve.counts[-1]}); "
        "add hosts (--hosts), or measure more instance counts"
    )


def _no_count_under(curve: Curve, target: Target) -> str:
    known = [p for p in curve.scaling.points if not math.isnan(p.p99_us)]
    if not known:
        return f"{curve.label}: no p99 was measured, so no count can be shown to stay under the ceiling"
    low = min(known, key=lambda p: p.p99_us)
    assert target.p99_us is not None  # only a ceiling can rule out every count
    return (
        f"{curve.label}: no measured count keeps p99 under {target.p99_us / 1000:g} ms "
        f"(the lowest: {low.p99_us / 1000:.3g} ms at {low.instances} container{'s' if low.instances > 1 else ''})"
    )
