"""A big run's end builds what its first readers would (report/prepared.py): after it, `show`, `show --json`,
`report --html` and `export` of the run read the cache and write nothing; a small run's end builds
nothing (its first reads are quick)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from layerbench.cli import app as cli
from layerbench.cli.results import prepare_reads
from layerbench.report import prepared
from layerbench.store.db import Store

RUN = Path(__file__).resolve().parent.parent / "data" / "quick" / "run.db"


@pytest.fixture(autouse=True)
def own_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))


def cached(db: Path) -> dict[str, int]:
    """The run's cache files, each with the time it was last written."""
    return {p.name: p.stat().st_mtime_ns for p in db.parent.glob(f"{db.name}-cache/*/*")}


def test_a_big_runs_end_prepares_every_read_and_the_reads_write_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "run.db"
    shutil.copy(RUN, db)
    monkeypatch.setattr(prepared, "AHEAD_FROM_SAMPLES", 1)  # the quick run counts as big
    store = Store.open(db, create=False)
    prepare_reads(store, store.resolve_run("latest"))
    before = cached(db)
    parts = {name.split("-", 1)[0] for name in before}
    assert {"view", "view_latency", "view_latency_profiles", "figures12", "config", "csv", "parquet"} <= parts
    runner = CliRunner()
    for args in (
        ["show", "--db", str(db)],
        ["show", "--json", "--db", str(db)],
        ["report", "--html", str(tmp_path / "report"), "--db", str(db)],
        ["export", "--format", "csv", "-o", str(tmp_path / "s.csv"), "--db", str(db)],
        ["export", "--format", "parquet", "-o", str(tmp_path / "s.parquet"), "--db", str(db)],
    ):
        result = runner.invoke(cli.app, args)
        assert result.exit_code == 0, result.output
    assert cached(db) == before  # every read found its part: none built, none rewritten


def test_a_small_runs_end_prepares_nothing(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    shutil.copy(RUN, db)
    store = Store.open(db, create=False)
    assert not prepared.worth_preparing(store, store.resolve_run("latest"))
    prepare_reads(store, store.resolve_run("latest"))
    assert cached(db) == {}


def test_an_interrupted_preparation_leaves_the_run_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while a finished run prepares its reads is not the run interrupted: nothing to resume."""
    db = tmp_path / "run.db"
    shutil.copy(RUN, db)
    monkeypatch.setattr(prepared, "AHEAD_FROM_SAMPLES", 1)

    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(prepared, "ahead", interrupted)
    store = Store.open(db, create=False)
    prepare_reads(store, store.resolve_run("latest"))  # returns: the run's last line still follows
    assert store.run(store.resolve_run("latest")).status == "finished"


def test_a_preparation_that_fails_says_why_and_the_run_keeps_its_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "run.db"
    shutil.copy(RUN, db)
    monkeypatch.setattr(prepared, "AHEAD_FROM_SAMPLES", 1)

    def broken(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(prepared, "ahead", broken)
    store = Store.open(db, create=False)
    prepare_reads(store, store.resolve_run("latest"))  # returns: the run's exit code is its trials'
    assert "not prepared for reading: OSError" in capsys.readouterr().err


KEPT_EXPORT = """
import sys
from typer.testing import CliRunner
from layerbench.cli import app
result = CliRunner().invoke(app.app, sys.argv[1:])
print(result.exit_code, "pandas" in sys.modules, " ".join(result.output.split()))
"""


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_prepared_export_is_written_as_kept_without_pandas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    """pandas and the run's samples are needed only to build an export: a kept one is written as it is, the
    same bytes an export of the run without its cache writes."""
    db, fresh = tmp_path / "run.db", tmp_path / "fresh.db"
    shutil.copy(RUN, db)
    shutil.copy(RUN, fresh)
    monkeypatch.setattr(prepared, "AHEAD_FROM_SAMPLES", 1)
    store = Store.open(db, create=False)
    prepare_reads(store, store.resolve_run("latest"))
    args = ["export", "--format", fmt, "-o", str(tmp_path / f"kept.{fmt}"), "--db", str(db)]
    out = subprocess.run([sys.executable, "-c", KEPT_EXPORT, *args], capture_output=True, text=True, timeout=120)
    code, imported, said = out.stdout.split(maxsplit=2)
    assert (code, imported) == ("0", "False"), out.stdout + out.stderr
    samples = len(Store.open(db, create=False).samples_frame(store.resolve_run("latest")))
    assert f"wrote {samples} samples" in said
    built = CliRunner().invoke(
        cli.app, ["export", "--format", fmt, "-o", str(tmp_path / f"built.{fmt}"), "--db", str(fresh)]
    )
    assert built.exit_code == 0, built.output
    assert (tmp_path / f"kept.{fmt}").read_bytes() == (tmp_path / f"built.{fmt}").read_bytes()
