"""Job files from the corpus through the CLI: `run --dry-run` judges each with one line and starts nothing;
a handful, chosen for coverage, run for real natively and in a Docker volume (22 s under the lock here:
two stacks, four short job files; each file runs in a second or two)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import support
from tests.integration.leftovers import leftovers
from tests.jobfile_corpus import CORPUS, PLACES

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_fio, pytest.mark.requires_docker, pytest.mark.slow]

# A file engine reading backwards; fio's null engine (no files, no space); a file-operations engine
# (fio's filestat); and the lines that crashed layerbench's reader: include, inline comments, $vars.
REAL = {
    "backwards": "corpus/backwards-read.fio",
    "zipf-null": "corpus/zipf-null.fio",
    "filestat": "corpus/filestat.fio",
    "comments": "layerbench/comments-and-includes.fio",
}
REFUSED = {
    "whole-device": "corpus/whole-device.fio",
    "exec": "corpus/exec-program.fio",
    "rbd": "corpus/rbd-pool.fio",
    "suite-env": "perf-suite/random_reads.fio",
}


def spec(tmp: Path, files: dict[str, str]) -> Path:
    data: dict[str, Any] = {
        "name": "jobfiles",
        "device": {"kind": "loop", "size": "1GiB"},
        "stacks": list(PLACES.values()),
        "workloads": [{"name": name, "job_file": str(CORPUS / path), "runtime_s": 30} for name, path in files.items()],
        "baseline": PLACES["native"],
    }
    path = tmp / "jobfiles.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    return {"db": tmp_path / "results.db", "work": tmp_path / "work", "state": tmp_path / "state"}


def test_dry_run_judges_each_job_file_in_one_line(tmp_path: Path, dirs: dict[str, Path]) -> None:
    done = support.run(["run", str(spec(tmp_path, {**REAL, **REFUSED})), "--dry-run"], dirs, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    out = " ".join(done.stdout.split())
    for said in (
        "filename=/dev/nvme0n1 names a path outside the placement",
        "ioengine=exec runs a program as root",
        "ioengine=rbd reaches storage elsewhere",
        "failed parsing directory=${DIRECTORY}",
    ):
        assert said in out, done.stdout
    assert not dirs["db"].exists() and not dirs["work"].exists() and not dirs["state"].exists()


def test_accepted_job_files_run_natively_and_in_a_volume(tmp_path: Path, dirs: dict[str, Path]) -> None:
    done = support.run(["run", str(spec(tmp_path, REAL))], dirs, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    shown = support.run(["show", "latest", "--json"], dirs, timeout=60)
    data = json.loads(shown.stdout)
    assert data["run"]["status"] == "finished"
    assert len(data["cells"]) == len(REAL) * len(PLACES)
    assert leftovers(dirs["work"]) == []
