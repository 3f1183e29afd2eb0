"""A user's own pgbench scripts: the spec that names them, their command line, pgbench's report of each,
their samples, and the input refused before anything runs.

tests/data/pgbench/15/README.md says how each fixture was produced (real pgbench 15 against a private server).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from layerbench.errors import SpecError
from layerbench.run.kinds.database_clients import clients_of, pgbench_measured
from layerbench.spec.databases import PgbenchWorkload
from layerbench.spec.load import validate
from layerbench.spec.models import STORED_CONTEXT, Cell
from layerbench.workloads import pgbench, pgbench_scripts, registry

DATA = Path(__file__).parent.parent / "data" / "pgbench" / "15"
READ, WRITE = str(DATA / "scripts" / "read.sql"), str(DATA / "scripts" / "write.sql")
TWO = "scripts-read3-write1-c4-t100"  # 4 clients, 100 transactions each, read.sql@3 and write.sql@1
RATE = "scripts-read3-write1-c2-rate200"
ONE = "script-read-c2-time2"
NAMES = ["read.sql", "write.sql"]


def workload(**fields: Any) -> PgbenchWorkload:
    return PgbenchWorkload.model_validate({"name": "own", **fields})


def weighted(**fields: Any) -> PgbenchWorkload:
    scripts = [{"path": READ, "weight": 3}, {"path": WRITE, "weight": 1}]
    return workload(scripts=scripts, variables={"accounts": 100000}, **fields)


def raw(name: str) -> str:
    return (DATA / f"{name}.txt").read_text()


def log(name: str) -> pgbench.Transactions:
    return pgbench.read_logs(pgbench.log_files(str(DATA / f"{name}.logs" / "tx")))


# --- the spec ----------------------------------------------------------------------------------------


def test_one_script_is_the_one_of_weight_one() -> None:
    assert workload(script=READ) == workload(scripts=[READ]) == workload(scripts=[{"path": READ, "weight": 1}])
    assert [s.name for s in weighted().scripts] == NAMES


def test_variables_are_pgbench_s_definitions_in_order() -> None:
    w = workload(script=READ, variables={"b": 2, "a": "x y", "on": True, "r": 0.5})
    assert w.variables == ("a=x y", "b=2", "on=true", "r=0.5")
    assert workload(script=READ, variables=["a=1", "b="]).variables == ("a=1", "b=")


def test_a_built_in_mode_dumps_as_before_so_its_cells_keep_their_ids() -> None:
    assert workload(mode="select-only").model_dump(mode="json") == {
        "kind": "pgbench", "name": "own", "mode": "select-only", "clients": 8, "runtime_s": 20.0, "warmup_s": 5.0,
        "rate": None,
    }  # fmt: skip


def test_a_scripted_workload_reads_back_as_given_even_where_its_files_are_gone(tmp_path: Path) -> None:
    mine = tmp_path / "mine.sql"
    mine.write_text("SELECT 1;\n")
    w = workload(scripts=[{"path": str(mine), "weight": 2}], variables={"n": 1}, transactions=10)
    dumped = w.model_dump(mode="json")
    assert "mode" not in dumped and PgbenchWorkload.model_validate(dumped) == w
    stack = {"device": {"kind": "loop"}, "filesystem": "ext4", "engine": "native", "placement": "host-dir"}
    cell = {"stack": {**stack, "server": "postgres"}, "workload": dumped}
    mine.unlink()
    with pytest.raises(ValueError, match="no pgbench script at"):
        PgbenchWorkload.model_validate(dumped)
    stored = Cell.model_validate_json(json.dumps(cell), context=STORED_CONTEXT)  # a stored run's cell
    assert stored.workload == w


BAD: list[tuple[dict[str, Any], str]] = [
    ({"script": "/no/such/script.sql"}, r"workloads\[0\]\.scripts\[0\]\.path: .*no pgbench script at \'/no/such"),
    ({"scripts": [{"path": READ, "weight": 0}]}, r"scripts\[0\]\.weight: .*greater than or equal to 1"),
    ({"scripts": [{"path": READ, "weight": -2}]}, r"scripts\[0\]\.weight: .*greater than or equal to 1"),
    ({"scripts": [{"path": READ, "weight": 1.5}]}, r"scripts\[0\]\.weight: .*valid integer"),
    ({"scripts": [{"path": READ, "weight": "3"}]}, r"scripts\[0\]\.weight: .*valid integer"),
    ({"script": READ, "variables": {"1st": 1}}, "'1st' is not a name pgbench takes"),
    ({"script": READ, "variables": {"a-b": 1}}, "'a-b' is not a name pgbench takes"),
    ({"script": READ, "variables": ["novalue"]}, "a mapping of names to values, or NAME=VALUE strings"),
    ({"script": READ, "variables": {"a": [1]}}, "variables.a: a string or a number, not list"),
    ({"script": READ, "variables": {"scale": 5}}, "scale is the server's"),
    ({"script": READ, "mode": "select-only"}, "give mode .* or scripts .*, not both"),
    ({"script": READ, "scripts": [WRITE]}, "give script .* or scripts .*, not both"),
    ({"variables": {"a": 1}}, "variables: for your own scripts"),
    ({"scripts": [READ, READ]}, "two named read.sql"),
]


@pytest.mark.parametrize(("fields", "message"), BAD, ids=[f"bad{n}" for n in range(len(BAD))])
def test_bad_input_is_refused_with_the_field_before_anything_runs(fields: dict[str, Any], message: str) -> None:
    spec = {
        "name": "bad",
        "stacks": [{"filesystem": "ext4", "engine": "native", "server": "postgres"}],
        "workloads": [{"kind": "pgbench", "name": "own", **fields}],
    }
    with pytest.raises(SpecError, match=message):
        validate(spec)


# --- the command line ------------------------------------------------------------------------------------


def test_scripts_run_with_their_weights_variables_the_server_s_scale_and_statement_latencies() -> None:
    args = pgbench.argv(weighted(clients=4), "127.0.0.1", 5432, "postgres", "/l/tx", 20, cores=2, scale=7)
    assert args[:6] == [
        "pgbench",
        f"--file={READ}@3",
        f"--file={WRITE}@1",
        "--define=accounts=100000",
        "--scale=7",  # pgbench reads :scale from the tables for its built-in scripts only
        "--report-per-command",
    ]
    assert "--time=20" in args and not any(a.startswith("--builtin") for a in args)


def test_relative_scripts_are_given_as_absolute_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.sql").write_text("SELECT 1;\n")
    monkeypatch.chdir(tmp_path)
    args = pgbench.argv(workload(script="a.sql"), "h", 1, "u", "/l/tx", 5, cores=1)
    assert f"--file={tmp_path / 'a.sql'}@1" in args


def test_a_number_of_transactions_replaces_the_time() -> None:
    args = pgbench.argv(weighted(transactions=100), "h", 1, "u", "/l/tx", 20, cores=1, transactions=100)
    assert "--transactions=100" in args and not any(a.startswith("--time") for a in args)


def test_a_built_in_mode_s_command_is_unchanged_by_a_scale() -> None:
    w = workload(mode="select-only", clients=2)
    scaled = pgbench.argv(w, "h", 1, "u", "/l/tx", 5, cores=2, scale=9)
    assert scaled == pgbench.argv(w, "h", 1, "u", "/l/tx", 5, cores=2)


def test_pgbench_reads_the_scripts_without_a_server() -> None:
    args = pgbench_scripts.check_argv([(READ, 3), (WRITE, 1)], pgbench="/usr/bin/pgbench")
    assert args == ["/usr/bin/pgbench", f"--file={READ}@3", f"--file={WRITE}@1", "--unlogged-tables",
                    f"--host={pgbench_scripts.NOWHERE}"]  # fmt: skip


# --- pgbench's verdict on the scripts, captured -----------------------------------------------------------


def verdict(name: str) -> str | None:
    rc = int((DATA / "checks" / f"{name}.rc").read_text())
    return pgbench_scripts.refusal(rc, (DATA / "checks" / f"{name}.stderr").read_text())


def test_scripts_pgbench_read_are_not_refused() -> None:
    assert verdict("read-write") is None


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("syntax-error", 'syntax-error.sql:1: syntax error in command "set" | \\set x random(1,'),
        ("unclosed-if", "command 3: \\if without matching \\endif"),
        ("missing", 'no-such-file.sql": No such file or directory'),
    ],
)
def test_a_script_pgbench_cannot_read_is_refused_in_its_words(name: str, said: str) -> None:
    found = verdict(name)
    assert found is not None and found.startswith("pgbench cannot read the scripts: ") and said in found
    assert "error found here" not in found  # its caret points nowhere on one line


def test_any_other_end_is_a_refusal_too() -> None:
    assert pgbench_scripts.refusal(0, "") == "pgbench cannot read the scripts: pgbench exited 0, saying nothing"
    assert pgbench_scripts.refusal(2, f"pgbench: error: {pgbench_scripts.READ_ALL}\n") is not None


def test_the_workload_type_asks_pgbench_for_scripts_only() -> None:
    assert registry.of(workload()).reads is pgbench_scripts.reads
    assert pgbench_scripts.reads(None, workload()) is None  # type: ignore[arg-type]  # no script: nothing to read


# --- pgbench's report of each script -----------------------------------------------------------------


def test_several_scripts_are_each_reported() -> None:
    r = pgbench.parse(raw(TWO))
    assert (r.transaction_type, r.duration_s, r.processed) == ("multiple scripts", None, 400)
    read, write = r.scripts
    assert (read.number, read.path, read.weight, read.processed, read.tps) == (1, READ_CAPTURED, 3, 294, 1559.615507)
    assert (read.failed, read.latency_avg_ms, read.latency_stddev_ms) == (0, 0.582, 2.026)
    assert (write.number, write.weight, write.processed, write.tps) == (2, 1, 106, 562.310353)
    assert write.latency_avg_ms == 3.2
    assert read.processed + write.processed == r.processed
    assert read.tps + write.tps == pytest.approx(r.tps, rel=1e-6)


READ_CAPTURED = "/work/wt-own-pgbench/tests/data/pgbench/15/scripts/read.sql"  # where it was when captured


def test_each_script_s_statements_are_reported_with_their_latency() -> None:
    read, write = pgbench.parse(raw(TWO)).scripts
    assert [(s.latency_ms, s.failures) for s in read.statements] == [(0.001, 0), (0.581, 0)]
    assert read.statements[1].command == "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;"
    assert [s.command for s in write.statements][2:] == [
        "BEGIN;",
        "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;",
        "END;",
    ]


def test_one_script_s_report_is_the_summary_with_its_statements() -> None:
    r = pgbench.parse(raw(ONE))
    (only,) = r.scripts
    assert (only.path, only.processed, only.tps, only.latency_avg_ms) == (READ_CAPTURED, r.processed, r.tps, 0.15)
    assert [s.latency_ms for s in only.statements] == [0.0, 0.141]


def test_under_a_rate_each_script_has_its_stddev() -> None:
    r = pgbench.parse(raw(RATE))
    assert [s.latency_stddev_ms for s in r.scripts] == [5.159, 8.003] and r.lag_avg_ms == 1.4


def test_a_script_block_cut_short_is_refused() -> None:
    text = raw(TWO)
    with pytest.raises(pgbench_scripts.ScriptsParseError, match=r"script 2 .* lacks failed, latency_avg_ms"):
        pgbench.parse(text[: text.rindex(" - number of failed")])
    assert pgbench_scripts.ScriptsParseError in registry.of(workload()).parse_errors  # a parse-error trial


def test_the_logs_number_the_scripts_as_their_report_does() -> None:
    for name in (TWO, RATE):
        r, transactions = pgbench.parse(raw(name)), log(name)
        by = pgbench.by_script(transactions, NAMES)
        assert [by[n].size for n in NAMES] == [s.processed for s in r.scripts]


# --- samples ------------------------------------------------------------------------------------------------


def test_each_script_s_ops_count_and_latency_are_named_by_it() -> None:
    r, transactions = pgbench.parse(raw(TWO)), log(TWO)
    got = pgbench.samples(r, transactions.latency_us, "i0", pgbench.by_script(transactions, NAMES))
    ops = {s.direction: s.value for s in got if s.metric == "ops"}
    assert ops == {"read.sql": 1559.615507, "write.sql": 562.310353}  # they add up to the run's tps
    counts = {s.direction: s.value for s in got if s.metric == "count"}
    assert counts == {"read.sql": 294.0, "write.sql": 106.0}
    p99 = {s.direction: s.value for s in got if s.metric == "lat_p99_us"}
    assert set(p99) == {"read.sql", "write.sql", ""}  # and every transaction's
    assert p99[""] == pytest.approx(np.percentile(transactions.latency_us, 99))
    assert {s.job for s in got} == {"i0"}


def test_scripts_that_do_not_match_the_report_are_a_parse_error() -> None:
    r, transactions = pgbench.parse(raw(TWO)), log(TWO)
    with pytest.raises(pgbench_scripts.ScriptsParseError, match="reported 2 scripts; the workload has 1"):
        pgbench.samples(r, transactions.latency_us, "i0", {"read.sql": transactions.latency_us})


def test_clients_merge_each_script_s_latency_and_keep_its_histogram() -> None:
    r = pgbench.parse(raw(TWO))
    files = pgbench.log_files(str(DATA / f"{TWO}.logs" / "tx"))
    clients = clients_of(2, None)  # the same report and log as two instances' clients
    measured = pgbench_measured(clients, [r, r], [files, files], False, NAMES)
    assert set(measured.latency_hdr) == {"", "read.sql", "write.sql"}
    merged = {(s.metric, s.direction) for s in measured.samples if s.job == "all"}
    assert {("lat_p99_us", "read.sql"), ("lat_p99_us", "write.sql"), ("lat_p99_us", "")} <= merged
    ops = sum(s.value for s in measured.samples if s.metric == "ops")
    assert ops == pytest.approx(2 * r.tps, rel=1e-6)  # each script's once per client: no total counted twice


def test_a_built_in_mode_keeps_one_histogram_and_no_script_samples() -> None:
    r = pgbench.parse((DATA / "tpcb-like-c2-rate200.txt").read_text())
    files = pgbench.log_files(str(DATA / "tpcb-like-c2-rate200.logs" / "tx"))
    measured = pgbench_measured(clients_of(1, None), [r], [files], False)
    assert set(measured.latency_hdr) == {""} and {s.direction for s in measured.samples} == {""}


def test_clients_bound_by_transactions_are_judged_against_how_long_they_ran() -> None:
    from layerbench.run.kinds.database import _pgbench_ran_s

    windows = {"i0": (1_000.0, 3_000.0), "i1": (1_500.0, 4_000.0)}  # ms since the epoch
    assert _pgbench_ran_s(weighted(runtime_s=300), windows) == 300  # timed: its runtime
    assert _pgbench_ran_s(weighted(runtime_s=300, transactions=50), windows) == 3.0  # not the cap


def test_several_clients_of_an_instance_merge_each_script_s_latency_for_it() -> None:
    from layerbench.spec.clients import ClientsSpec

    r = pgbench.parse(raw(TWO))
    files = pgbench.log_files(str(DATA / f"{TWO}.logs" / "tx"))
    clients = clients_of(1, ClientsSpec(count=2))  # i0c0 and i0c1 against instance i0
    measured = pgbench_measured(clients, [r, r], [files, files], True, NAMES)
    instance = {(s.metric, s.direction): s.value for s in measured.samples if s.job == "i0"}
    both = np.concatenate([log(TWO).of_script(1)] * 2)  # the two clients' transactions of write.sql, pooled
    assert instance[("lat_p99_us", "write.sql")] == pytest.approx(np.percentile(both, 99))
    assert ("ops", "read.sql") not in instance  # its clients' ops are theirs: counted once
