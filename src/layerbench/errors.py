"""Typed errors. The library raises these; only the CLI turns them into
messages and exit codes (see ``layerbench.cli.boundary``)."""

from __future__ import annotations

from collections.abc import Sequence


class LayerbenchError(Exception):
    """Base of every error layerbench raises on purpose.

    ``hint`` says what the user can do about it; the CLI prints it on its own line.
    """

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class SpecError(LayerbenchError):
    """The experiment spec is malformed or asks for something impossible."""

    exit_code = 2


class PrerequisiteError(LayerbenchError):
    """The host lacks a tool, kernel feature or privilege a cell needs."""

    exit_code = 3


class ToolError(LayerbenchError):
    """An external tool failed: keeps its argument list, exit code and stderr."""

    exit_code = 4

    def __init__(self, argv: Sequence[str], rc: int | None, stderr: str, hint: str | None = None) -> None:
        self.argv = list(argv)
        self.rc = rc
        self.stderr = stderr
        tail = stderr.strip().splitlines()[-3:] if stderr.strip() else ["(no stderr)"]
        status = "timed out" if rc is None else f"exited {rc}"
        super().__init__(f"{self.argv[0]} {status}: {' | '.join(tail)}", hint)


class TeardownError(LayerbenchError):
    """Something layerbench created could not be removed."""

    exit_code = 5


class StoreError(LayerbenchError):
    """The results database (or a baseline, store/baseline.py) is missing, locked, or of an unknown schema."""

    exit_code = 6
