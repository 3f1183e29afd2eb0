"""The pgbench adapter: command lines, and the parsers on output and logs of real pgbench 15 runs.

tests/data/pgbench/15/README.md says how each fixture was produced.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from layerbench.spec.databases import PgbenchWorkload
from layerbench.workloads import pgbench
from layerbench.workloads.pgbench import PgbenchParseError

DATA = Path(__file__).parent.parent / "data" / "pgbench" / "15"
FIXTURES = sorted(p.name for p in DATA.glob("*.txt"))
RATE200 = DATA / "tpcb-like-c2-rate200.logs"
FAILURES = DATA / "tpcb-like-c4-rate500-repeatable-read.logs"


def raw(name: str) -> str:
    return (DATA / name).read_text()


def value(name: str, label: str) -> str:
    """The first number after ``label`` in the fixture, read the simplest way."""
    match = re.search(re.escape(label) + r"\D*([\d.]+)", raw(name))
    assert match, label
    return match.group(1)


# --- command lines -------------------------------------------------------------------------------


def test_init_fills_the_tables_at_the_scale() -> None:
    assert pgbench.init_argv("127.0.0.1", 55432, 10, "postgres") == [
        "pgbench",
        "--initialize",
        "--scale=10",
        "--quiet",
        "--host=127.0.0.1",
        "--port=55432",
        "--username=postgres",
        "postgres",
    ]


def test_a_run_is_timed_logged_and_has_no_progress_reports() -> None:
    w = PgbenchWorkload(name="t", clients=8)
    args = pgbench.argv(w, "10.0.0.2", 5432, "bench", "/tmp/run/tx", 20, cores=2, pgbench="/usr/bin/pgbench")
    assert args == [
        "/usr/bin/pgbench",
        "--builtin=tpcb-like",
        "--client=8",
        "--jobs=2",  # one thread per client, up to the cores
        "--time=20",
        "--log",
        "--log-prefix=/tmp/run/tx",
        "--host=10.0.0.2",
        "--port=5432",
        "--username=bench",
        "postgres",
    ]
    assert not any(a.startswith(("--progress", "-P")) for a in args)  # 0 is refused: "off" is leaving it out


def test_select_only_rate_threads_and_whole_seconds() -> None:
    w = PgbenchWorkload(name="s", mode="select-only", clients=3, rate=1250.5)
    args = pgbench.argv(w, "h", "1", "u", "/l/tx", 1.5, dbname="bench", cores=16)
    assert "--builtin=select-only" in args and "--jobs=3" in args  # never more threads than clients
    assert "--time=2" in args  # pgbench takes whole seconds
    assert args[-2:] == ["--rate=1250.5", "bench"]
    assert "--rate=200" in pgbench.argv(PgbenchWorkload(name="r", rate=200), "h", 1, "u", "/l", 5, cores=1)


def test_threads_default_to_this_host_s_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 4)
    assert "--jobs=4" in pgbench.argv(PgbenchWorkload(name="t", clients=8), "h", 1, "u", "/l", 5)


def test_log_files_are_the_run_s_own(tmp_path: Path) -> None:
    assert [p.name for p in pgbench.log_files(str(RATE200 / "tx"))] == ["tx.24869", "tx.24869.1"]
    for name in ("tx.12", "tx.12.1", "tx.12.10", "tx.log", "tx.12.1.bak", "txt.13", "other.14"):
        (tmp_path / name).write_text("")
    assert [p.name for p in pgbench.log_files(str(tmp_path / "tx"))] == ["tx.12", "tx.12.1", "tx.12.10"]


# --- the summary -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURES)
def test_every_fixture_parses_to_what_the_file_says(name: str) -> None:
    r = pgbench.parse(raw(name))
    assert (r.scale, r.threads) == (1, 2)
    assert r.clients == int(value(name, "number of clients:"))
    timed = "duration:" in raw(name)  # else a number of transactions per client (-t)
    assert r.duration_s == (int(value(name, "duration:")) if timed else None)
    assert r.processed == int(value(name, "actually processed:"))
    assert r.failed == int(value(name, "failed transactions:"))
    assert r.tps == float(value(name, "tps ="))
    assert r.latency_avg_ms == float(value(name, "latency average ="))
    assert r.connection_time_ms == float(value(name, "initial connection time ="))


def test_tpcb_like_without_a_rate() -> None:
    r = pgbench.parse(raw("tpcb-like-c4.txt"))
    assert (r.transaction_type, r.processed, r.failed, r.tps) == ("TPC-B (sort of)", 5419, 0, 2712.104977)
    assert (r.latency_avg_ms, r.latency_stddev_ms, r.lag_avg_ms, r.lag_max_ms) == (1.475, None, None, None)
    assert not r.latency_includes_failures


def test_select_only() -> None:
    r = pgbench.parse(raw("select-only-c4.txt"))
    assert (r.transaction_type, r.processed, r.tps, r.latency_avg_ms) == ("select only", 79909, 39970.368236, 0.1)


def test_a_fixed_rate_reports_stddev_and_schedule_lag() -> None:
    r = pgbench.parse(raw("tpcb-like-c2-rate200.txt"))
    assert (r.tps, r.latency_stddev_ms, r.lag_avg_ms, r.lag_max_ms) == (197.207265, 0.639, 0.126, 3.184)


def test_serialization_failures_are_counted_apart() -> None:
    rated = pgbench.parse(raw("tpcb-like-c4-rate500-repeatable-read.txt"))
    assert (rated.processed, rated.failed, rated.latency_includes_failures) == (765, 247, False)
    free = pgbench.parse(raw("tpcb-like-c4-repeatable-read.txt"))
    assert (free.processed, free.failed, free.latency_avg_ms) == (1287, 2722, 0.998)
    assert free.latency_includes_failures  # "latency average = 0.998 ms (including failures)"


@pytest.mark.parametrize(
    "text",
    [
        "",
        'pgbench: error: connection to server at "127.0.0.1", port 55432 failed: Connection refused\n',
        (DATA / "init-scale1.stderr").read_text(),
    ],
)
def test_output_without_a_summary_is_refused(text: str) -> None:
    with pytest.raises(PgbenchParseError, match="summary lacks"):
        pgbench.parse(text)


def test_a_summary_cut_short_is_refused() -> None:
    text = raw("tpcb-like-c4.txt")
    with pytest.raises(PgbenchParseError, match="lacks tps"):
        pgbench.parse(text[: text.index("tps =")])
    with pytest.raises(PgbenchParseError, match="lacks failed, latency_avg_ms"):
        pgbench.parse(text[: text.index("number of failed")])


# --- the transaction logs ---------------------------------------------------------------------------


def test_logs_give_one_latency_per_processed_transaction() -> None:
    latencies = pgbench.latencies_from_logs(pgbench.log_files(str(RATE200 / "tx")))
    r = pgbench.parse(raw("tpcb-like-c2-rate200.txt"))
    assert latencies.size == r.processed == 394
    # Under --rate pgbench measures from the scheduled start, in the log and in its average alike.
    assert latencies.mean() / 1000 == pytest.approx(r.latency_avg_ms, abs=0.001)
    assert latencies.std() / 1000 == pytest.approx(r.latency_stddev_ms, abs=0.001)


def test_failed_transactions_have_no_latency() -> None:
    paths = pgbench.log_files(str(FAILURES / "tx"))
    latencies = pgbench.latencies_from_logs(paths)
    r = pgbench.parse(raw("tpcb-like-c4-rate500-repeatable-read.txt"))
    assert latencies.size == r.processed == 765
    failed = sum(line.split()[2] == "failed" for p in paths for line in p.read_text().splitlines())
    assert failed == r.failed == 247


def test_logs_of_several_instances_are_pooled() -> None:
    both = pgbench.latencies_from_logs([*pgbench.log_files(str(RATE200 / "tx")), *FAILURES.iterdir()])
    assert both.size == 394 + 765
    assert pgbench.latencies_from_logs([]).size == 0


@pytest.mark.parametrize("line", ["0 1 2072 0 1795429976", "0 1 12ms 0 1795429976 38688", "garbage"])
def test_unreadable_log_lines_are_refused(tmp_path: Path, line: str) -> None:
    log = tmp_path / "tx.1"
    log.write_text(f"0 1 2072 0 1795429976 38688\n{line}\n")
    with pytest.raises(PgbenchParseError, match="line 2"):
        pgbench.latencies_from_logs([log])


def test_samples_take_percentiles_from_the_pooled_latencies() -> None:
    latencies = pgbench.latencies_from_logs(pgbench.log_files(str(FAILURES / "tx")))
    r = pgbench.parse(raw("tpcb-like-c4-rate500-repeatable-read.txt"))
    got = {s.metric: s for s in pgbench.samples(r, latencies, "pg-1")}
    assert (got["ops"].value, got["ops"].unit) == (383.49171, "ops/s")
    assert (got["count"].value, got["errors"].value) == (765, 247)
    assert got["lat_p99_us"].value == np.percentile(latencies, 99)
    assert got["lat_p99.9_us"].value == np.percentile(latencies, 99.9)
    assert got["lat_min_us"].value <= got["lat_p50_us"].value <= got["lat_p95_us"].value <= got["lat_max_us"].value
    assert {s.direction for s in got.values()} == {""} and {s.job for s in got.values()} == {"pg-1"}
    assert set(got) == {"ops", "count", "errors", "lat_avg_us", "lat_min_us", "lat_max_us"} | {
        "lat_p50_us",
        "lat_p95_us",
        "lat_p99_us",
        "lat_p99.9_us",
    }


def test_without_logs_only_pgbench_s_own_average_is_reported() -> None:
    r = pgbench.parse(raw("tpcb-like-c4.txt"))
    got = {s.metric: s.value for s in pgbench.samples(r, np.empty(0), "")}
    assert got == {"ops": 2712.104977, "count": 5419, "errors": 0, "lat_avg_us": 1475.0}
