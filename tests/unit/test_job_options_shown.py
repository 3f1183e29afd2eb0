"""`show`, `show --json` and the HTML report say, once per job file's cell, which of the workload's fields fio took
as its command line's options and which jobs kept the file's own (issue 55): what each trial recorded in its
``info.job_options``, read back from a stored run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from markupsafe import escape

from layerbench.records.info import TrialInfo
from layerbench.records.sample import Sample
from layerbench.records.trial import TrialRecord
from layerbench.report import html
from layerbench.report.terminal import show_json
from layerbench.report.view import view
from layerbench.run.loop import register_cells
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.load import validate
from layerbench.spec.matrix import expand
from layerbench.spec.models import FioWorkload
from layerbench.store.db import Store
from layerbench.store.read import load
from layerbench.workloads import jobfile

pytestmark = pytest.mark.requires_fio  # fio reads the job file, as for a run

JOBS = ["rand-read", "seq-read", "rand-write"]
# No size, and a runtime in one job only: the workload's size reaches every job, its runtime_s two of them.
JOB_FILE = """[global]
ioengine=psync
[rand-read]
rw=randread
[seq-read]
rw=read
[rand-write]
rw=randwrite
runtime=2
"""


def spec(tmp_path: Path) -> dict[str, object]:
    (tmp_path / "own.fio").write_text(JOB_FILE)
    return {
        "name": "given",
        "device": {"kind": "zram", "size": "1GiB"},
        "stacks": [
            {"filesystem": "ext4", "engine": "native", "placement": "host-dir"},
            {"filesystem": "ext4", "engine": "docker:overlay2", "placement": "volume"},
        ],
        "workloads": [
            {"name": "own", "job_file": str(tmp_path / "own.fio"), "size": "32MiB", "runtime_s": 4},
            {"name": "RR", "rw": "randread"},
        ],
    }


def stored(tmp_path: Path, caps: HostCaps) -> Path:
    """A run stored as the run stage stores it: two trials a cell, a job file's with what it was given."""
    exp = validate(spec(tmp_path))
    matrix = expand(exp, caps)
    store = Store.open(tmp_path / "r.db")
    run_id = store.new_run(exp.name, exp.model_dump_json(), exp.digest(), {})
    register_cells(store, run_id, matrix)
    for rep in range(2):
        for i, c in enumerate(matrix.cells):
            w = c.workload
            assert isinstance(w, FioWorkload)
            given = jobfile.options(jobfile.of_workload(w), f"/mnt/{i}", raw=False) if w.job_file else None
            info = TrialInfo(job_options=given)
            sample = Sample("iops", 1000.0 + rep, "IO/s", "read", "job")
            store.record_trial(run_id, TrialRecord(c.id, rep, "ok", None, 0, 1, [], "", "", info, [sample]))
    store.finish_run(run_id, "finished")
    store.close()
    return tmp_path / "r.db"


def test_show_json_and_the_report_give_each_job_files_cell_its_options_once(
    tmp_path: Path, full_caps: HostCaps
) -> None:
    db = stored(tmp_path, full_caps)
    v = view(load(Store.open(db, create=False), "latest"))
    cells = show_json(v)["job_options"]
    assert [c["label"].split(" · ")[1] for c in cells] == ["own", "own"]  # RR has no job file: not listed
    for c in cells:
        options = {o["option"]: o for o in c["options"]}
        assert list(options) == ["size", "runtime", "directory"] and len(c["options"]) == 3  # once, not per trial
        assert options["size"] == {"option": "size", "value": str(32 * 2**20), "applied": JOBS, "overridden": []}
        assert options["runtime"]["applied"] == JOBS[:2] and options["runtime"]["overridden"] == JOBS[2:]
        assert options["directory"]["value"].startswith("/mnt/")
    page = html.render(v, tmp_path / "report", workloads=None).read_text()
    assert 'id="job-options"' in page and str(escape(cells[0]["label"])) in page
    assert page.count("runtime=4s") == 2 and "rand-read, seq-read" in page


def test_show_prints_them_beneath_the_results(tmp_path: Path, full_caps: HostCaps) -> None:
    db = stored(tmp_path, full_caps)
    argv = [sys.executable, "-m", "layerbench.cli", "show", "--db", str(db)]
    done = subprocess.run(
        argv, capture_output=True, text=True, check=True, timeout=120, env={**os.environ, "COLUMNS": "250"}
    )
    text = done.stdout
    assert "job files: what the workload gave fio" in text
    rows = [line for line in text.splitlines() if "runtime=4s" in line]
    assert len(rows) == 2, text  # one per cell
    assert all("rand-read, seq-read" in r and r.rstrip(" │").endswith("rand-write") for r in rows)
