"""A real run written straight into the shared PostgreSQL store (`run smoke --db postgresql://...`): its
trials land there as they end, `show` reads it from there, and nothing of the run is left behind."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from tests import support
from tests.integration.leftovers import leftovers

pytestmark = [
    pytest.mark.requires_root,
    pytest.mark.requires_fio,
    pytest.mark.requires_docker,
    pytest.mark.requires_postgres,
    pytest.mark.slow,
]


def test_a_smoke_run_written_to_postgresql_shows_from_there(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # the readers' cache: this test's own
    dirs = {"db": pg_url, "work": tmp_path / "work", "state": tmp_path / "state"}
    done = support.run(["run", "smoke"], dirs)  # type: ignore[arg-type]  # --db is a URL here, not a path
    assert done.returncode == 0, done.stdout + done.stderr
    shown = support.run(["show", "latest", "--json"], dirs)  # type: ignore[arg-type]
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["run"]["status"] == "finished" and len(data["cells"]) == 2
    with psycopg.connect(pg_url) as conn:
        trials, samples = conn.execute(
            "SELECT count(DISTINCT t.id), count(*) FROM trials t JOIN samples s ON s.trial_id = t.id"
        ).fetchone()
        host = json.loads(conn.execute("SELECT host_json FROM runs").fetchone()[0])
    assert trials >= 2 and samples > 0
    assert host["tools"]["fio"]  # the provenance of a run written live, as of a published one
    assert leftovers(dirs["work"]) == []
