"""Resources the held stacks share (stack/shared.py): made by the first user, undone by the last."""

from __future__ import annotations

import threading
from contextlib import ExitStack

import pytest

from layerbench.stack.shared import Shared


def loader(events: list[str], name: str):  # type: ignore[no-untyped-def]
    def make(exits: ExitStack) -> str:
        events.append(f"load {name}")
        exits.callback(events.append, f"remove {name}")
        return name

    return make


def test_the_first_user_makes_it_and_the_last_undoes_it_whoever_leaves_first() -> None:
    shared, events = Shared(), []
    first = shared.use(("node1", "image"), loader(events, "image"))
    second = shared.use(("node1", "image"), loader(events, "image"))
    assert first.__enter__() == second.__enter__() == "image"
    first.__exit__(None, None, None)  # the first user released (least recently used) before the other
    assert events == ["load image"] and shared.keys() == [("node1", "image")]
    second.__exit__(None, None, None)
    assert events == ["load image", "remove image"] and shared.keys() == []


def test_keys_are_separate_and_a_resource_is_made_again_after_its_last_user() -> None:
    shared, events = Shared(), []
    with shared.use("a", loader(events, "a")), shared.use("b", loader(events, "b")):
        pass
    with shared.use("a", loader(events, "a")):
        pass
    assert events == ["load a", "load b", "remove b", "remove a", "load a", "remove a"]


def test_a_failed_make_undoes_what_it_did_and_holds_nothing() -> None:
    shared, events = Shared(), []

    def broken(exits: ExitStack) -> str:
        exits.callback(events.append, "undone")
        raise OSError("the daemon refused the archive")

    with pytest.raises(OSError, match="refused"), shared.use("x", broken):
        pass
    assert events == ["undone"] and shared.keys() == []


def test_users_leaving_from_many_threads_undo_it_once() -> None:
    shared, events = Shared(), []
    users = [shared.use("image", loader(events, "image")) for _ in range(8)]
    for user in users:
        user.__enter__()
    threads = [threading.Thread(target=user.__exit__, args=(None, None, None)) for user in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert events == ["load image", "remove image"] and shared.keys() == []


def test_a_forgotten_resource_is_made_anew_and_a_late_forget_keeps_the_new_one() -> None:
    shared, events = Shared(), []
    first, second = shared.use("dockerd", loader(events, "old")), shared.use("dockerd", loader(events, "old"))
    broken = first.__enter__()
    assert second.__enter__() is broken
    shared.forget("dockerd", broken)  # the first stack found its daemon dead
    first.__exit__(None, None, None)
    with shared.use("dockerd", loader(events, "new")) as fresh:
        shared.forget("dockerd", broken)  # the second finds the same dead daemon later: the new one stays
        assert shared.value("dockerd") == fresh == "new"
        second.__exit__(None, None, None)  # its last user gone, the dead one is undone
        assert events == ["load old", "load new", "remove old"]
    assert events[-1] == "remove new" and shared.keys() == []
