"""Regression gates: `compare --fail-if-slower/--fail-if-faster`, `baseline save`, `check --against`, and
their JUnit XML, validated against the JUnit schema Jenkins' xunit plugin publishes (tests/data/junit)."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest
import xmlschema
from typer.testing import CliRunner

from layerbench.cli.app import app
from layerbench.cli.boundary import EXIT_REGRESSION
from layerbench.records.info import TrialInfo
from layerbench.records.sample import Sample
from layerbench.records.trial import TrialRecord
from layerbench.spec.models import Cell, FioWorkload, StackSpec
from layerbench.store.db import CellRow, Store

JUNIT_XSD = Path(__file__).parent.parent / "data" / "junit" / "junit-10.xsd"
RR = FioWorkload(name="RR", rw="randread", bs=4096)
SW = FioWorkload(name="SW", rw="write", bs=128 * 1024)
JITTER = {"a": [0.98, 1.0, 1.02], "b": [1.01, 0.99, 1.005]}


def cell(engine: str, placement: str, workload: FioWorkload) -> Cell:
    stack = {"device": {"kind": "loop"}, "filesystem": "xfs", "engine": engine, "placement": placement}
    return Cell(stack=StackSpec.model_validate(stack), workload=workload)


NATIVE_RR, DOCKER_RR = cell("native", "host-dir", RR), cell("docker:overlay2", "volume", RR)
NATIVE_SW = cell("native", "host-dir", SW)


def add_run(store: Store, name: str, factor: dict[Cell, float], jitter: str = "a") -> str:
    """A run of three rounds: RR's IOPS and p99 latency, SW's bandwidth, each cell's value × ``factor``
    (its latency ÷ ``factor``)."""
    run_id = store.new_run(name, '{"name": "gates"}', "d", {"kernel": "6.18"})
    cells = [NATIVE_RR, DOCKER_RR, NATIVE_SW]
    base = {NATIVE_RR.workload.name: NATIVE_RR.id, NATIVE_SW.workload.name: NATIVE_SW.id}
    rows = [CellRow(c.id, c.label(), c.stack.label(), c.workload.name, c.model_dump_json(), c.id in base.values(),
                    base[c.workload.name]) for c in cells]  # fmt: skip
    store.add_cells(run_id, rows)
    now = time.time()
    for rep, j in enumerate(JITTER[jitter]):
        for c in cells:
            f = factor.get(c, 1.0) * j
            if c.workload.rw == "randread":
                samples = [
                    Sample("iops", 48_000 * f, "IO/s", "read", "RR"),
                    Sample("clat_p99", 90_000 / f, "ns", "read", "RR"),
                ]
            else:
                samples = [Sample("bw", 900 * 2**20 * f, "B/s", "write", "SW")]
            store.record_trial(
                run_id, TrialRecord(c.id, rep, "ok", None, now, now + 1, ["fio"], "{}", "", TrialInfo(), samples)
            )
    return run_id


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, str, str, str]:
    """A results database with a run, its twin (A/A), and a run whose Docker volume is half as fast."""
    db = tmp_path / "r.db"
    store = Store.open(db)
    a = add_run(store, "a", {})
    twin = add_run(store, "twin", {}, "b")
    slow = add_run(store, "slow", {DOCKER_RR: 0.5}, "b")
    store.close()
    return db, a, twin, slow


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def words(text: str) -> str:
    """Rich wraps errors at the terminal's width; what they say is the same."""
    return " ".join(text.split())


def test_an_aa_pair_passes_the_gate(runs: tuple[Path, str, str, str]) -> None:
    db, a, twin, _ = runs
    code, out = invoke("compare", a, twin, "--db", str(db), "--fail-if-slower", "5%", "--fail-if-faster", "5%")
    assert code == 0, out
    assert "no regression beyond the gate in 3 comparisons" in out


def test_a_slower_stack_fails_the_gate_and_is_named(runs: tuple[Path, str, str, str]) -> None:
    db, a, _, slow = runs
    code, out = invoke("compare", a, slow, "--db", str(db), "--fail-if-slower", "10%")
    assert code == EXIT_REGRESSION == 7, out
    regressions = [line for line in out.splitlines() if line.startswith("regression:")]
    assert len(regressions) == 1
    assert DOCKER_RR.label() in regressions[0] and "iops ×0.50" in regressions[0]
    # Half the throughput is not 60% slower (it takes twice as long per I/O, 100% more): the gate holds.
    assert invoke("compare", a, slow, "--db", str(db), "--fail-if-slower", "150%")[0] == 0
    assert invoke("compare", a, slow, "--db", str(db))[0] == 0  # no gate, no exit code


def test_a_cost_metric_gates_on_a_rise(runs: tuple[Path, str, str, str]) -> None:
    db, a, _, slow = runs
    code, out = invoke("compare", a, slow, "--db", str(db), "--metric", "clat_p99", "--fail-if-faster", "20%")
    assert code == EXIT_REGRESSION, out
    assert "clat_p99 ×1.996 (+100%), above ×1.200 (--fail-if-faster 20%)" in out
    # Two cells report clat_p99 (SW does not): the table compares those two only.
    assert "no regression" not in out and NATIVE_SW.label() not in out


@pytest.mark.parametrize(("given", "why"), [("3%", "below 5%"), ("fast", "not a percentage"), ("0", "positive")])
def test_a_gate_must_be_a_material_percentage(runs: tuple[Path, str, str, str], given: str, why: str) -> None:
    db, a, twin, _ = runs
    code, out = invoke("compare", a, twin, "--db", str(db), "--fail-if-slower", given)
    assert code == 2 and why in out, out


def test_junit_has_one_case_per_comparison_and_validates(runs: tuple[Path, str, str, str], tmp_path: Path) -> None:
    db, a, _, slow = runs
    xml = tmp_path / "out" / "gates.xml"
    code, out = invoke("compare", a, slow, "--db", str(db), "--fail-if-slower", "0.10", "--junit", str(xml))
    assert code == EXIT_REGRESSION, out
    schema = xmlschema.XMLSchema(JUNIT_XSD)
    schema.validate(xml)  # raises with the element and rule on any breach
    doc = schema.to_dict(xml)
    suite = doc["testsuite"][0]
    assert (suite["@tests"], suite["@failures"], suite["@errors"]) == ("3", "1", "0")
    failed = [case for case in suite["testcase"] if "failure" in case]
    assert [case["@name"] for case in failed] == [DOCKER_RR.label()]
    assert failed[0]["failure"][0]["@type"] == "regression"


def test_a_baseline_is_one_file_that_check_reads_and_never_writes(
    runs: tuple[Path, str, str, str], tmp_path: Path
) -> None:
    db, a, twin, slow = runs
    where = tmp_path / "baselines"
    code, out = invoke("baseline", "save", "nightly", a, "--db", str(db), "--baselines", str(where))
    assert code == 0, out
    saved = where / "nightly.lbbaseline"
    assert sorted(p.name for p in where.iterdir()) == [saved.name]  # no -wal, -shm or temporary file
    digest = hashlib.sha256(saved.read_bytes()).hexdigest()
    gate = ("--fail-if-slower", "10%", "--db", str(db), "--baselines", str(where))
    assert invoke("check", twin, "--against", "nightly", *gate)[0] == 0
    code, out = invoke("check", slow, "--against", str(saved), *gate)  # by its file, as CI carries it
    assert code == EXIT_REGRESSION and DOCKER_RR.label() in out, out
    assert hashlib.sha256(saved.read_bytes()).hexdigest() == digest
    assert sorted(p.name for p in where.iterdir()) == [saved.name]
    assert invoke("baseline", "save", "nightly", a, "--db", str(db), "--baselines", str(where))[0] == 6  # exists
    code, out = invoke("check", slow, "--against", "weekly", *gate)
    assert code == 6 and "(saved there: nightly)" in words(out), out
    assert invoke("baseline", "list", "--baselines", str(where))[1].splitlines()[0] == "nightly"
