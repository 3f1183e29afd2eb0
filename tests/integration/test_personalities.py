"""Each Filebench-like personality, run for real: fio's own per-job output shows the
operation mix the personality's definition intends."""

from __future__ import annotations

from pathlib import Path

import pytest

from layerbench import proc
from layerbench.run.kinds.single import workload_argv
from layerbench.spec.models import FioWorkload, StackSpec
from layerbench.stack.build import single
from layerbench.stack.ledger import Ledger
from layerbench.stack.target import BuildContext
from layerbench.workloads import fio
from layerbench.workloads.personalities import PERSONALITIES, expected_mix

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_fio, pytest.mark.slow]
STACK = StackSpec.model_validate(
    {"device": {"kind": "zram", "size": "768MiB"}, "filesystem": "ext4", "engine": "native", "placement": "host-dir"}
)


def test_every_personality_runs_its_intended_mix(tmp_path: Path) -> None:
    ctx = BuildContext(tmp_path, Ledger(tmp_path / "ledger.db", "pers"), "pers", proc.run)
    with single(STACK, ctx, 0) as target:
        for name in PERSONALITIES:
            w = FioWorkload(name=name, personality=name, scale=0.25)
            done = target.run(workload_argv(w, target), 300).check()
            result = fio.parse(done.stdout)
            ops = {j.name: sum(d.total_ios for d in j.directions.values()) for j in result.jobs}
            total = sum(ops.values())
            assert all(j.error == 0 for j in result.jobs), name
            for op, share in expected_mix(name).items():
                assert ops[op] / total == pytest.approx(share, abs=0.01), (name, ops)
            assert fio.total_ops(result) > 0
    assert ctx.ledger.live() == []
