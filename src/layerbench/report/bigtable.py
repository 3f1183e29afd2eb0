"""Print a Rich table of thousands of rows in a fraction of Rich's time.

Rich measures, wraps and styles every cell (4 s for a comparison of 10,500 cells); a table past
``ROWS`` rows is written here instead, as plain lines in the table's own box characters: the same
title, columns, header, alignment and caption, each column as wide as its widest cell, without colours
or wrapping (a line may be wider than the terminal). Smaller tables go to Rich unchanged.
"""

from __future__ import annotations

from rich import box as boxes
from rich.console import Console, ConsoleOptions, RenderResult
from rich.control import STRIP_CONTROL_CODES
from rich.markup import RE_TAGS, render
from rich.segment import Segment
from rich.table import Column, Table
from rich.text import Text

ROWS = 100


def print_table(console: Console, table: Table) -> None:
    if table.row_count <= ROWS:
        console.print(table)
        return
    text = "\n".join(lines(table))
    if "\t" in text or any(chr(code) in text for code in STRIP_CONTROL_CODES):
        console.out(text, highlight=False)  # Rich expands tabs and drops control codes: let it
        return
    console.print(_Plain(text + "\n"), crop=False)


class _Plain:
    """Text written as it is: what ``console.out(text)`` writes of text without tabs or control codes, without
    Rich making a Text of each of its lines (0.3 s of a 10,500-row comparison)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Segment(self.text)


def lines(table: Table) -> list[str]:
    """The table as text lines: title, box, header, rows, caption."""
    columns = table.columns
    header = [_plain(c.header).split("\n") for c in columns]
    cells = [[_plain(v) for v in c._cells] for c in columns]
    widths = [max([len(s) for s in h] + [len(v) for v in col], default=0) for h, col in zip(header, cells, strict=True)]
    frame = table.box or boxes.ASCII
    spans = [w + 2 for w in widths]  # a cell and its padding of one space each side
    out = [_plain(table.title)] if table.title else []
    out.append(frame.get_top(spans))
    height = max((len(h) for h in header), default=1)
    header = [[""] * (height - len(h)) + h for h in header]  # a short header at the bottom, as Rich puts it
    for i in range(height):
        parts = [_fit(h[i], w, c) for h, w, c in zip(header, widths, columns, strict=True)]
        out.append(f"{frame.head_left} " + f" {frame.head_vertical} ".join(parts) + f" {frame.head_right}")
    out.append(frame.get_row(spans, "head", edge=True))
    for r in range(table.row_count):
        parts = [_fit(col[r], w, c) for col, w, c in zip(cells, widths, columns, strict=True)]
        out.append(f"{frame.mid_left} " + f" {frame.mid_vertical} ".join(parts) + f" {frame.mid_right}")
    out.append(frame.get_bottom(spans))
    if table.caption:
        out.append(_plain(table.caption))
    return out


def _plain(value: object) -> str:
    if isinstance(value, Text):
        return value.plain
    text = str(value)
    if "[" not in text:
        return text  # no markup
    if "\\" not in text:
        return RE_TAGS.sub("", text)  # tags alone, none escaped: what render() leaves, in a tenth of its time
    return render(text).plain


def _fit(text: str, width: int, column: Column) -> str:
    if column.justify == "right":
        return text.rjust(width)
    if column.justify == "center":
        return text.center(width)
    return text.ljust(width)
