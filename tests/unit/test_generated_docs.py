"""The documentation site's generated pages are current, and what the site promises holds: every check
the code can raise has a row in the checks reference, every README section a page shows exists, and the
README stays a first-time user's page (issue 34: at most about 300 lines; the rest is in docs/)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).parent.parent.parent


def tool(name: str) -> ModuleType:
    """A script of tools/ (its name has hyphens), imported as a module."""
    spec = importlib.util.spec_from_file_location(name.replace("-", "_"), ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("script", "page"), [("gen-cli-reference", "cli.md"), ("gen-spec-reference", "spec.md")])
def test_generated_reference_is_current(script: str, page: str) -> None:
    committed = (ROOT / "docs" / "reference" / page).read_text()
    assert committed == tool(script).render(), f"docs/reference/{page} is stale: run tools/{script}.py"


def test_the_architecture_page_maps_every_module_as_the_code_describes_it() -> None:
    committed = (ROOT / "docs" / "architecture.md").read_text()
    stale = "docs/architecture.md is stale: run tools/gen-architecture.py"
    assert committed == tool("gen-architecture").render(), stale
    assert "`run/loop.py`: The run loop" in committed  # drawn from the modules' own docstrings


def test_every_command_has_a_section() -> None:
    from layerbench.cli.app import app

    page = (ROOT / "docs" / "reference" / "cli.md").read_text()
    for command in app.registered_commands:
        name = command.name or command.callback.__name__  # type: ignore[union-attr]
        assert f"## `layerbench {name}`" in page


def check_names() -> set[str]:
    """Every check name the code constructs: Check("name", ...) and the volatile-mount check's NAME."""
    found: set[str] = set()
    for source in (ROOT / "src" / "layerbench").rglob("*.py"):
        found |= set(re.findall(r'Check\(\s*"([a-z-]+)"', source.read_text()))
    from layerbench.run.measure import mount_check

    return found | {mount_check.NAME}


def test_every_check_is_in_the_reference() -> None:
    table = (ROOT / "docs" / "reference" / "checks.md").read_text()
    names = check_names()
    assert {"device-accounting", "faster-than-physics", "volatile-mount"} <= names
    missing = sorted(n for n in names if f"| `{n}` |" not in table)
    assert not missing, f"docs/reference/checks.md has no row for {missing}"


def test_every_readme_section_a_page_shows_exists() -> None:
    hook = tool("mkdocs_readme")
    readme = (ROOT / "README.md").read_text()
    shown = [m for page in (ROOT / "docs").rglob("*.md") for m in hook.INCLUDE.findall(page.read_text())]
    assert "first-run" in shown
    for name in shown:
        text = hook.readme_section(readme, name)
        assert text.strip() and "<!-- site:" not in text


def test_readme_links_are_relinked_for_the_page() -> None:
    hook = tool("mkdocs_readme")
    assert hook.relink("see [vms](docs/how-to/vms.md)", "tutorial/first-run.md") == "see [vms](../how-to/vms.md)"
    assert hook.relink("see [vms](docs/how-to/vms.md)", "index.md") == "see [vms](how-to/vms.md)"


def test_readme_stays_short() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 300


def test_every_exit_code_is_in_the_reference() -> None:
    from layerbench import errors
    from layerbench.cli import boundary

    table = (ROOT / "docs" / "reference" / "exit-codes.md").read_text()
    codes = {getattr(boundary, n) for n in dir(boundary) if n.startswith("EXIT_")}
    codes |= {c.exit_code for c in vars(errors).values() if isinstance(c, type) and issubclass(c, Exception)}
    missing = sorted(c for c in codes if f"\n| {c} |" not in table)
    assert not missing, f"docs/reference/exit-codes.md has no row for {missing}"
