"""Advice: a recommendation only behind a significant and material difference, each with its evidence."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from layerbench.analysis import advice, findings, overhead
from layerbench.analysis.stats import Ratio
from layerbench.cli.app import app
from layerbench.records.checks import Check
from layerbench.report.terminal import advice_lines
from layerbench.spec.feasibility import HostCaps
from layerbench.store.read import RunData
from tests.unit import test_findings

SPEC = """
name: advice
device: {kind: zram, size: 1GiB}
stacks:
  - {filesystem: none, placement: raw}
  - {filesystem: [ext4, btrfs], engine: native, placement: host-dir}
  - {filesystem: ext4, engine: "docker:overlay2", placement: [volume, writable-layer]}
  - {filesystem: ext4, engine: "docker:overlay2", placement: volume, tuning: seccomp-unconfined}
workloads:
  - {name: RW, rw: randwrite, bs: 4k}
baseline: {filesystem: none, placement: raw}
"""


def cost(stack_label: str) -> float:
    """What each layer costs on RW: btrfs's copy-on-write, overlay2's writable layer, seccomp's filter."""
    if "btrfs" in stack_label:
        return 0.3
    table = {"raw": 1.0, "host-dir": 0.8, "volume": 0.8 * 0.99, "writable-layer": 0.8 * 0.6}
    value = table[stack_label.split("/")[3].split("<")[0]]
    return value * 1.10 if "seccomp-unconfined" in stack_label else value


def stored_run(tmp_path: Path, caps: HostCaps, rounds: int) -> tuple[RunData, Path]:
    data = test_findings.stored_run(tmp_path, caps, rounds, SPEC, lambda stack: cost(stack.label()))
    return data, tmp_path / "r.db"


def advised(data: RunData, results: list[overhead.CellResult] | None = None) -> advice.Advised:
    results = overhead.of_run(data) if results is None else results
    found = findings.of_run(data, results)
    workloads = {c.workload: c.cell.workload for c in data.cells}
    return advice.advise(advice.Evidence(found, {c.stack_label: c.stack for c in data.cells}, results, (), workloads))


def by_topic(a: advice.Advised) -> dict[str, list[advice.Advice]]:
    out: dict[str, list[advice.Advice]] = {}
    for x in a.advice:
        out.setdefault(x.topic, []).append(x)
    return out


def test_each_material_difference_becomes_advice_with_its_evidence(tmp_path: Path, full_caps: HostCaps) -> None:
    data, _ = stored_run(tmp_path, full_caps, rounds=4)
    topics = by_topic(advised(data))
    (placement,) = topics["placement"]
    assert placement.text.startswith("Put write-heavy data on a volume, not the container's writable layer")
    assert "costs 40% on RW" in placement.text and placement.confidence == "high"
    assert any("writable-layer vs" in e and "×0.60" in e for e in placement.evidence)
    assert any("/volume vs" in e for e in placement.evidence)  # the volume beside it, for comparison
    (fs,) = topics["filesystem"]
    assert "prefer ext4" in fs.text and "chattr +C" in fs.text  # btrfs on random writes
    (tuning,) = topics["tuning"]
    assert tuning.text.startswith("seccomp costs 9% of RW here")
    assert "layer" not in topics  # the volume's 1% is significant through the pairing, but not material


def test_one_round_advises_nothing_and_says_so(tmp_path: Path, full_caps: HostCaps) -> None:
    data, _ = stored_run(tmp_path, full_caps, rounds=1)
    a = advised(data)
    assert a.advice == []
    assert len(a.undecided) == 5 and all("one round): no interval, so nothing decided" in u for u in a.undecided)


def test_a_flagged_doubt_lowers_confidence_and_a_trap_is_said_first(tmp_path: Path, full_caps: HostCaps) -> None:
    data, _ = stored_run(tmp_path, full_caps, rounds=4)
    results = overhead.of_run(data)
    writable = next(c.cell_id for c in data.cells if c.stack.placement.kind == "writable-layer")
    trap = Check("faster-than-physics", "flag", "faster than raw beyond its 95% CI")
    marked = [dataclasses.replace(r, flags=(trap,)) if r.cell_id == writable else r for r in results]
    a = advised(data, marked)
    assert a.advice[0].topic == "trap" and "its numbers are a cache's" in a.advice[0].text
    assert by_topic(a)["placement"][0].confidence == "low"


@pytest.mark.parametrize(
    ("ratio", "expected"),
    [
        ((0.6, 0.55, 0.65), "high"),
        ((0.9, 0.85, 0.97), "medium"),
        ((1.5, 1.2, 1.9), "high"),
        ((0.9, 0.7, 1.1), "medium"),
    ],
)
def test_confidence_is_high_only_when_the_whole_interval_clears_the_band(
    ratio: tuple[float, float, float], expected: str
) -> None:
    f = findings.Finding("a", "b", "RW", Ratio(*ratio, 0.001), "slower" if ratio[0] < 1 else "faster", False)
    assert advice.confidence([f]) == expected


def test_advise_command_prints_and_json(tmp_path: Path, full_caps: HostCaps) -> None:
    _, db = stored_run(tmp_path, full_caps, rounds=4)
    shown = CliRunner().invoke(app, ["advise", "latest", "--db", str(db)])
    assert shown.exit_code == 0, shown.output
    assert "1. " in shown.output and "[high confidence]" in shown.output
    as_json = json.loads(CliRunner().invoke(app, ["advise", "--json", "--db", str(db)]).output)
    assert {a["topic"] for a in as_json["advice"]} == {"placement", "filesystem", "tuning"}


def test_a_profile_that_names_the_bridge_turns_a_cost_into_a_remedy(tmp_path: Path, full_caps: HostCaps) -> None:
    from layerbench.analysis.explain import Pair
    from layerbench.analysis.flame import FrameGrowth

    data, _ = stored_run(tmp_path, full_caps, rounds=4)
    results = overhead.of_run(data)
    found = findings.of_run(data, results)
    volume = next(f for f in found if f.subject.endswith("/volume"))
    slower = dataclasses.replace(volume, ratio=Ratio(0.8, 0.75, 0.85, 0.001), verdict="slower")
    bridge = FrameGrowth("container networking", 3, 94, 0.003, 0.094, 1e-9)
    pair = Pair(slower, "s", "r", [bridge], ["container networking: ..."], ["container networking: ..."])
    stacks = {c.stack_label: c.stack for c in data.cells}
    a = advice.advise(advice.Evidence([slower], stacks, results, [pair]))
    (layer,) = by_topic(a)["layer"]
    assert layer.text.endswith("`--network host` (tuning: host-network) takes them out")
    (why,) = by_topic(a)["explanation"]
    assert why.text.startswith(f"Why {slower.subject} is slower than {slower.reference} on RW: container networking")


def test_a_material_difference_the_correction_demoted_is_not_acted_on_nor_resurrected() -> None:
    """advise takes the run's verdicts as judged (corrected over all its comparisons, analysis/verdicts.py):
    a material difference significant only on its own is listed as chance, and stays undecided."""

    def finding(name: str, p: float, ratio: float, verdict: str) -> findings.Finding:
        return findings.Finding(name, "native", "RR", Ratio(ratio, ratio - 0.1, ratio + 0.1, p), verdict, False)

    lone = finding("a", 0.03, 0.8, "undecided")  # one p=0.03 among forty comparisons: chance gives two of those
    strong = finding("b", 1e-6, 0.6, "slower")
    rest = [finding(f"n{i}", 0.5, 1.0, "undecided") for i in range(38)]
    kept, chance = advice.discoveries([lone, strong, *rest])
    assert chance == [lone]
    assert [f.verdict for f in kept[:2]] == ["undecided", "slower"]
    ev = advice.Evidence([lone, strong, *rest], {}, [])
    a = advice.advise(ev)
    assert len(a.chance) == 1 and a.chance[0].startswith("a vs native on RR: ×0.80")
    assert not any(u.startswith("a vs native") for u in a.undecided)  # said once, as chance


def test_a_claim_from_a_cpu_bound_cell_is_at_most_medium_and_says_the_cpu_was_the_limit(
    tmp_path: Path, full_caps: HostCaps
) -> None:
    data, _ = stored_run(tmp_path, full_caps, rounds=4)
    results = overhead.of_run(data)
    writable = next(c.cell_id for c in data.cells if c.stack.placement.kind == "writable-layer")
    busy = Check("bottleneck", "flag", "CPU 97% busy while the device was 12% utilized")
    marked = [dataclasses.replace(r, flags=(busy,)) if r.cell_id == writable else r for r in results]
    (placement,) = by_topic(advised(data, marked))["placement"]
    assert placement.confidence == "medium"  # its interval clears the band: high, but for the CPU
    assert "the CPU, not storage, was the limit in zram/ext4/docker:overlay2/writable-layer" in placement.text
    assert any("[CPU-bound]" in e for e in placement.evidence)
    f = next(f for f in findings.of_run(data, marked) if f.subject.endswith("writable-layer"))
    assert f.cpu_bound and "[CPU-bound]" in "".join(findings.summary_lines([f]))


def test_advice_that_needs_a_comparison_the_run_lacks_is_a_suggestion_to_measure(
    tmp_path: Path, full_caps: HostCaps
) -> None:
    data, _ = stored_run(tmp_path, full_caps, rounds=4)
    results = overhead.of_run(data)
    found = [f for f in findings.of_run(data, results) if not f.subject.endswith("/volume")]  # no volume measured
    stacks = {c.stack_label: c.stack for c in data.cells}
    a = advice.advise(advice.Evidence(found, stacks, results))
    (placement,) = by_topic(a)["placement"]
    assert placement.measure and placement.confidence == "low"
    assert placement.text.startswith("Measure a volume beside the writable layer")
    assert a.advice.index(placement) > max(i for i, x in enumerate(a.advice) if not x.measure)  # after advice
    lines = advice_lines(a)
    assert any(line.startswith("To measure next") for line in lines)
