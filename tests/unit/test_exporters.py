"""The export formats are one registry (report/exporters.py): the CLI's choices are its names, and each
format's own behaviour (binary, kept by the cache, a table or not) is its entry's."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from layerbench.cli.app import app
from layerbench.report.exporters import EXPORTERS, TABLE_FORMATS


def test_an_unknown_format_is_refused_with_the_registrys_names(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["export", "--db", str(tmp_path / "none.db"), "--format", "xlsx"])
    assert result.exit_code == 2, result.output
    assert all(name in result.output for name in EXPORTERS)


def test_each_exporter_is_a_table_or_writes_the_run_its_own_way() -> None:
    assert TABLE_FORMATS == ("csv", "json", "parquet")
    for name, e in EXPORTERS.items():
        assert e.name == name
        assert (e.frame is None) != (e.run is None), name  # one way to write, never both
        assert e.kept is None or e.frame is not None, name  # only a table's file is kept by the cache
    assert [n for n, e in EXPORTERS.items() if e.binary] == ["parquet"]
