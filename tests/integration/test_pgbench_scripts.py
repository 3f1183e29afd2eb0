"""A user's own pgbench scripts through the whole pipeline, as a user runs them: two weighted scripts and a
``-D`` variable against PostgreSQL natively and in a private Docker daemon, each script's numbers reported;
and a script pgbench cannot read refused before anything runs, in pgbench's words."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import support
from tests.integration.leftovers import assert_nothing_left, bridges, server_dirs

DATA = Path(__file__).parent.parent / "data" / "pgbench" / "15"
READ, WRITE = str(DATA / "scripts" / "read.sql"), str(DATA / "scripts" / "write.sql")
TRANSACTIONS = 40  # per connection: the counts are exact however busy the machine is
CLIENTS = 2
SERVER = {"kind": "postgres", "scale": 1}
WORKLOAD = {
    "kind": "pgbench",
    "name": "own",
    "scripts": [{"path": READ, "weight": 3}, {"path": WRITE, "weight": 1}],
    "variables": {"accounts": 100000},  # the scripts' :accounts
    "clients": CLIENTS,
    "transactions": TRANSACTIONS,
    "runtime_s": 300,  # the longest the transactions may take
    "warmup_s": 0,
}
SPEC = {
    "name": "pgbench-scripts-it",
    "device": {"kind": "zram", "size": "1GiB"},
    "stacks": [
        {"filesystem": "ext4", "engine": "native", "placement": "host-dir", "server": SERVER},
        {"filesystem": "ext4", "engine": "docker:overlay2", "placement": "volume", "server": SERVER},
    ],
    "workloads": [WORKLOAD],
    "baseline": {"filesystem": "ext4", "engine": "native", "placement": "host-dir", "same": ["server"]},
}


@pytest.fixture
def dirs() -> Iterator[dict[str, Path]]:
    with server_dirs("lb-pgbench-scripts-") as made:
        yield made


@pytest.mark.requires_root
@pytest.mark.requires_docker
@pytest.mark.requires_db
@pytest.mark.slow
def test_weighted_scripts_with_a_variable_natively_and_in_a_container(dirs: dict[str, Path]) -> None:
    before = bridges()
    dirs["spec"].write_text(yaml.safe_dump(SPEC))
    done = support.run(["run", str(dirs["spec"])], dirs)
    assert done.returncode == 0, done.stdout + done.stderr
    shown = json.loads(support.run(["show", "latest", "--json", "--latency"], dirs).stdout)
    assert [c["summary"]["n"] for c in shown["cells"]] == [1, 1]
    rows = _script_samples(dirs["db"])
    for stack in ("native", "docker"):
        mine = {(m, d): v for s, m, d, v in rows if stack in s}
        counts = {d: mine[("count", d)] for d in ("read.sql", "write.sql")}
        assert sum(counts.values()) == CLIENTS * TRANSACTIONS  # every transaction, by the script that ran it
        assert all(n > 0 for n in counts.values()), counts
        assert mine[("ops", "read.sql")] > 0 and mine[("ops", "write.sql")] > 0
        assert ("ops", "") not in mine  # the scripts' ops add up to the trial's: no total counted twice
        assert mine[("lat_p50_us", "write.sql")] <= mine[("lat_p99_us", "write.sql")]
    latency = {(row["cell_id"], row["operation"]) for row in shown["client_latency_us"]}
    assert {op for _, op in latency} == {"transaction", "read.sql", "write.sql"}
    assert len(latency) == 2 * 3  # both cells, each script and every transaction
    assert_nothing_left(dirs, before)


def _script_samples(db_path: Path) -> list[tuple[str, str, str, float]]:
    """(the cell's label, metric, direction, value) of every client's samples (job i0) of every trial."""
    with sqlite3.connect(db_path) as db:
        query = (
            "SELECT c.label, s.metric, s.direction, s.value FROM samples s JOIN trials t ON t.id = s.trial_id"
            " JOIN cells c ON c.cell_id = t.cell_id WHERE s.job = 'i0'"
        )
        return [tuple(row) for row in db.execute(query)]  # type: ignore[misc]


@pytest.mark.requires_root
@pytest.mark.requires_db
def test_a_script_pgbench_cannot_read_is_refused_before_anything_runs(dirs: dict[str, Path]) -> None:
    broken = dirs["spec"].parent / "broken.sql"
    broken.write_text("\\set aid random(1,\nSELECT 1;\n")
    spec: dict[str, Any] = {
        **SPEC,
        "stacks": SPEC["stacks"][:1],
        "workloads": [{**WORKLOAD, "scripts": [READ, str(broken)]}],
    }
    dirs["spec"].write_text(yaml.safe_dump(spec))
    done = support.run(["run", str(dirs["spec"])], dirs)
    assert done.returncode == 2, done.stdout + done.stderr  # every cell refused: a spec error
    said = f'pgbench cannot read the scripts: {broken}:1: syntax error in command "set" | \\set aid random(1,'
    # the terminal wraps its lines
    assert said in " ".join(done.stdout.split()) and "every cell of 'pgbench-scripts-it' was refused" in done.stderr
    assert not dirs["db"].exists() or support.trials_labelled(dirs["db"]) == []  # nothing ran
    assert support.refused(SPEC) is None  # the two good scripts: nothing refused
