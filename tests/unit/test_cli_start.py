"""The commands that read a run start without the stack: its modules (Docker's and Kubernetes' clients among
them) and scipy.stats were half a second of every `show`, `export`, `report` and `compare`."""

from __future__ import annotations

import subprocess
import sys

from layerbench.cli.options import CACHE_DEFAULT
from layerbench.stack.capabilities import DEFAULT_CACHE

HEAVY = ("layerbench.run.host", "layerbench.run.loop", "layerbench.run.session", "docker", "kubernetes", "scipy.stats")


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
    code = "import sys, layerbench.run.session, layerbench.stack.cleanup; print('kubernetes' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == ["False"]


def test_a_run_and_the_cli_load_pandas_only_to_read_a_run() -> None:
    """pandas (with pyarrow) was 10.8 s of 14 s of every command's start in the modern-host tier's guest:
    `cleanup`, `doctor`, `--help` and a run until its end never read a frame. numpy stays (the trials'
    statistics use it)."""
    modules = "layerbench.cli.app, layerbench.run.loop, layerbench.run.session, layerbench.run.host"
    modules += ", layerbench.stack.cleanup"
    code = f"import sys, {modules}; print(' '.join(m for m in ('pandas', 'pyarrow', 'matplotlib') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == []
