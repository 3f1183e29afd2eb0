"""Many clients per database server (docs/how-to/many-clients.md): a native PostgreSQL on zram ext4, YCSB and
pgbench with 1 and 2 clients against it at 2 s trials; each client its own row, the instance's and the trial's
latency merged, the start spread judged, a curve over the count; beside it two instances without clients, one
client each as before; and nothing left behind (about 25 s here)."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import support
from tests.integration.leftovers import assert_nothing_left, server_dirs

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_db, pytest.mark.slow]

SPEC = """
name: db-clients-test
device: {kind: zram, size: 1GiB}
stacks:
  - {filesystem: ext4, engine: native, placement: host-dir, server: {kind: postgres, records: 2000, scale: 1},
     clients: [1, 2]}
  - {filesystem: ext4, engine: native, placement: host-dir, server: {kind: postgres, records: 2000, scale: 1},
     instances: 2}
workloads:
  - {kind: ycsb, name: B, mix: b, threads: 2, runtime_s: 2, warmup_s: 0}
  - {kind: pgbench, name: S, mode: select-only, clients: 2, runtime_s: 2, warmup_s: 0}
"""
RUN_DEADLINE_S = 300


@pytest.fixture
def dirs() -> Iterator[dict[str, Path]]:
    with server_dirs("lb-db-clients-test-") as made:
        yield made


def test_database_clients_run_together_each_with_its_row_and_one_merged_latency(dirs: dict[str, Path]) -> None:
    dirs["spec"].write_text(SPEC)
    data = support.run_and_show(dirs["spec"], dirs, RUN_DEADLINE_S)
    assert len(data["cells"]) == 6

    trials = support.trials_labelled(dirs["db"])
    with sqlite3.connect(dirs["db"]) as db:
        assert len(trials) == 6 and all(status == "ok" for _, status, _, _ in trials), trials
        for trial_id, _, _, label in trials:
            ops = dict(db.execute("SELECT job, value FROM samples WHERE trial_id = ? AND metric = 'ops'", (trial_id,)))
            if "client" not in label:  # one client per instance, as before clients existed
                assert set(ops) == {"i0", "i1"}, label
                continue
            count = int(re.search(r"/(\d+)clients?", label)[1])  # type: ignore[index]
            assert set(ops) == {f"i0c{j}" for j in range(count)} and all(v > 0 for v in ops.values()), label
            merged = {
                job
                for (job,) in db.execute(
                    "SELECT job FROM samples WHERE trial_id = ? AND metric = 'lat_p99_us'", (trial_id,)
                )
            }
            assert {"i0", "all"} <= merged, label
            query = "SELECT name, status, detail FROM checks WHERE trial_id = ?"
            checks = {name: (status, detail) for name, status, detail in db.execute(query, (trial_id,))}
            # In step or not is the machine's to say (two JVMs on 2 cores): judged, with why.
            status, detail = checks["clients-in-step"]
            assert status in ("pass", "flag") and detail.startswith("start spread"), detail
            if count == 1:
                assert status == "pass"
            (info,) = db.execute("SELECT info_json FROM trials WHERE id = ?", (trial_id,)).fetchone()
            assert set(json.loads(info)["clients_ran_ms"]) == set(ops)

    curves = {c["workload"]: c for c in data["scaling"]}
    assert set(curves) == {"B", "S"}
    assert all([p["instances"] for p in c["points"]] == [1, 2] for c in curves.values())
    rows = [r["client"] for r in data["clients"] if r["stack"].endswith("/2clients") and r["workload"] == "B"]
    assert rows == ["i0c0", "i0c1", "all"]
    assert_nothing_left(dirs, set())
