"""layerbench's commands: the Typer app and the list of its commands, each in the module of what it does
(running.py: run, resume; results.py: show, advise, report, export; host.py: cleanup, doctor; specs.py:
presets, schema; plan.py: plan, plan-check; gates.py: compare, check, baseline; publish.py: publish; serve.py:
serve). Registered here, not by importing a module for its side effects: the list of commands stays in this file."""

from __future__ import annotations

import typer

from layerbench.cli import gates as gates_cli
from layerbench.cli import host, results, running, serve, specs
from layerbench.cli import plan as plan_cli
from layerbench.cli import publish as publish_cli

app = typer.Typer(
    help=(
        "Measure what each layer of the container storage stack costs a real workload.\n\n"
        "Start with `layerbench doctor` (what this host supports), then "
        "`layerbench run smoke` (under a minute) and `layerbench run quick` (about six minutes on 2 cores); "
        "`layerbench show latest` prints the results again."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

app.command()(running.run)
app.command()(running.resume)
app.command()(host.cleanup)
app.command()(results.show)
app.command()(results.advise)
app.command()(results.report)
app.command()(results.export)
app.command()(publish_cli.publish)
app.command()(specs.presets)
app.command()(specs.schema)
app.command()(host.doctor)
app.command("plan")(plan_cli.plan_command)
app.command("plan-check")(plan_cli.check_command)
app.command("compare")(gates_cli.compare_command)
app.command("check")(gates_cli.check_command)
app.add_typer(gates_cli.baseline_app, name="baseline")
app.command("serve")(serve.serve_command)


def main() -> None:
    app()


if __name__ == "__main__":  # python -m layerbench.cli.app, as python -m layerbench.cli
    main()
