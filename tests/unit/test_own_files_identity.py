"""A workload's own files are part of its cells' identity (issue 55): an edited pgbench script, fio job file or
job file's include makes other cells, and a run whose files changed since it started is refused by `resume`
(the rule for a run whose cells this host no longer builds), with the file named."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from layerbench import api
from layerbench.errors import PrerequisiteError
from layerbench.run import host
from layerbench.run.start import edited_files
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.load import validate
from layerbench.spec.matrix import expand
from layerbench.spec.models import STORED_CONTEXT, Experiment, FioWorkload
from layerbench.store.db import Store
from layerbench.workloads import fio_kind
from layerbench.workloads.fio import FioParseError

DATA = Path(__file__).parents[1] / "data"


def files(tmp: Path) -> dict[str, Path]:
    """Copies of our own job file (with its includes) and pgbench scripts, to edit."""
    shutil.copytree(DATA / "jobfiles" / "layerbench" / "own", tmp / "jobs")
    shutil.copytree(DATA / "pgbench" / "15" / "scripts", tmp / "scripts")
    return {
        "job": tmp / "jobs" / "iops-quick.fio",
        "read": tmp / "scripts" / "read.sql",
        "write": tmp / "scripts" / "write.sql",
    }


def spec(f: dict[str, Path]) -> dict[str, object]:
    return {
        "name": "own-files",
        "device": {"kind": "zram", "size": "1GiB"},
        "stacks": [
            {"filesystem": "ext4", "engine": "native", "placement": "host-dir"},
            {"filesystem": "ext4", "engine": "native", "placement": "host-dir", "server": "postgres"},
        ],
        "workloads": [
            {"name": "kbench", "job_file": str(f["job"]), "size": "32MiB"},
            {"kind": "pgbench", "name": "mine", "scripts": [{"path": str(f["read"]), "weight": 3}, str(f["write"])]},
        ],
    }


def cell_ids(exp: Experiment, caps: HostCaps) -> dict[str, str]:
    matrix = expand(exp, caps)
    assert matrix.refused == [] and len(matrix.cells) == len(exp.workloads)
    return {c.workload.name: c.id for c in matrix.cells}


def include_of(job: Path) -> Path:
    name = next(line.split()[1] for line in job.read_text().splitlines() if line.startswith("include"))
    return job.parent / name


def test_editing_a_script_a_job_file_or_its_include_changes_the_cell_and_not_another(
    tmp_path: Path, full_caps: HostCaps
) -> None:
    f = files(tmp_path)
    before = cell_ids(validate(spec(f)), full_caps)
    f["write"].write_text(f["write"].read_text() + "\\sleep 1 ms\n")
    after = cell_ids(validate(spec(f)), full_caps)
    assert after["mine"] != before["mine"] and after["kbench"] == before["kbench"]
    include = include_of(f["job"])
    include.write_text(include.read_text() + "iodepth=8\n")
    edited = cell_ids(validate(spec(f)), full_caps)
    assert edited["kbench"] != after["kbench"] and edited["mine"] == after["mine"]
    # The same content again is the same cell: identity is the content, not the file's time.
    include.write_text(include.read_text().removesuffix("iodepth=8\n"))
    assert cell_ids(validate(spec(f)), full_caps)["kbench"] == before["kbench"]


def test_a_stored_cell_keeps_what_it_ran_with_and_reads_without_its_files(tmp_path: Path, full_caps: HostCaps) -> None:
    f = files(tmp_path)
    exp = validate(spec(f))
    stored = yaml.safe_load(exp.model_dump_json())
    shutil.rmtree(tmp_path / "jobs")
    shutil.rmtree(tmp_path / "scripts")
    again = Experiment.model_validate(stored, context=STORED_CONTEXT)
    assert cell_ids(again, full_caps) == cell_ids(exp, full_caps)
    assert [w.own_files() for w in again.workloads] == [w.own_files() for w in exp.workloads]
    assert all(digest for w in exp.workloads for digest in w.own_files().values())


def test_a_workload_without_files_dumps_as_before(tmp_path: Path) -> None:
    exp = validate({**spec(files(tmp_path)), "workloads": [{"name": "RR"}, {"kind": "pgbench", "name": "tpcb"}]})
    dumped = [w.model_dump(mode="json") for w in exp.workloads]
    assert all("digest" not in str(d) for d in dumped) and [w.own_files() for w in exp.workloads] == [{}, {}]


def test_resume_of_a_run_whose_script_changed_is_refused_with_the_file_named(tmp_path: Path) -> None:
    f = files(tmp_path)
    exp = validate(spec(f))
    store = Store.open(tmp_path / "r.db")
    run_id = store.new_run(exp.name, exp.model_dump_json(), exp.digest(), host.describe(api.CACHE_DIR))
    places = api.Places(tmp_path / "work", tmp_path / "state", api.CACHE_DIR)
    f["read"].write_text(f["read"].read_text().replace("abalance", "aid"))
    include = include_of(f["job"])
    include.write_text(include.read_text() + "iodepth=8\n")
    with pytest.raises(PrerequisiteError) as refused:
        api.resume_run(run_id, store, places)
    assert str(refused.value) == (
        f"run {run_id} cannot be resumed: kbench: {f['job']} changed since the run started; "
        f"mine: {f['read']} changed since the run started"
    )
    # Put back as they were, the files are the run's again.
    f["read"].write_text((DATA / "pgbench" / "15" / "scripts" / "read.sql").read_text())
    include.write_text((DATA / "jobfiles" / "layerbench" / "own" / include.name).read_text())
    assert edited_files(Experiment.model_validate(exp.model_dump(), context=STORED_CONTEXT), validate(spec(f))) == []
    store.close()


class Place:
    """Where fio would run: a directory of the test's (workloads/kind.Place)."""

    def __init__(self, path: Path) -> None:
        self.path, self.path_is_device = str(path), False

    def put(self, name: str, text: str) -> str:
        (Path(self.path) / name).write_text(text)
        return str(Path(self.path) / name)


@pytest.mark.requires_fio  # fio reads the job file
def test_a_job_file_edited_while_its_run_runs_stops_the_run_before_fio_runs_it(tmp_path: Path) -> None:
    f = files(tmp_path)
    (w,) = [w for w in validate(spec(f)).workloads if isinstance(w, FioWorkload)]
    place = Place(tmp_path)
    assert fio_kind.argv(w, place, tmp_path, None)[-1].endswith("lb-kbench.fio")
    include = include_of(f["job"])
    include.write_text(include.read_text() + "iodepth=8\n")
    with pytest.raises(FioParseError, match="or an include\\) changed since the run started"):
        fio_kind.argv(w, place, tmp_path, None)
