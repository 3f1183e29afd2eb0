"""Every YAML example in the README and docs/ (every page, at any depth) is a spec layerbench accepts
(one did not: a stack entry sat under workloads, and a user copying it got a SpecError)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from layerbench.spec import load

ROOT = Path(__file__).parent.parent.parent
BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.S | re.M)


def examples() -> list[tuple[str, str]]:
    found = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for n, block in enumerate(BLOCK.findall(doc.read_text()), 1):
            found.append((f"{doc.relative_to(ROOT)}#{n}", block))
    return found


def test_the_docs_have_examples() -> None:
    where = {w.split("#")[0] for w, _ in examples()}
    assert len(examples()) >= 2
    assert any(w.startswith("docs/how-to/") for w in where)  # the pages below docs/ are read too


@pytest.mark.parametrize(("where", "text"), examples(), ids=[w for w, _ in examples()])
def test_example_is_a_valid_spec(where: str, text: str) -> None:
    data = yaml.safe_load(text)
    # An excerpt shows the part it explains; the name is the one field it may leave out.
    load.validate({"name": "doc-example", **data}, source=where)
