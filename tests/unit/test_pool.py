"""Which stacks the pool holds across rounds, and which it releases or never holds (stack/pool.py); the builds
themselves are tests/integration/test_held_stacks.py's."""

from __future__ import annotations

from pathlib import Path

import pytest

from layerbench import proc
from layerbench.spec.models import StackSpec
from layerbench.stack.ledger import Ledger
from layerbench.stack.pool import StackPool, not_held
from layerbench.stack.target import BuildContext


def stack(**fields: object) -> StackSpec:
    base = {
        "device": {"kind": "zram", "size": "1GiB"},
        "filesystem": "ext4",
        "engine": "native",
        "placement": "host-dir",
    }
    return StackSpec.model_validate({**base, **fields})


def ctx(tmp_path: Path) -> BuildContext:
    return BuildContext(work_dir=tmp_path, ledger=Ledger(tmp_path / "ledger.db", "t"), run_id="t", runner=proc.run)


def test_a_stack_is_held_from_visit_to_visit_and_the_least_recent_goes_when_room_runs_out(tmp_path: Path) -> None:
    room = {"left": 2}
    ext4, xfs, btrfs = stack(), stack(filesystem="xfs"), stack(filesystem="btrfs")
    with StackPool(ctx(tmp_path), fits=lambda s, _: len(pool.held()) < room["left"]) as pool:
        first = pool.visit(ext4)
        assert pool.visit(xfs) is not first
        assert pool.visit(ext4) is first  # held: the same builder, its files prepared
        assert pool.held() == [xfs, ext4]  # the least recently visited first
        pool.visit(btrfs)  # no room for a third: xfs, visited least recently, is released
        assert pool.held() == [ext4, btrfs]
        assert pool.visit(ext4) is first
    assert pool.held() == []


def test_stacks_that_cannot_be_held_share_the_transient_builder(tmp_path: Path) -> None:
    named = stack(device={"kind": "block", "path": "/dev/vdz"})
    guest = stack(engine="vm", placement="host-dir")
    assert "named" in str(not_held(named)) and "guest" in str(not_held(guest))
    assert not_held(stack()) is None
    with StackPool(ctx(tmp_path)) as pool:
        assert pool.visit(named) is pool.visit(guest)
        assert pool.held() == []


def test_every_round_rebuilds_keeps_nothing(tmp_path: Path) -> None:
    with StackPool(ctx(tmp_path), keep=False) as pool:
        assert pool.visit(stack()) is pool.visit(stack(filesystem="xfs"))
        assert pool.held() == []


def test_closing_tears_every_stack_down_though_one_fails(tmp_path: Path) -> None:
    closed: list[str] = []

    class Builder:
        def __init__(self, name: str, fails: bool = False) -> None:
            self.name, self.fails = name, fails

        def close(self) -> None:
            closed.append(self.name)
            if self.fails:
                raise OSError(f"{self.name}: umount: target is busy")

    pool = StackPool(ctx(tmp_path), fits=lambda s, _: True)
    for name, fs in (("ext4", "ext4"), ("xfs", "xfs")):
        pool.visit(stack(filesystem=fs)).builder = Builder(name, fails=name == "ext4")  # type: ignore[assignment]
    with pytest.raises(OSError, match="target is busy"):
        pool.close()
    assert sorted(closed) == ["ext4", "xfs"] and pool.held() == []
