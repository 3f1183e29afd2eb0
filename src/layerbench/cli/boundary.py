"""The single error boundary: typed errors become one clear message and an exit code."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import NoReturn

from rich.console import Console

from layerbench.errors import LayerbenchError

# Documented in docs/reference/exit-codes.md and docs/how-to/ci-gates.md; keep them in step. Besides these:
# 2 usage or spec, 3 prerequisite, 4 tool, 5 teardown, 6 results database (errors.py's exit_code).
EXIT_OK = 0
EXIT_TRIALS_FAILED = 1
EXIT_REGRESSION = 7  # compare/check: a comparison is worse than --fail-if-slower/--fail-if-faster allows
EXIT_INTERRUPTED = 130

err_console = Console(stderr=True, highlight=False)


class UsageError(LayerbenchError):
    """The command line asks for something that cannot be done as asked."""

    exit_code = 2


class Terminated(KeyboardInterrupt):
    """SIGTERM, turned into the same unwinding as Ctrl-C so teardown runs."""


def _on_sigterm(signum: int, frame: FrameType | None) -> NoReturn:
    raise Terminated()


@contextmanager
def boundary() -> Iterator[None]:
    previous: Callable[..., object] | int | None = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    except LayerbenchError as exc:
        err_console.print(f"[bold red]error:[/] {exc}")
        if exc.hint:
            err_console.print(f"[dim]hint:[/] {exc.hint}")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err_console.print(
            "[yellow]interrupted:[/] every finished trial is saved and the layers built so far were torn "
            "down; continue with `layerbench resume latest`"
        )
        sys.exit(EXIT_INTERRUPTED)
    finally:
        signal.signal(signal.SIGTERM, previous)
