"""The job-file and spec fuzz of tests/unit/test_jobfile_fuzz.py at 5,500 cases (about 15 s), and fio's own
reading of 150 generated job files, each then judged, counted and rewritten (about 40 s: fio takes 0.2 s a
file here). Derandomized: the same cases every run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layerbench.workloads import jobfile
from tests.unit import test_jobfile_fuzz as unit

pytestmark = [pytest.mark.timeout(600)]

test_any_reading_is_judged_counted_and_rewritten = settings(unit.FUZZ, max_examples=2000)(
    unit.READINGS(unit.judged_counted_and_rewritten)
)
test_sections_and_fios_command_line_are_split_without_error = settings(unit.FUZZ, max_examples=1500)(
    unit.SPLITS(unit.split_without_error)
)
test_any_size_is_bytes_or_none = settings(unit.FUZZ, max_examples=1000)(unit.SIZES(unit.bytes_or_none))


@settings(unit.FUZZ, max_examples=1000)
@unit.SPECS
def test_any_workload_spec_is_valid_or_one_spec_error(changes: dict[str, Any], use_file: bool) -> None:
    unit.valid_or_one_spec_error(unit.A_JOB_FILE, changes, use_file)


LINES = st.one_of(
    st.sampled_from(["[global]", "[a]", "[b]", "; comment", "include part.fio", "include /nonexistent.fio"]),
    st.tuples(st.sampled_from([*unit.KEYS, "iodepth", "runtime", "time_based"]), st.sampled_from(unit.VALUES)).map(
        lambda kv: f"{kv[0]}={kv[1]}"
    ),
    st.tuples(st.sampled_from(unit.KEYS), st.sampled_from(unit.VALUES), st.sampled_from(["\t; c", " # c", ""])).map(
        lambda kv: f"{kv[0]}={kv[1]}{kv[2]}"
    ),
    st.text(unit.line, max_size=16),
)


@pytest.mark.requires_fio
@settings(unit.FUZZ, max_examples=150)
@given(lines=st.lists(LINES, max_size=10), part=st.lists(LINES, max_size=3), raw=st.booleans())
def test_fio_reads_any_generated_file_and_layerbench_judges_it(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str], part: list[str], raw: bool
) -> None:
    where: Path = tmp_path_factory.mktemp("gen")
    (where / "part.fio").write_text("\n".join(part) + "\n")
    (where / "job.fio").write_text("\n".join(["[first]", *lines]) + "\n")  # most are sections, then
    jf = jobfile.read(where / "job.fio")
    assert (jf.error is None) == bool(jf.jobs)
    reason = jobfile.refusal(jf, raw)
    assert reason is None or "\n" not in reason
    if reason is None:
        assert jobfile.footprint(jf) is not None and jobfile.rewrite(jf, "/data", raw)
