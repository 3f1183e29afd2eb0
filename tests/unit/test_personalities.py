from __future__ import annotations

import configparser
from pathlib import Path

import pytest

from layerbench.workloads.personalities import PERSONALITIES, expected_mix, job_file, markdown

DOC = Path(__file__).parent.parent.parent / "docs" / "personalities.md"


def test_the_documentation_is_what_the_code_does() -> None:
    assert DOC.read_text() == markdown()


@pytest.mark.parametrize("name", list(PERSONALITIES))
def test_job_file_sections_and_counts(name: str) -> None:
    parser = configparser.ConfigParser(allow_no_value=True, interpolation=None)
    parser.read_string(job_file(name, 1.0))
    ops = PERSONALITIES[name].ops
    assert parser.sections() == ["global"] + [o.name for o in ops]
    assert sum(expected_mix(name).values()) == pytest.approx(1.0)
    for o in ops:
        section = parser[o.name]
        assert section["filename_format"].startswith(f"{name}.{o.name}.")  # no sharing across personalities
        if o.fsync:
            assert section["fsync"] == "1"
