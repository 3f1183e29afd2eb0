"""A job file with the workload's fields as fio's command line (``fio --size=64m job.fio``): each job's
defaults, its own value winning; ``env:`` for its ${VARIABLES}; ${LAYERBENCH_TARGET} the placement; what
is refused, by name, before anything runs (issue 55, part 1)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from layerbench.errors import SpecError
from layerbench.records.info import GivenOption, TrialInfo
from layerbench.spec.load import validate
from layerbench.spec.models import FioWorkload
from layerbench.workloads import fio_kind, jobfile

pytestmark = pytest.mark.requires_fio

OWN = Path(__file__).parents[1] / "data" / "jobfiles" / "layerbench" / "own"


def workload(tmp: Path, text: str, **fields: object) -> FioWorkload:
    (tmp / "shared.inc").write_text("ioengine=psync\nbs=4k\n")
    path = tmp / "job.fio"
    path.write_text(text)
    return FioWorkload.model_validate({"name": "own", "job_file": str(path), **fields})


def test_given_fields_are_each_jobs_default_and_its_own_value_wins(tmp_path: Path) -> None:
    text = "[global]\ninclude shared.inc\n[a]\nrw=read\n[b]\nrw=write\nsize=8m\nnumjobs=2\n"
    w = workload(tmp_path, text, size="64m", numjobs=4, runtime_s=3)
    jf = jobfile.of_workload(w)
    a, b = jf.jobs
    assert (a.get("size"), a.get("numjobs"), a.get("runtime")) == (str(64 * 2**20), "4", "3s")
    assert (b.get("size"), b.get("numjobs"), b.get("runtime")) == ("8m", "2", "3s")  # the file's own win
    assert a.get("bs") == "4k"  # the include's, where the workload gives none
    said = {g.option: g for g in jf.given}
    assert said["size"] == GivenOption("size", str(64 * 2**20), ("a",), ("b",))
    assert said["runtime"].applied == ("a", "b") and said["runtime"].overridden == ()
    assert set(said) == {"size", "numjobs", "runtime"}  # bs, iodepth: not written in the spec, not given
    assert jobfile.footprint(jf) == {"[a]#0": 4 * 64 * 2**20, "[b]#1": 2 * 8 * 2**20}
    assert jobfile.refusal(jf, raw=False) is None


def test_defaults_never_override_the_file_nor_stand_in_for_a_size(tmp_path: Path) -> None:
    w = workload(tmp_path, "[a]\nrw=read\ninclude shared.inc\n")
    jf = jobfile.of_workload(w)
    assert jf.given == () and jf.jobs[0].get("size") is None and jf.jobs[0].get("runtime") is None
    # The field's default (256 MiB) is not given: fio would need a size, and the message names the field.
    assert jobfile.refusal(jf, raw=False) == (
        "[a]: it gives no size; on a filesystem placement fio needs size= or filesize= in bytes: "
        "set size: in the workload"
    )
    assert jobfile.refusal(jf, raw=True) is None  # a device has a size of its own


def test_what_is_given_survives_a_dump_a_sweep_and_a_resume(tmp_path: Path) -> None:
    w = workload(tmp_path, "[a]\nrw=read\n", size="16m")
    dumped = w.model_dump(mode="json")
    assert "numjobs" not in dumped and "runtime_s" not in dumped and dumped["size"] == 16 * 2**20
    assert FioWorkload.model_validate(dumped).given() == {"size": str(16 * 2**20)}
    built = FioWorkload(name="f", size="16m")  # a workload of fields dumps every field, as before
    assert "numjobs" in built.model_dump() and "env" not in built.model_dump()
    exp = validate(
        {
            "name": "s",
            "stacks": [{"filesystem": "ext4", "engine": "native", "placement": "host-dir"}],
            "workloads": [{**dumped, "sweep": {"numjobs": [1, 2]}}],
        },
        "test",
    )
    again = validate(yaml.safe_load(exp.model_dump_json()), "resumed")
    assert again.workloads[0].given() == {"size": str(16 * 2**20)}


def test_runtime_in_milliseconds_and_the_trials_time_limit_covers_every_job(tmp_path: Path) -> None:
    w = workload(tmp_path, "[a]\nrw=read\nsize=1m\n[b]\nstonewall\nrw=read\nsize=1m\nruntime=20\n", runtime_s=2.5)
    jf = jobfile.of_workload(w)
    assert [j.get("runtime") for j in jf.jobs] == ["2500ms", "20"]
    assert jobfile.duration_s(jf) == pytest.approx(22.5)
    assert fio_kind.time_limit_s(w, slack=0) == pytest.approx(22.5 + w.ramp_s)


def test_env_variables_are_put_in_by_fio_and_the_target_by_layerbench(tmp_path: Path) -> None:
    text = "[a]\nrw=${FIO_RW}\nfilename=${LAYERBENCH_TARGET}/data.bin\nsize=4m\n"
    w = workload(tmp_path, text, env={"FIO_RW": "randwrite"})
    jf = jobfile.of_workload(w)
    assert jf.jobs[0].get("rw") == "randwrite"
    assert jobfile.refusal(jf, raw=False) is None  # the target is inside the placement
    runs = jobfile.rewrite(jf, "/mnt/place", raw=False)
    assert "filename=/mnt/place/data.bin" in runs and "rw=randwrite" in runs
    assert jobfile.footprint(jf) == {"file ${LAYERBENCH_TARGET}/data.bin": 4 * 2**20}


def test_a_variable_not_given_is_refused_by_name_with_fios_message(tmp_path: Path) -> None:
    w = workload(tmp_path, "[a]\nrw=${LB_TEST_UNSET_RW}\nsize=4m\n")
    assert jobfile.of_workload(w).error == (
        "${LB_TEST_UNSET_RW} is not given: set env: {LB_TEST_UNSET_RW: ...} in the workload "
        "(fio refuses it: fio: failed parsing rw=${LB_TEST_UNSET_RW} | fio: job a dropped)"
    )
    # fio reads an unset variable as "" and may go on (filename=${X}/f is /f): refused all the same.
    quiet = workload(tmp_path, "[a]\nrw=read\nsize=4m\nfilename=${LB_TEST_UNSET_DIR}/f\n")
    assert jobfile.of_workload(quiet).error == (
        "${LB_TEST_UNSET_DIR} is not given: set env: {LB_TEST_UNSET_DIR: ...} in the workload (fio reads it as empty)"
    )


def test_an_include_fio_cannot_read_is_refused_with_its_name(tmp_path: Path) -> None:
    w = workload(tmp_path, "[a]\nrw=read\nsize=4m\ninclude missing.inc\n")
    # fio says "unable to open" and goes on without it (its exit code 0): refused here, with the name.
    assert jobfile.of_workload(w).error == (
        f"include missing.inc: cannot read it: No such file or directory ({tmp_path / 'missing.inc'})"
    )


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"env": {"1X": "a"}}, "env.1X: not a variable's name"),
        ({"env": {"LAYERBENCH_TARGET": "/x"}}, "layerbench fills it in"),
    ],
)
def test_bad_env_is_refused_by_the_spec(tmp_path: Path, fields: dict[str, object], said: str) -> None:
    with pytest.raises(ValueError, match=said):
        workload(tmp_path, "[a]\nrw=read\n", **fields)
    with pytest.raises(ValueError, match="env: applies to a job_file only"):
        FioWorkload(name="f", env={"A": "b"})


def test_a_missing_job_file_is_refused_by_the_spec(tmp_path: Path) -> None:
    data = {"name": "s", "workloads": [{"name": "w", "job_file": str(tmp_path / "none.fio"), "size": "4m"}]}
    with pytest.raises(SpecError, match="no fio job file at"):
        validate(data, "test")


def test_kbench_shaped_files_take_size_from_the_workload() -> None:
    w = FioWorkload(name="kb", job_file=str(OWN / "iops-quick.fio"), size="32m")
    jf = jobfile.of_workload(w)
    assert [j.section for j in jf.jobs] == ["rand-read-iops", "seq-read-iops", "rand-write-iops"]
    assert all(j.get("size") == str(32 * 2**20) and j.get("iodepth") == "16" for j in jf.jobs)
    assert jobfile.refusal(jf, raw=False) is None
    assert jobfile.options(jf, "/mnt/p", raw=False)[-1] == GivenOption("directory", "/mnt/p", jf.given[0].applied)


def test_trial_info_keeps_the_options_key_for_key() -> None:
    info = TrialInfo(job_options=(GivenOption("size", "1m", ("a",), ("b",)),))
    data = info.to_json()
    assert data == {"job_options": [{"option": "size", "value": "1m", "applied": ["a"], "overridden": ["b"]}]}
    assert TrialInfo.from_json(data) == info
    assert (
        info.job_options is not None and info.job_options[0].said() == "size=1m: applied to [a]; the file's own in [b]"
    )


def test_a_workload_with_env_is_hashable_as_the_run_loop_keys_workloads(tmp_path: Path) -> None:
    w = workload(tmp_path, "[a]\nrw=${X}\nsize=1m\n", env={"X": "read"})
    same = FioWorkload.model_validate(w.model_dump())
    assert w == same and {w: 1}[same] == 1
