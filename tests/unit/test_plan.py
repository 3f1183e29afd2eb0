"""The container-count planner (seed 000, sec. 6.3) on a real stored run: 1, 2 and 3 PostgreSQL containers.

tests/data/plan/scaling.db is a real run of tests/data/plan/capture.yaml on the development machine (see its
README): the numbers below are that run's, read back through the store as `layerbench plan` reads them.
"""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from layerbench.analysis.plan import (
    BEST_UNDER_P99,
    CHEAPEST,
    PEAK_EACH,
    PEAK_ONE_HOST,
    SATURATE_BANDWIDTH,
    SATURATE_EACH,
    Curve,
    Proposal,
    Target,
    curves_of,
    estimate,
    plan,
    recommended,
)
from layerbench.analysis.plan_check import check, proposal_file, spec_for
from layerbench.analysis.scaling import ScalePoint, points_of_run
from layerbench.cli.app import app
from layerbench.errors import SpecError
from layerbench.report.plan import plan_json, plan_lines
from layerbench.spec import load as spec_load
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.matrix import expand_stacks
from layerbench.spec.models import Cell
from layerbench.store.db import Store
from layerbench.store.read import RunData, load

CAPTURED = Path(__file__).parent.parent / "data" / "plan" / "scaling.db"
CHECKED = CAPTURED.parent / "check.db"  # a real run of check.yaml, which plan --emit-spec wrote from scaling.db
STORAGE = "zram/ext4/docker:overlay2/volume/postgres(20000rec)"
# What the run measured: aggregate ops/s and merged p99 (µs) at 1, 2, 3 containers. Two cores run the servers and
# their clients: the CPU saturated at one container, the device (zram) stayed under 6% busy, throughput fell.
MEANS = [10776, 7634, 6350]
P99S = [3985, 6563, 14127]
PEAK = 1
SATURATION = 3  # the device never saturated: the largest measured count stands in


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy: opening a store may set its journal mode, and the captured file must stay as committed."""
    copy = tmp_path_factory.mktemp("plan") / "scaling.db"
    shutil.copyfile(CAPTURED, copy)
    return copy


@pytest.fixture(scope="module")
def data(db: Path) -> RunData:
    return load(Store.open(db, create=False), "latest")


@pytest.fixture(scope="module")
def curve(data: RunData) -> Curve:
    (only,) = curves_of(data)
    return only


def test_a_stored_run_gives_one_curve_per_stack_and_workload(curve: Curve) -> None:
    assert (curve.host, curve.storage, curve.workload) == ("vm", STORAGE, "A")
    assert curve.counts == [1, 2, 3]
    assert [round(p.throughput.mean) for p in curve.scaling.points] == MEANS
    assert [round(p.p99_us) for p in curve.scaling.points] == P99S
    assert curve.scaling.peak == PEAK


def test_an_alias_names_the_host(data: RunData) -> None:
    (c,) = curves_of(data, "small")
    assert c.label == f"small: {STORAGE} · A"


def test_the_papers_four_strategies_from_the_measured_points(curve: Curve) -> None:
    p = plan([curve], hosts=2)
    by = {x.strategy: x for x in p.proposals}
    assert list(by) == [SATURATE_BANDWIDTH, PEAK_ONE_HOST, SATURATE_EACH, PEAK_EACH]
    assert by[PEAK_ONE_HOST].counts == (PEAK,) and by[PEAK_EACH].counts == (PEAK, PEAK)
    assert round(by[PEAK_EACH].throughput) == round(2 * curve.scaling.points[PEAK - 1].throughput.mean)
    assert by[SATURATE_BANDWIDTH].counts == (SATURATION,) and by[SATURATE_EACH].counts == (SATURATION, SATURATION)
    assert all(x.meets_target is None for x in p.proposals)  # no target: nothing to meet
    assert recommended(p) is by[PEAK_EACH]
    assert any("share nothing" in c for c in p.caveats) and any("every host of its kind" in c for c in p.caveats)
    never, noisy = by[SATURATE_BANDWIDTH].notes
    # The run took no bandwidth for zram (no BW profile): saturation unknown, %util no stand-in for it.
    assert never.startswith("the run took no bandwidth for the device") and "(%util, at most 5%" in never
    assert never.endswith("CPU saturated first, at 1: it, not the device, limits this host")
    assert noisy.startswith("the curve is noisy (±392% at 3 over 2 trials): the predictions are rough")
    assert by[PEAK_EACH].notes == ("the trials cannot tell the peak at 1 from 2, 3", noisy)


def test_one_host_has_no_per_host_strategies(curve: Curve) -> None:
    assert [x.strategy for x in plan([curve], hosts=1).proposals] == [SATURATE_BANDWIDTH, PEAK_ONE_HOST]


def test_between_measured_counts_the_line_beyond_them_nothing(curve: Curve) -> None:
    sc = curve.scaling
    one, _, three = sc.points
    gapped = replace(sc, points=[one, three])  # as if 2 had not been measured
    e = estimate(gapped, 2)
    assert e is not None and e.basis == (1, 3) and not e.measured
    assert e.throughput == pytest.approx((one.throughput.mean + three.throughput.mean) / 2)
    assert math.isnan(e.p99_us) and math.isnan(e.p99_high_us)  # a tail is not interpolated: not predicted
    assert round(e.throughput) == 8563  # 2 measured 7634
    stretched = replace(sc, points=[one, replace(three, instances=4)])  # off the midpoint: a third of the way
    assert [round(estimate(stretched, n).throughput) for n in (2, 3)] == [9300, 7825]
    assert estimate(sc, 4) is None and estimate(sc, 0) is None
    assert estimate(sc, 2) is not None and estimate(sc, 2).measured


def test_the_cheapest_assignment_reaching_a_target(curve: Curve) -> None:
    # 12,000 ops/s: two containers on two hosts (2 x 10776) beat two on one (7634), and one alone falls short.
    # By the means only: this run's intervals reach from 0 (±392% over two trials), so (1,1) may meet the
    # target, said with its interval, and is not recommended (issue 29: the README starred it).
    p = plan([curve], hosts=3, target=Target(ops=12_000))
    (cheapest,) = [x for x in p.proposals if x.strategy == CHEAPEST]
    assert cheapest.counts == (1, 1) and round(cheapest.throughput) == 21551
    assert cheapest.meets_target is False and cheapest.may_meet and cheapest.verdict == "may meet"
    assert cheapest.ci[0] < 12_000 and "not its interval" in cheapest.why
    assert recommended(p) is None and p.unreachable == ()
    table = plan_lines(p)
    assert not any(line.startswith("★") for line in table)
    # The same curve with its intervals as tight as its means: the interval supports the target, it meets it.
    tight = replace(curve, scaling=replace(curve.scaling, points=[_tight(pt) for pt in curve.scaling.points]))
    p = plan([tight], hosts=3, target=Target(ops=12_000))
    (met,) = [x for x in p.proposals if x.strategy == CHEAPEST]
    assert met.counts == (1, 1) and met.meets_target and recommended(p) is met
    # 30,000 needs the third host.
    (three,) = [x for x in plan([curve], hosts=3, target=Target(ops=30_000)).proposals if x.strategy == CHEAPEST]
    assert three.counts == (1, 1, 1) and round(three.throughput) == 32327


def _tight(pt: ScalePoint) -> ScalePoint:
    t = pt.throughput
    return replace(pt, throughput=replace(t, ci_low=0.99 * t.mean, ci_high=1.01 * t.mean))


def test_a_target_beyond_what_was_measured_is_said_to_be_out_of_reach(curve: Curve) -> None:
    p = plan([curve], hosts=2, target=Target(ops=1e9))
    assert [x.strategy for x in p.proposals if x.strategy == CHEAPEST] == []
    (why,) = p.unreachable
    best = max(pt.throughput.mean for pt in curve.scaling.points)
    assert "1,000,000,000 ops/s cannot be reached within what was measured" in why
    assert f"2 hosts give at most {2 * best:,.0f} ops/s" in why and "(1 container each; measured 1 to 3)" in why
    assert "21,551" in why
    assert all(x.meets_target is False for x in p.proposals)
    assert recommended(p) is None


def test_a_p99_ceiling_keeps_the_counts_under_it(curve: Curve) -> None:
    points = curve.scaling.points
    ceiling = (points[0].p99_us + points[1].p99_us) / 2  # between 1's p99 and 2's
    p = plan([curve], hosts=2, target=Target(p99_us=ceiling))
    (best,) = [x for x in p.proposals if x.strategy == BEST_UNDER_P99]
    assert best.counts == (1, 1) and best.p99_us <= ceiling
    below_all = plan([curve], hosts=2, target=Target(p99_us=1.0))
    (why,) = below_all.unreachable
    assert "no measured count keeps p99 under 0.001 ms" in why


def test_plan_json_is_strict_and_complete(curve: Curve) -> None:
    out = plan_json(plan([curve], hosts=2, target=Target(ops=12_000)))
    text = json.dumps(out, allow_nan=False)  # NaN would break strict parsers
    back = json.loads(text)
    assert back["schema"] == "layerbench.plan/1" and back["hosts_per_curve"] == 2
    assert set(back) == {"schema", "target", "hosts_per_curve", "curves", "proposals", "recommended", "unreachable",
                         "caveats"}  # fmt: skip
    first = back["proposals"][0]
    assert set(first) >= {"strategy", "assignment", "hosts", "containers", "throughput", "p99_us", "meets_target"}
    assert set(first["hosts"][0]) == {"host", "instances", "throughput", "ci_low", "ci_high", "p99_us",
                                      "measured_counts", "interpolated"}  # fmt: skip
    assert [pt["instances"] for pt in back["curves"][0]["points"]] == [1, 2, 3]


def test_the_emitted_spec_rebuilds_the_measured_cells(data: RunData, curve: Curve) -> None:
    peak_each = next(x for x in plan([curve], hosts=2).proposals if x.strategy == PEAK_EACH)
    exp = spec_load.validate(spec_for(peak_each, "check"), "emitted")
    # Each host's count, and both hosts' containers together on one host (what sharing a machine does)
    stacks = {s.instances: s for s in expand_stacks(exp)}
    assert sorted(stacks) == [PEAK, 2 * PEAK]
    for count, stack in stacks.items():
        measured = next(c for c in data.cells if c.stack.instances == count)
        assert Cell(stack=stack, workload=exp.workloads[0]).id == measured.cell_id  # the very cell the run measured
    assert "every host's together" in exp.description
    assert exp.trials.repetitions == data.trials_rule.repetitions


def test_a_check_sets_measured_beside_predicted(data: RunData, curve: Curve) -> None:
    """Predict 2 containers from 1 and 3 alone, then check against what 2 measured: the line overshot by 12%."""
    one, _, three = curve.scaling.points
    gapped = replace(curve, scaling=replace(curve.scaling, points=[one, three]))
    at_two = estimate(gapped.scaling, 2)
    assert at_two is not None
    guess = Proposal(CHEAPEST, gapped, (at_two, at_two), "test")
    result = check(proposal_file(guess, "check.yaml")["proposal"], points_of_run(data), data.run.id)
    assert [h.instances for h in result.hosts] == [2, 2] and all(h.interpolated for h in result.hosts)
    assert round(result.measured) == 2 * MEANS[1] + 1  # 2 x 7634.28
    assert round(result.error_pct, 1) == -10.8  # (7634 - 8563) / 8563
    assert math.isnan(result.p99_error_pct)  # no p99 was predicted between measured counts
    missing = proposal_file(replace(guess, hosts=(at_two, replace(at_two, instances=4))), "x")["proposal"]
    with pytest.raises(SpecError, match="has no 4-container cell"):
        check(missing, points_of_run(data), data.run.id)


def test_plan_command_emits_a_spec_and_plan_check_reads_it(tmp_path: Path, db: Path) -> None:
    runner = CliRunner()
    spec = tmp_path / "check.yaml"
    shown = runner.invoke(app, ["plan", "--db", str(db), "--hosts", "2", "--emit-spec", str(spec)])
    assert shown.exit_code == 0, shown.output
    assert "peak-each ★" in shown.output and f"({PEAK},{PEAK})" in shown.output
    assert yaml.safe_load(spec.read_text())["stacks"][0]["instances"] == [PEAK, 2 * PEAK]
    proposal = tmp_path / "check.yaml.proposal.json"
    checked = runner.invoke(app, ["plan-check", "--db", str(db), "--proposal", str(proposal), "--json"])
    assert checked.exit_code == 0, checked.output
    result = json.loads(checked.output)
    assert result["throughput"]["error_pct"] == 0.0  # measured points predict themselves
    # The run measured 2 containers too: both hosts' on one 2-core host give far less than the sum predicted
    together = result["together"]
    assert together["instances"] == 2 and round(together["throughput"]["measured"]) == MEANS[1]
    assert round(together["throughput"]["error_pct"]) == round(100 * (MEANS[1] - 2 * MEANS[0]) / (2 * MEANS[0]))
    # This capture is from before an instance's client was timed: no spread, nothing judged
    assert together["clients"] == {"start_spread_ms": None, "apart_trials": 0, "judged_trials": 0}
    shown = runner.invoke(app, ["plan-check", "--db", str(db), "--proposal", str(proposal)])
    assert "together on one host" in shown.output and "of the sum measured apart" in " ".join(shown.output.split())
    wrong = runner.invoke(app, ["plan", "--db", str(db), "--strategy", "peak-each", "--emit-spec", str(spec)])
    assert wrong.exit_code == 2 and "this plan has none" in wrong.output


def test_a_run_without_an_instances_axis_names_the_presets_that_have_one(tmp_path: Path, full_caps: HostCaps) -> None:
    from tests.unit.test_advice import stored_run

    _, db = stored_run(tmp_path, full_caps, rounds=2)  # file workloads: no servers, no instance counts
    result = CliRunner().invoke(app, ["plan", "--db", str(db)])
    said = " ".join(result.output.split())  # Rich wraps the message at the terminal's width
    assert result.exit_code == 2
    assert "has no cells that differ only in instances" in said and "(db-scaling, xu-cassandra)" in said


def test_nodes_of_one_machine_are_said_to_share_it(curve: Curve) -> None:
    assert curve.origin is not None
    on = [replace(curve, host=n, origin=replace(curve.origin, machine="box", node=n)) for n in ("node1", "node2")]
    (shared,) = [c for c in plan(on, hosts=2).caveats if c.startswith("Nodes node1, node2 ran on one machine (box)")]
    assert "the shared-nothing assumption does not hold there" in shared
    apart = [replace(on[1], origin=replace(curve.origin, machine="other", node="node2"))]
    assert not any(c.startswith("Nodes") for c in plan([on[0], *apart], hosts=2).caveats)


def test_a_check_run_judges_each_count_s_clients_and_measures_the_hosts_together(tmp_path: Path) -> None:
    """tests/data/plan/check.db: the spec `plan --hosts 2 --strategy peak-each --emit-spec` wrote from scaling.db,
    run (1 container, and 2: both hosts' together, each with its client timed from YCSB's logs)."""
    db = tmp_path / "check.db"
    shutil.copyfile(CHECKED, db)
    proposal = CHECKED.parent / "check.yaml.proposal.json"
    done = CliRunner().invoke(app, ["plan-check", "--db", str(db), "--proposal", str(proposal), "--json"])
    assert done.exit_code == 0, done.output
    result = json.loads(done.output)
    with sqlite3.connect(db) as conn:
        per_trial = conn.execute(
            "SELECT s.value, ch.status FROM samples s JOIN checks ch ON ch.trial_id = s.trial_id "
            "WHERE s.metric = 'start_spread_ms' AND ch.name = 'clients-in-step'"
        ).fetchall()
    assert len(per_trial) == 2  # the two rounds of 2 containers; one container has one client: nothing to time
    together = result["together"]
    assert together["instances"] == 2
    assert together["clients"] == {
        "start_spread_ms": max(v for v, _ in per_trial),
        "apart_trials": sum(st == "flag" for _, st in per_trial),
        "judged_trials": 2,
    }
    assert [h["clients"]["judged_trials"] for h in result["hosts"]] == [0, 0]
    # Both containers on this 2-core host gave less than one measured alone, twice
    assert together["throughput"]["measured"] < result["throughput"]["measured"]
    shown = CliRunner().invoke(app, ["plan-check", "--db", str(db), "--proposal", str(proposal)])
    assert "of the sum measured apart" in " ".join(shown.output.split())
