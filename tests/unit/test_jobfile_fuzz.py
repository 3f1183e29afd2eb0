"""Property-based fuzzing (Hypothesis, derandomized: the same cases every run) of what layerbench does
with a job file once fio has read it, and of specs: any input is accepted or refused with one line,
never a traceback. Here 600 + 400 + 300 + 200 = 1,500 cases (about 5 s); tests/long/test_jobfile_fuzz.py
runs the same properties on 2,000 + 1,500 + 1,000 + 1,000 = 5,500, and fio's own reading of generated
job files (0.2 s a file: too slow for thousands in `make test`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layerbench.errors import SpecError
from layerbench.spec.load import validate
from layerbench.workloads import jobfile

FUZZ = settings(
    derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)  # fmt: skip

KEYS = [
    "filename", "directory", "opendir", "filename_format", "size", "filesize", "nrfiles", "numjobs",
    "ioengine", "zonemode", "zonesize", "exec_prerun", "exec_postrun", "write_iolog", "read_iolog",
    "write_bw_log", "replay_redirect", "fill_device", "name", "stonewall", "rw", "bs",
]  # fmt: skip
VALUES = [
    "/dev/sda", "../x", "a:b", "a\\:b", "/tmp/f", "x.dat", "4k", "1.5GiB", "128z", "50%", "4k-64k", "1k:2k",
    "(2*1024)", "(1/0)", "2*1024", "-1", "0", "1", "99999999999999999999999", "null", "net", "exec", "rbd",
    "rdma", "libaio", "external:/x.so", "zbd", "strided", "", "true", "${X}", "$mb_memory",
]  # fmt: skip
# A line of a job file: what fio reads holds no line breaks.
line = st.characters(blacklist_categories=("Cc", "Zl", "Zp"))
value = st.one_of(st.sampled_from(VALUES), st.text(line, max_size=20))
option = st.tuples(st.sampled_from(KEYS) | st.text(line, max_size=8), st.none() | value)
job = st.builds(jobfile.Job, st.text(line, max_size=12), st.lists(option, max_size=8).map(tuple))


READINGS = given(jobs=st.lists(job, max_size=4), raw=st.booleans(), outside=st.booleans(), programs=st.booleans())


def judged_counted_and_rewritten(jobs: list[jobfile.Job], raw: bool, outside: bool, programs: bool) -> None:
    jf = jobfile.JobFile("fuzz.fio", tuple(jobs))
    # An engine asks fio --enghelp once (cached): made-up names would ask it for each.
    known = jobfile.NO_FILES | jobfile.ON_PLACEMENT | jobfile.REMOTE | set(jobfile.HARDWARE) | {"exec"}
    if any(j.engine not in known and not j.engine.startswith("external") for j in jobs):
        return
    reason = jobfile.refusal(jf, raw, outside, programs)
    assert reason is None or (reason and "\n" not in reason)
    sizes = jobfile.footprint(jf)
    assert all(isinstance(v, int) and v >= 0 for v in sizes.values())
    assert jobfile.rewrite(jf, "/data", raw, outside).startswith("[global]\n")


SPLITS = given(
    text=st.lists(
        st.sampled_from(["[global]", "[a]", "[global2]", "[b c]", "; c", "# c", "", "include x.fio", "[]", "["])
        | st.text(max_size=30),
        max_size=12,
    ).map("\n".join),
    shown=st.text(max_size=80),
)


def split_without_error(text: str, shown: str) -> None:
    stray, sections = jobfile._sections(text)
    assert stray is None or not sections
    marker = "lb-1-2-"
    jobs = jobfile._jobs(f"fio --name={marker}0 {shown} --name={marker}1 --bs=4k", marker)
    assert len(jobs) >= 2 and jobs[-1][-1] == ("bs", "4k")


SIZES = given(size=st.one_of(st.sampled_from(VALUES), st.text(max_size=24)), zone=st.integers(0, 2**40))


def bytes_or_none(size: str, zone: int) -> None:
    got = jobfile.fio_bytes(size, zone)
    assert got is None or (isinstance(got, int) and got >= 0)


BASE: dict[str, Any] = {
    "name": "fuzz",
    "device": {"kind": "loop", "size": "1GiB"},
    "stacks": [{"filesystem": "ext4", "engine": "native", "placement": "host-dir"}],
    "workloads": [{"name": "w", "rw": "read"}],
}
SPEC_KEYS = ["job_file", "allow_outside_placement", "allow_programs", "size", "numjobs", "bs", "rw", "ioengine"]
spec_value = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 2**40), st.text(max_size=12), st.sampled_from(["4k", "1GiB", "x"])
)


A_JOB_FILE = Path(__file__).parents[1] / "data" / "jobfiles" / "corpus" / "rand-read.fio"


SPECS = given(changes=st.dictionaries(st.sampled_from(SPEC_KEYS), spec_value, max_size=4), use_file=st.booleans())


def valid_or_one_spec_error(a_job_file: Path, changes: dict[str, Any], use_file: bool) -> None:
    workload = {**BASE["workloads"][0], **changes}
    if use_file:
        workload["job_file"] = str(a_job_file)
    try:
        validate({**BASE, "workloads": [workload]})
    except SpecError as err:
        assert str(err).strip()


# The same properties, fewer cases: `make test` keeps its ten minutes.
test_any_reading_is_judged_counted_and_rewritten = settings(FUZZ, max_examples=600)(
    READINGS(judged_counted_and_rewritten)
)
test_sections_and_fios_command_line_are_split_without_error = settings(FUZZ, max_examples=400)(
    SPLITS(split_without_error)
)
test_any_size_is_bytes_or_none = settings(FUZZ, max_examples=300)(SIZES(bytes_or_none))


@settings(FUZZ, max_examples=200)
@SPECS
def test_any_workload_spec_is_valid_or_one_spec_error(changes: dict[str, Any], use_file: bool) -> None:
    valid_or_one_spec_error(A_JOB_FILE, changes, use_file)
