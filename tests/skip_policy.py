"""On CI a skip fails, unless it is one this kind of machine cannot avoid (tests/unavoidable_skips.py).

CI (the environment variable CI=true) installs what `make setup` and each tier's make target install,
so a test that skips there for want of one of them proves nothing while the run stays green: its
skip is turned into a failure with the skip's reason. A skip named by the registry stays a skip,
and the session ends with a section listing them: what this machine could not test, and why.
Elsewhere skips stay skips (a developer's machine may lack anything), listed as pytest lists them.

tests/conftest.py imports these hooks; tests/unit/test_skip_policy.py loads them alone (`-p`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import pytest

from tests.unavoidable_skips import UNAVOIDABLE, named

ON_CI = pytest.StashKey[bool]()
CANNOT = pytest.StashKey[list[tuple[str, str]]]()  # (registry entry, test id) of each unavoidable skip
SECTION = "skipped, this machine cannot"
FIX = (
    "CI installs what this needs (make setup, or the tier's make target: make test-k8s, make test-vm), so it"
    " must not skip there; a skip this kind of machine cannot avoid is named in tests/unavoidable_skips.py"
)


def on_ci(environ: Mapping[str, str]) -> bool:
    return environ.get("CI", "").strip().lower() in ("true", "1")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[ON_CI] = on_ci(os.environ)
    config.stash[CANNOT] = []


def skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    """The reason a skip gave (pytest keeps it as (path, line, "Skipped: reason"))."""
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return text.removeprefix("Skipped: ")


def judge(config: pytest.Config, report: pytest.TestReport | pytest.CollectReport) -> None:
    """Keep an unavoidable skip (and note it), fail any other on CI, leave any other elsewhere."""
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = skip_reason(report)
    name = named(reason)
    if name is not None:
        config.stash[CANNOT].append((name, report.nodeid))
    elif config.stash[ON_CI]:
        report.outcome = "failed"
        report.longrepr = f"skipped on CI (CI=true): {reason}\n{FIX}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> pytest.TestReport:
    report: pytest.TestReport = yield
    judge(item.config, report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> pytest.CollectReport:
    report: pytest.CollectReport = yield
    judge(collector.config, report)  # a module that skips as a whole (pytest.skip at module level, importorskip)
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    seen = config.stash.get(CANNOT, [])
    if not seen:
        return
    terminalreporter.section(SECTION)
    for name in sorted({n for n, _ in seen}):
        terminalreporter.write_line(f"{name}: {UNAVOIDABLE[name].why}")
        for _, nodeid in (s for s in seen if s[0] == name):
            terminalreporter.write_line(f"    {nodeid}")
