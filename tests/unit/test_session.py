from __future__ import annotations

import stat
from pathlib import Path

import pytest

from layerbench.errors import PrerequisiteError
from layerbench.run.session import check_space, running
from layerbench.stack.runlock import hold, is_live, lock_path
from layerbench.store.db import Store


def test_run_directory_and_lock_are_private_and_status_is_recorded(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "r.db")
    run_id = store.new_run("t", "{}", "d", {})
    with running(store, run_id, tmp_path / "work", tmp_path / "state") as (ctx, reclaimed):
        assert stat.S_IMODE(ctx.work_dir.stat().st_mode) == 0o700
        assert stat.S_IMODE(lock_path(tmp_path / "state", run_id).stat().st_mode) == 0o600
        assert is_live(tmp_path / "state", run_id) and reclaimed == []
    assert not is_live(tmp_path / "state", run_id)
    assert store.run(run_id).status == "finished"
    assert not (tmp_path / "work" / run_id).exists()  # empty run directories do not linger


def test_a_run_is_held_by_one_process_only(tmp_path: Path) -> None:
    with hold(tmp_path, "r1"), pytest.raises(PrerequisiteError, match="already running"), hold(tmp_path, "r1"):
        pass


def test_interrupt_is_recorded(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "r.db")
    run_id = store.new_run("t", "{}", "d", {})
    with pytest.raises(KeyboardInterrupt), running(store, run_id, tmp_path / "w", tmp_path / "s"):
        raise KeyboardInterrupt
    assert store.run(run_id).status == "interrupted"


def test_space_check_says_what_is_free_and_needed(tmp_path: Path) -> None:
    with pytest.raises(PrerequisiteError, match=r"GiB free; this experiment needs about"):
        check_space(tmp_path / "not" / "yet", 2**60)
