"""The commands about specs: the built-in presets, and the JSON Schema a spec follows."""

from __future__ import annotations

import json

import typer
from rich.table import Table

from layerbench.cli.boundary import UsageError, boundary
from layerbench.cli.options import JSON_OPTION, console
from layerbench.spec import load as spec_load
from layerbench.spec import schema as spec_schema
from layerbench.spec import seeds


def presets(
    name: str = typer.Argument(None, metavar="[NAME]", help="Print this preset's YAML, as --show NAME does."),
    show: str = typer.Option(
        None,
        "--show",
        metavar="NAME",
        help="Print one preset's YAML (a starting point for your own spec).",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """List the built-in experiments grouped by the paper (seed) each reproduces, or print one as YAML
    (`layerbench presets NAME`, or `--show NAME`)."""
    with boundary():
        if name and show and name != show:
            raise UsageError(f"two presets named: {name} and --show {show}; name one")
        if name or show:
            typer.echo(spec_load.preset_text(name or show))
            return
        items = {n: spec_load.parse(spec_load.preset_text(n), n).description.strip() for n in spec_load.preset_names()}
        groups = seeds.grouped(list(items))
        if as_json:
            listed = {p: {"seed": seed, "description": items[p]} for seed, ps in groups.items() for p in ps}
            typer.echo(json.dumps(listed, indent=2))
            return
        for seed, names in groups.items():
            table = Table("preset", "what it runs", title=seed, title_justify="left", show_lines=True)
            for preset in names:
                table.add_row(preset, items[preset])
            console.print(table)


def schema() -> None:
    """Print the JSON Schema of a spec (generated from its models), for editors that complete and check YAML.

    docs/reference/spec.schema.json is this output, committed; every preset names it in its first line.
    """
    with boundary():
        typer.echo(spec_schema.schema_text(), nl=False)
