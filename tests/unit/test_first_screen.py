"""The first screen names each kind of flag once (issue 31: an eight-line explanation per flagged cell
flooded `make run`'s summary); each cell's own detail is one option away."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from layerbench.records.checks import MEANINGS
from layerbench.store.db import Store

RUN = Path(__file__).resolve().parents[1] / "data" / "plan" / "scaling.db"  # a real run with three kinds of flag
QUICK = Path(__file__).resolve().parents[1] / "data" / "quick" / "run.db"  # a real `quick` run, flags and all


def show(*args: str) -> list[str]:
    argv = [sys.executable, "-m", "layerbench.cli", "show", "--db", str(RUN), *args]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=120, env={"COLUMNS": "120"})
    return done.stdout.splitlines()


def test_each_kind_of_flag_is_one_line_with_its_count_and_meaning() -> None:
    lines = show()
    head = next(i for i, line in enumerate(lines) if line.startswith("⚑ flags in 3 of 3 cells"))
    assert "show 20261126-044120-0b53 --checks" in lines[head]
    kinds = [line.split() for line in lines[head + 1 :]]
    assert [(k[0], k[1]) for k in kinds] == [("bottleneck", "3"), ("noisy", "3"), ("contended", "2")]
    assert all(MEANINGS[k[0]] in line for k, line in zip(kinds, lines[head + 1 :], strict=True))
    assert not any("CV 43.6%" in line for line in lines)  # a cell's own detail is not on the first screen


def test_checks_gives_each_flagged_cells_own_detail() -> None:
    text = "\n".join(show("--checks"))
    assert "CV 43.6% over 2 trials" in text and "⚑ flags in" not in text


def test_every_check_that_can_flag_has_a_meaning() -> None:
    src = Path(__file__).resolve().parents[2] / "src" / "layerbench"
    named = {m for p in src.rglob("*.py") for m in re.findall(r'Check\(\s*"([a-z-]+)"', p.read_text())}
    named |= {m for p in src.rglob("*.py") for m in re.findall(r'^NAME = "([a-z-]+)"', p.read_text(), re.M)}
    assert named >= {"contended", "noisy", "limit-applied"} and named <= set(MEANINGS), named - set(MEANINGS)


def test_make_runs_summary_fits_in_40_lines_of_an_80_column_terminal(tmp_path: Path, monkeypatch: Any) -> None:
    from layerbench.cli import results

    db = tmp_path / "run.db"
    shutil.copy(QUICK, db)
    out = io.StringIO()
    monkeypatch.setattr(results, "console", Console(file=out, width=80))
    results.print_run(Store.open(db, create=False), "latest", as_json=False)
    lines = out.getvalue().splitlines()
    assert any(line.startswith("⚑ flags in 8 of 18 cells") for line in lines)
    assert len(lines) + 1 <= 40, len(lines)  # and `run` adds one line: "72 trials ok, 0 failed · results in ..."
