"""Progress where no terminal watches: a line per finished trial, with the ETA."""

from __future__ import annotations

import io
import re

from rich.console import Console

from layerbench.cli.progress import TrialProgress
from layerbench.records.info import TrialInfo
from layerbench.records.trial import TrialRecord
from layerbench.run.schedule import Trial
from layerbench.spec.load import parse
from layerbench.spec.matrix import expand_stacks
from layerbench.spec.models import Cell

SPEC = """
name: p
device: {kind: zram, size: 256MiB}
stacks: [{filesystem: ext4, engine: native, placement: host-dir}]
workloads: [{name: RR, rw: randread, bs: 4k, size: 64MiB}]
trials: {repetitions: 3}
"""


def record(cell_id: str, rep: int, status: str) -> TrialRecord:
    return TrialRecord(
        cell_id, rep, status, None, 100.0, 102.5, [], "", "boom" if status != "ok" else "", TrialInfo(), []
    )


def test_a_pipe_gets_a_line_per_trial_with_its_eta() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    exp = parse(SPEC)
    cell = Cell(stack=expand_stacks(exp)[0], workload=exp.workloads[0])
    with TrialProgress(console, 3) as progress:
        for rep, status in enumerate(["ok", "failed", "ok"]):
            progress.advance(Trial(cell, rep), record(cell.id, rep, status))
    lines = [line for line in out.getvalue().splitlines() if line.startswith("[")]
    assert [line.split("]")[0] for line in lines] == ["[1/3", "[2/3", "[3/3"]
    assert all(re.search(r"\(2\.5 s\), elapsed \d+:\d\d:\d\d, eta (\d+:\d\d:\d\d|\?)$", line) for line in lines), lines
    assert " #1 failed " in lines[1] and cell.label() in lines[0]
