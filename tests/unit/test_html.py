"""The HTML report: figures cut to the first workloads of a long sweep, and saying so."""

from __future__ import annotations

from pathlib import Path

import pytest
from markupsafe import escape

from layerbench.cli.boundary import UsageError
from layerbench.cli.results import figure_workloads
from layerbench.report import html
from tests.unit.test_terminal import shown


def test_figures_draw_the_first_workloads_and_the_report_says_how_to_have_all(tmp_path: Path) -> None:
    v = shown(tmp_path)
    path = html.render(v, tmp_path / "cut", workloads=1)
    page = path.read_text()
    note = html.left_out(2, 1)
    assert note is not None and "first 1 of the run's 2 workloads" in note and "--figures all" in note
    assert str(escape(note)) in page
    assert (tmp_path / "cut" / "figures" / "normalized.svg").read_text().startswith("<?xml")
    (results,) = html._inputs(v, {"RR"})["results"]
    assert {r.workload for r in results} == {"RR"} and len(results) == 3


def test_a_report_of_every_workload_leaves_nothing_out(tmp_path: Path) -> None:
    page = html.render(shown(tmp_path), tmp_path / "all", workloads=None).read_text()
    assert 'id="figures-left-out"' not in page and 'id="fig-normalized"' in page
    assert html.left_out(2, 2) is None


def test_figures_option_takes_a_count_or_all() -> None:
    assert figure_workloads("all") is None and figure_workloads("12") == 12
    for bad in ("0", "-3", "many"):
        with pytest.raises(UsageError, match="--figures"):
            figure_workloads(bad)
