"""A plan's proposal kept in a file, the spec that measures it, and its prediction against that measurement.

A prediction is only worth what it would have guessed: `spec_for` writes the
proposal's per-host counts as cells of the curve's own stack and workload, and
`check` sets what that run measured beside what the plan predicted. Each
count is measured on one host; the aggregate measured is the sum of the
hosts' counts measured there, so the check tests the curves and the
interpolation. Where a proposal has several hosts, the spec also measures all
their containers together on one host, each instance's client started with the
others and judged by clients-in-step: against the aggregate predicted, that
says what sharing one machine (nodes of a local cluster) costs the sum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from layerbench.analysis.plan import Estimate, Proposal
from layerbench.analysis.scaling import ScalePoint
from layerbench.errors import SpecError
from layerbench.spec.databases import PROFILE_RESOURCES

PROPOSAL_SCHEMA = "layerbench.proposal/1"
TOGETHER = "together on one host"


def estimate_record(e: Estimate, host: str) -> dict[str, Any]:
    return {
        "host": host,
        "instances": e.instances,
        "throughput": _finite(e.throughput),
        "ci_low": _finite(e.ci_low),
        "ci_high": _finite(e.ci_high),
        "p99_us": _finite(e.p99_us),
        "measured_counts": list(e.basis),
        "interpolated": not e.measured,
    }


def proposal_record(p: Proposal) -> dict[str, Any]:
    """A proposal as JSON-ready values (NaN as null): in `plan --json` and in the proposal file."""
    low, high = p.ci
    hosts = [estimate_record(e, f"{p.curve.host}#{i + 1}") for i, e in enumerate(p.hosts)]
    return {
        "strategy": p.strategy,
        "assignment": p.name,
        "host": p.curve.host,
        "storage": p.curve.storage,
        "workload": p.curve.workload,
        "run": p.curve.origin.run_id if p.curve.origin else None,
        "containers": p.containers,
        "hosts": hosts,
        "throughput": _finite(p.throughput),
        "ci_low": _finite(low),
        "ci_high": _finite(high),
        "p99_us": _finite(p.p99_us),
        "meets_target": p.meets_target,
        "may_meet": p.may_meet,
        "why": p.why,
        "notes": list(p.notes),
    }


def _finite(x: float) -> float | None:
    return None if math.isnan(x) else x


def spec_for(p: Proposal, name: str) -> dict[str, Any]:
    """A spec (as YAML-ready data) that measures each of the proposal's per-host counts on one host of its
    kind: the curve's stack and workload, its run's repetitions, and its resource profile's per-container
    share kept (a profile divides by the spec's largest count, which here may differ from the curve's run)."""
    origin = p.curve.origin
    if origin is None:
        raise SpecError(f"{p.curve.label}: this curve does not say which stack it was measured on")
    # Several hosts: their containers all together on one host too, which says what sharing a machine does to
    # the shared-nothing sum the plan predicts (nodes of one machine are that case).
    together = {p.containers} if len(p.hosts) > 1 else set()
    counts = sorted(set(p.counts) | together)
    # Defaults left out, for a spec a person reads; each kind kept, since it picks the model that reads the rest.
    stack = {**origin.stack.model_dump(mode="json", exclude={"instances"}, exclude_defaults=True)}
    stack["instances"] = counts if len(counts) > 1 else counts[0]
    workload = {"kind": origin.workload.kind, **origin.workload.model_dump(mode="json", exclude_defaults=True)}
    out: dict[str, Any] = {
        "name": name,
        "description": (
            f"Checks layerbench plan's {p.strategy} {p.name} for {p.curve.label} (run {origin.run_id}): "
            f"measures {', '.join(map(str, counts))} containers on one host"
            + (f" ({p.containers}: every host's together)" if together else "")
            + "; `layerbench plan-check` compares."
        ),
        "stacks": [stack],
        "workloads": [workload],
        "trials": {"repetitions": origin.repetitions},
    }
    resources = _resources(p, max(counts))
    if resources:
        out["resources"] = resources
    if "bandwidth" in PROFILE_RESOURCES[origin.stack.profile] and not {"read_bps", "write_bps"} <= set(resources):
        # The device's bandwidth is measured at run time and divided by the new largest count.
        out["description"] += (
            " Its profile divides the device's bandwidth as measured now by this spec's largest count, not the"
            " curve's: give resources.read_bps and write_bps to keep each container's share."
        )
    return out


def _resources(p: Proposal, most: int) -> dict[str, Any]:
    """The run's `resources:`, scaled by the new largest count over the old so each container's share stays."""
    origin = p.curve.origin
    assert origin is not None
    given = {k: v for k, v in origin.resources.items() if v is not None}
    if not PROFILE_RESOURCES[origin.stack.profile] or most == origin.most:
        return given
    scale = most / origin.most
    out = {k: int(v * scale) for k, v in given.items() if k in ("read_bps", "write_bps")}
    out["cpus"] = round(float(given.get("cpus") or origin.host_cpus) * scale, 3)
    out["memory"] = int(int(given.get("memory") or origin.host_memory) * scale)
    return out


def proposal_file(p: Proposal, spec_path: str) -> dict[str, Any]:
    return {"schema": PROPOSAL_SCHEMA, "spec": spec_path, "proposal": proposal_record(p)}


@dataclass(frozen=True)
class HostCheck:
    host: str
    instances: int
    predicted: float
    measured: float
    predicted_p99_us: float
    measured_p99_us: float
    interpolated: bool
    trials: int
    start_spread_ms: float = math.nan  # the measured count's clients: the widest start spread over its trials
    apart: int = 0  # its trials whose clients-in-step check flagged them (started or finished apart)
    judged: int = 0  # its trials that check judged (several clients: instances, or clients per instance)

    @property
    def error_pct(self) -> float:
        return _error(self.predicted, self.measured)

    @property
    def p99_error_pct(self) -> float:
        return _error(self.predicted_p99_us, self.measured_p99_us)


@dataclass(frozen=True)
class Check:
    strategy: str
    assignment: str
    label: str
    hosts: tuple[HostCheck, ...]
    predicted: float
    predicted_p99_us: float
    # Every host's containers at once on one host, against the aggregate predicted (None: one host, or a run
    # that did not measure that count): what sharing one machine costs the shared-nothing sum.
    together: HostCheck | None = None

    @property
    def measured(self) -> float:
        return sum(h.measured for h in self.hosts)

    @property
    def measured_p99_us(self) -> float:
        return max(h.measured_p99_us for h in self.hosts)

    @property
    def error_pct(self) -> float:
        return _error(self.predicted, self.measured)

    @property
    def p99_error_pct(self) -> float:
        return _error(self.predicted_p99_us, self.measured_p99_us)


def _error(predicted: float, measured: float) -> float:
    """How far the measurement fell from the prediction, in % of the prediction (negative: below it)."""
    if math.isnan(predicted) or math.isnan(measured) or predicted == 0:
        return math.nan
    return 100 * (measured - predicted) / predicted


def read_proposal(data: Any, source: str) -> dict[str, Any]:
    """The proposal of a proposal file's parsed JSON, or a SpecError naming what is wrong with it."""
    if not isinstance(data, dict) or data.get("schema") != PROPOSAL_SCHEMA:
        raise SpecError(f"{source} is not a layerbench proposal (no \"schema\": \"{PROPOSAL_SCHEMA}\")",
                        hint="write one with layerbench plan --emit-spec FILE")  # fmt: skip
    p = data.get("proposal")
    needed = ("strategy", "assignment", "host", "storage", "workload", "hosts", "throughput", "p99_us")
    missing = [k for k in needed if not isinstance(p, dict) or k not in p]
    if missing:
        raise SpecError(f"{source}: its proposal lacks {', '.join(missing)}")
    return p


def check(
    proposal: dict[str, Any],
    points: dict[tuple[str, str], list[ScalePoint]],
    run_id: str,
    in_step: dict[str, list[str]] | None = None,
) -> Check:
    """The proposal's predictions against a run's points (``scaling.points_of_run``) of the same stack and
    workload, with each cell's clients-in-step verdicts (``in_step``: cell id → "pass" or "flag" per trial);
    a SpecError when the run did not measure one of its counts."""
    key = (proposal["storage"], proposal["workload"])
    measured = {p.instances: p for p in points.get(key, [])}
    rows = []
    for h in proposal["hosts"]:
        point = measured.get(h["instances"])
        if point is None:
            raise SpecError(
                f"run {run_id} has no {h['instances']}-container cell of {key[0]} · {key[1]}",
                hint="run the spec that plan --emit-spec wrote, and check against that run",
            )
        rows.append(_host_check(h, point, (in_step or {}).get(point.cell_id, [])))
    total = sum(r.instances for r in rows)
    together = None
    if len(rows) > 1 and total in measured:
        whole = {"host": TOGETHER, "instances": total, "throughput": proposal["throughput"], "p99_us": None}
        together = _host_check(whole, measured[total], (in_step or {}).get(measured[total].cell_id, []))
    return Check(
        proposal["strategy"],
        proposal["assignment"],
        f"{proposal['host']}: {key[0]} · {key[1]}",
        tuple(rows),
        _number(proposal["throughput"]),
        _number(proposal["p99_us"]),
        together,
    )


def _host_check(h: dict[str, Any], point: ScalePoint, verdicts: list[str]) -> HostCheck:
    return HostCheck(
        h["host"],
        h["instances"],
        _number(h["throughput"]),
        point.throughput.mean,
        _number(h["p99_us"]),
        point.p99_us,
        bool(h.get("interpolated")),
        point.throughput.n,
        point.start_spread_ms,
        verdicts.count("flag"),
        len(verdicts),
    )


def _number(x: float | None) -> float:
    return math.nan if x is None else float(x)
