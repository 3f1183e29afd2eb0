from __future__ import annotations

from typer.testing import CliRunner

from layerbench.cli.app import app

COMMANDS = ["run", "resume", "cleanup", "show", "report", "compare", "export", "presets", "doctor"]
COMMANDS += ["plan", "plan-check", "check", "baseline", "schema"]


def test_every_command_has_help_that_teaches() -> None:
    runner = CliRunner()
    top = runner.invoke(app, ["--help"])
    assert top.exit_code == 0
    for name in COMMANDS:
        assert name in top.output
        result = runner.invoke(app, [name, "--help"])
        assert result.exit_code == 0, result.output
        assert len(result.output.split()) > 20, f"`{name} --help` says too little"


def test_presets_lists_and_shows() -> None:
    runner = CliRunner()
    listed = runner.invoke(app, ["presets", "--json"])
    assert listed.exit_code == 0
    assert "quick" in listed.output and "smoke" in listed.output
    shown = runner.invoke(app, ["presets", "--show", "smoke"])
    assert shown.exit_code == 0 and "name: smoke" in shown.output


def test_bad_spec_exits_2_with_the_field(tmp_path) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text("name: x\nstacks:\n  - {filesystem: zfs}\nworkloads:\n  - {name: RR}\n")
    result = CliRunner().invoke(app, ["run", str(spec), "--dry-run"])
    assert result.exit_code == 2
    assert "stacks[0].filesystem.type" in result.output
