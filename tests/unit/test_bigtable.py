"""Big tables printed without Rich's layout read as Rich prints them (report/bigtable.py)."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from layerbench.report.bigtable import lines, print_table


def table(rows: int) -> Table:
    t = Table(title="comparison", caption="↓ slower, ↑ faster", title_justify="left", caption_justify="left")
    t.add_column("cell", style="cyan", no_wrap=True)
    t.add_column("n (A, B)")
    t.add_column("B / A\n(ratio)", justify="right")
    for i in range(rows):
        t.add_row(f"loop/ext4/native · RR-iodepth{i}", "8, 8", f"[bold]×1.{i:03d}[/]")
    return t


def rich_text(t: Table) -> list[str]:
    out = io.StringIO()
    Console(file=out, width=400, color_system=None).print(t)
    return [line.rstrip() for line in out.getvalue().splitlines()]


def test_a_big_table_has_rich_s_lines_without_its_layout() -> None:
    assert [line.rstrip() for line in lines(table(150))] == rich_text(table(150))


def test_small_tables_still_go_to_rich() -> None:
    out = io.StringIO()
    print_table(Console(file=out, width=400, color_system=None), table(3))
    assert [line.rstrip() for line in out.getvalue().splitlines()] == rich_text(table(3))


def test_markup_comes_off_as_rich_takes_it_off() -> None:
    from rich.markup import render

    from layerbench.report.bigtable import _plain

    for text in ["RR [dim]IOPS[/]", "[bold]×1.05[/bold] ±3%", "a [1.2, 3] list", "\\[not a tag]", "[link=x]y[/link]"]:
        assert _plain(text) == render(text).plain


def test_a_big_table_is_written_as_console_out_writes_its_lines() -> None:
    """One segment instead of console.out's Text per line: the same characters, on a terminal's console too;
    a tab or a control code in a cell still goes through console.out, which expands or drops it."""
    for t, label in ((table(150), "plain"), (table(150), "tab\there"), (table(150), "bell\x07")):
        if label != "plain":
            t.add_row(label, "1, 1", "×1")
        for terminal in (False, True):
            fast, slow = io.StringIO(), io.StringIO()
            print_table(Console(file=fast, width=80, force_terminal=terminal), t)
            Console(file=slow, width=80, force_terminal=terminal).out("\n".join(lines(t)), highlight=False)
            assert fast.getvalue() == slow.getvalue()
