"""The commands that read a run start without the stack: its modules (Docker's and Kubernetes' clients among
them) and scipy.stats were half a second of every `show`, `export`, `report` and `compare`."""

from __future__ import annotations

import subprocess
import sys

from layerbench.cli.app import CACHE_DEFAULT
from layerbench.stack.capabilities import DEFAULT_CACHE

HEAVY = ("layerbench.host", "layerbench.pipeline", "layerbench.session", "docker", "kubernetes", "scipy.stats")


def test_the_cli_imports_no_stack_module_until_a_command_needs_one() -> None:
    code = "import sys, layerbench.cli.app; print(' '.join(m for m in sys.modules if m.startswith(%r) or m in %r))"
    out = subprocess.run(
        [sys.executable, "-c", code % ("layerbench.stack", HEAVY)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert out.stdout.split() == []


def test_the_cli_default_cache_is_the_stack_s() -> None:
    assert CACHE_DEFAULT == DEFAULT_CACHE


def test_a_run_imports_the_kubernetes_client_only_for_a_cluster() -> None:
    """The engines' registry names every engine; Kubernetes' is loaded when a cell or a cleanup uses it
    (its client took 0.1-0.45 s of every run's start here)."""
    code = "import sys, layerbench.session, layerbench.stack.cleanup; print('kubernetes' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == ["False"]
