"""The command line: Typer commands that parse, confirm and print, and the one error boundary that turns the
library's typed errors into a line and an exit code. No run logic lives here (run/start.py has it)."""
