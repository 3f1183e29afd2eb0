"""A run's analysis read back from its cache (report.view.cached_view, store.cache.computed) is the one computed
from the database: the same `show --json` on a real run; a pickle this user's key did not sign is never
unpickled; and json_text writes what json.dumps(indent=2) writes."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from layerbench.cli.app import app
from layerbench.report import json_text
from layerbench.report.terminal import show_json
from layerbench.report.view import cached_view, view
from layerbench.store import cache
from layerbench.store.db import Store
from layerbench.store.read import load

DATA = Path(__file__).resolve().parent.parent / "data"
REAL_RUNS = [DATA / "quick" / "run.db", DATA / "plan" / "scaling.db"]  # fio cells; database cells and monitor


def pickles(db: Path) -> list[str]:
    return sorted(p.name.split("-", 1)[0] for p in (db.parent / f"{db.name}-cache").glob("*/*.pickle"))


@pytest.fixture(autouse=True)
def own_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))


@pytest.mark.parametrize("real", REAL_RUNS, ids=lambda p: p.parent.name)
def test_the_cached_analysis_of_a_real_run_is_the_computed_one(tmp_path: Path, real: Path) -> None:
    db = tmp_path / real.name
    shutil.copy(real, db)
    store = Store.open(db, create=False)
    computed = json_text.dumps(show_json(view(load(store, "latest", latency=True))))
    first = cached_view(store, "latest", latency=True)  # computes and pickles
    assert pickles(db) == ["cells", "view_latency"]
    again = cached_view(store, "latest", latency=True)  # unpickles
    assert json_text.dumps(show_json(first)) == computed
    assert json_text.dumps(show_json(again)) == computed
    assert again.data.samples is not first.data.samples  # read from the columnar cache, not pickled
    assert isinstance(again.data.trials, cache.Deferred)  # read when first used
    assert again.data.cells == first.data.cells and again.data.checks == first.data.checks
    assert [t.id for t in again.data.trials] == [t.id for t in first.data.trials]
    assert len(again.data.samples) == len(first.data.samples) > 0
    assert cache.key_file().stat().st_mode & 0o077 == 0


def test_a_pickle_signed_by_another_key_is_rebuilt_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "run.db"
    shutil.copy(REAL_RUNS[0], db)
    store = Store.open(db, create=False)
    cached_view(store, "latest")
    (path,) = (tmp_path / "run.db-cache").glob("*/view-*.pickle")
    written = path.read_bytes()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "another-user"))  # another key: the file is foreign
    loads = []
    monkeypatch.setattr(cache._Unpickler, "load", lambda self: loads.append(1))
    rebuilt = cached_view(store, "latest")
    assert not loads and rebuilt.results
    assert path.read_bytes() != written  # signed again, with this key


def test_a_running_run_is_computed_each_time(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    shutil.copy(REAL_RUNS[0], db)
    store = Store.open(db, create=False)
    store.mark(store.resolve_run("latest"), "running")
    assert cached_view(store, "latest").results
    assert pickles(db) == []  # nor its cells


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=30,
)


@given(JSON)
def test_json_text_is_json_dumps_with_indent(value: object) -> None:
    assert json_text.dumps(value) == json.dumps(value, indent=2)


def test_json_text_with_nan_is_still_json_dumps() -> None:
    value = {"a": [math.nan, math.inf, 1.5]}
    assert json_text.dumps(value) == json.dumps(value, indent=2)


def test_a_reports_figures_are_drawn_once_per_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from layerbench.report import html

    db = tmp_path / "run.db"
    shutil.copy(REAL_RUNS[0], db)
    args = ["report", "latest", "--db", str(db), "--html"]
    first = CliRunner().invoke(app, [*args, str(tmp_path / "first")])
    assert first.exit_code == 0, first.output

    def drawn_again(*_: object) -> list[html.Drawn]:
        raise AssertionError("drawn again")

    monkeypatch.setattr(html, "drawn", drawn_again)
    again = CliRunner().invoke(app, [*args, str(tmp_path / "again")])
    assert again.exit_code == 0, again.output
    names = sorted(p.name for p in (tmp_path / "first" / "figures").iterdir())
    assert names and names == sorted(p.name for p in (tmp_path / "again" / "figures").iterdir())
    for name in names:
        assert (tmp_path / "first" / "figures" / name).read_bytes() == (
            tmp_path / "again" / "figures" / name
        ).read_bytes()
    assert (tmp_path / "first" / "report.html").read_text() == (tmp_path / "again" / "report.html").read_text()
