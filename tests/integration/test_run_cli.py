"""The whole pipeline through the CLI, as a user runs it: real loop device,
filesystem, private dockerd and fio; then nothing of it may be left."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests import support
from tests.integration.leftovers import leftovers

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_fio, pytest.mark.requires_docker, pytest.mark.slow]


def layerbench(*args: str, dirs: dict[str, Path]) -> subprocess.CompletedProcess[str]:
    return support.run(list(args), dirs)


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    return {"db": tmp_path / "results.db", "work": tmp_path / "work", "state": tmp_path / "state"}


def test_smoke_run_saves_trials_and_leaves_nothing(dirs: dict[str, Path]) -> None:
    done = layerbench("run", "smoke", dirs=dirs)
    assert done.returncode == 0, done.stdout + done.stderr
    shown = layerbench("show", "latest", "--json", dirs=dirs)
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["run"]["status"] == "finished"
    assert len(data["cells"]) == 2
    assert leftovers(dirs["work"]) == []
    assert list(dirs["work"].iterdir()) == []  # not even a daemon's log or an empty run directory
    assert list((dirs["state"] / "locks").iterdir()) == []
    with sqlite3.connect(dirs["state"] / "ledger.db") as db:
        live = db.execute("SELECT kind, ident FROM resources WHERE removed_at IS NULL").fetchall()
    assert live == []


def test_dry_run_touches_nothing(dirs: dict[str, Path]) -> None:
    done = layerbench("run", "quick", "--dry-run", dirs=dirs)
    assert done.returncode == 0, done.stderr
    assert "18 cells" in done.stdout
    assert not dirs["db"].exists() and not dirs["work"].exists() and not dirs["state"].exists()
