"""Many fio clients at once on this host (docs/how-to/many-clients.md): natively 1, 2 and 4 directories (a
scaling curve), 4 containers with a volume each and 4 on one shared volume, on one zram ext4 at 1 s trials;
one result per trial, a row per client, servers on Unix sockets only, and nothing left behind."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from tests import support
from tests.integration.leftovers import leftovers

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_fio, pytest.mark.requires_docker, pytest.mark.slow]

SPEC = """
name: many-clients-test
device: {kind: zram, size: 1GiB}
stacks:
  - {filesystem: ext4, engine: native, clients: [1, 2, 4]}
  - {filesystem: ext4, engine: "docker:overlay2", placement: volume, clients: [4, {count: 4, shared: true}]}
workloads:
  - {name: rr, rw: randread, bs: 4k, iodepth: 4, size: 16MiB, runtime_s: 1, ramp_s: 0.2}
"""
RUN_DEADLINE_S = 300


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    return {"db": tmp_path / "results.db", "work": tmp_path / "work", "state": tmp_path / "state"}


def test_clients_run_together_with_one_result_each_and_a_row_per_client(tmp_path: Path, dirs: dict[str, Path]) -> None:
    spec = tmp_path / "clients.yaml"
    spec.write_text(SPEC)
    data = support.run_and_show(spec, dirs, RUN_DEADLINE_S)
    assert len(data["cells"]) == 5

    trials = support.trials_labelled(dirs["db"])
    with sqlite3.connect(dirs["db"]) as db:
        assert all(status == "ok" for _, status, _, _ in trials), trials
        for trial_id, _, _, label in trials:
            count = int(re.search(r"/(\d+)clients?", label)[1])  # type: ignore[index]
            rows = db.execute("SELECT DISTINCT job FROM samples WHERE trial_id = ? AND metric = 'iops'", (trial_id,))
            jobs = {j for (j,) in rows}
            assert jobs == {f"c{i}" for i in range(count)}, label
            merged = db.execute(
                "SELECT value FROM samples WHERE trial_id = ? AND job = 'all' AND metric = 'clat_p99'", (trial_id,)
            ).fetchall()
            assert merged and merged[0][0] > 0
            query = "SELECT name, status, detail FROM checks WHERE trial_id = ?"
            checks = {name: (status, detail) for name, status, detail in db.execute(query, (trial_id,))}
            assert checks["device-accounting"][0] != "flag", (label, checks)
            # In step or not is the machine's to say (4 fio on 2 cores started 112 ms apart once): judged, with why.
            status, detail = checks["clients-in-step"]
            assert status in ("pass", "flag") and detail.startswith("start spread"), detail
            if count == 1:
                assert status == "pass"
            query = "SELECT metric, value FROM samples WHERE trial_id = ? AND metric LIKE '%spread_ms'"
            spread = dict(db.execute(query, (trial_id,)).fetchall())
            assert set(spread) == {"start_spread_ms", "finish_spread_ms"}
            # Every client's completions kept beside the output, for `show --latency` to merge unparsed.
            (kept,) = db.execute("SELECT text FROM logs WHERE trial_id = ? AND name = 'clat_bins'", (trial_id,))
            assert kept[0].startswith("read "), kept

    curves = data["scaling"]
    assert [p["instances"] for p in curves[0]["points"]] == [1, 2, 4]
    assert leftovers(dirs["work"]) == []
    assert list(dirs["work"].iterdir()) == []  # no job file, log or socket link left either
    with sqlite3.connect(dirs["state"] / "ledger.db") as db:
        live = db.execute("SELECT kind, ident FROM resources WHERE removed_at IS NULL").fetchall()
    assert live == []


PODMAN_SPEC = """
name: many-clients-podman
device: {kind: zram, size: 1GiB}
stacks:
  - {filesystem: ext4, engine: "podman:overlay", placement: volume, clients: 2}
workloads:
  - {name: rr, rw: randread, bs: 4k, iodepth: 4, size: 16MiB, runtime_s: 1, ramp_s: 0.2}
"""


@pytest.mark.requires_podman
def test_podman_clients_too(tmp_path: Path, dirs: dict[str, Path]) -> None:
    spec = tmp_path / "clients.yaml"
    spec.write_text(PODMAN_SPEC)
    done = support.run(["run", str(spec)], dirs, timeout=RUN_DEADLINE_S)
    assert done.returncode == 0, done.stdout + done.stderr
    with sqlite3.connect(dirs["db"]) as db:
        ((status, stderr),) = db.execute("SELECT status, stderr FROM trials").fetchall()
        assert status == "ok", stderr
        jobs = {j for (j,) in db.execute("SELECT DISTINCT job FROM samples WHERE metric = 'iops'")}
    assert jobs == {"c0", "c1"}
    assert leftovers(dirs["work"]) == []


OWN = Path(__file__).parents[1] / "data" / "jobfiles" / "layerbench" / "own"
JOB_SIZE = 64 * 2**20  # each job's one pass: long enough on zram for fio's 10 ms IOPS log to have a line
JOBS = ("rand-read-iops", "seq-read-iops", "rand-write-iops")
JOB_FILE_SPEC = f"""
name: jobfile-clients-test
device: {{kind: zram, size: 2GiB}}
stacks:
  - {{filesystem: ext4, engine: native, clients: 2}}
  - {{filesystem: ext4, engine: "docker:overlay2", placement: volume, clients: {{count: 2, shared: true}}}}
workloads:
  - {{name: kbench, job_file: {OWN / "iops-quick.fio"}, size: 64MiB}}
"""


def test_a_job_file_runs_on_every_client_each_job_moving_the_size_given(tmp_path: Path, dirs: dict[str, Path]) -> None:
    """Our kbench-shaped job file (three sections in turn, includes, no size, no target) on two native clients
    and on two containers sharing one volume: every client's every job moves the workload's size, one pass."""
    spec = tmp_path / "jobfile-clients.yaml"
    spec.write_text(JOB_FILE_SPEC)
    data = support.run_and_show(spec, dirs, RUN_DEADLINE_S)
    trials = support.trials_labelled(dirs["db"])
    assert len(trials) == 2 and all(status == "ok" for _, status, _, _ in trials), trials
    with sqlite3.connect(dirs["db"]) as db:
        for trial_id, _, _, label in trials:
            query = "SELECT job, sum(value) FROM samples WHERE trial_id = ? AND metric = 'io_bytes' GROUP BY job"
            moved = dict(db.execute(query, (trial_id,)).fetchall())
            assert moved == {f"c{i}/{job}": JOB_SIZE for i in range(2) for job in JOBS}, label
            (ops,) = db.execute("SELECT value FROM samples WHERE trial_id = ? AND metric = 'ops'", (trial_id,))
            assert ops[0] > 0
    for cell in data["job_options"]:
        size = next(o for o in cell["options"] if o["option"] == "size")
        assert size["value"] == str(JOB_SIZE) and size["applied"] == list(JOBS)
    assert {r["client"] for r in data["clients"]} == {"c0", "c1", "all"}
    assert leftovers(dirs["work"]) == []
    assert list(dirs["work"].iterdir()) == []
