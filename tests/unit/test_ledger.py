from __future__ import annotations

from pathlib import Path

import pytest

from layerbench.stack.ledger import Ledger, tracked


def test_recorded_before_create_and_removed_after(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.db", "run-1")
    seen_live: list[int] = []

    def create(rid: int) -> str:
        seen_live.append(len(ledger.live("run-1")))
        ledger.update(rid, ident="/dev/loop9", backing="f.img")
        return "obj"

    with tracked(ledger, "loop", "f.img", create, lambda obj: None) as obj:
        assert obj == "obj"
        live = ledger.live("run-1")
        assert [(r.kind, r.ident, r.detail["backing"]) for r in live] == [("loop", "/dev/loop9", "f.img")]
    assert seen_live == [1]
    assert ledger.live() == []


def test_failed_create_stays_live_for_cleanup(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.db", "run-2")

    def create(rid: int) -> str:
        raise OSError("half-made")

    with pytest.raises(OSError), tracked(ledger, "mount", "/mnt/x", create, lambda o: None):
        pass
    assert [r.ident for r in ledger.live("run-2")] == ["/mnt/x"]


def test_remove_runs_on_error_inside(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.db", "run-3")
    removed: list[str] = []
    with pytest.raises(RuntimeError), tracked(ledger, "dir", "d", lambda rid: "d", removed.append):
        raise RuntimeError("trial blew up")
    assert removed == ["d"] and ledger.live() == []
