"""MkDocs hook (mkdocs.yml `hooks:`): a page shows a section of README.md where it says
`<!-- readme: NAME -->`, the text between README's `<!-- site:start NAME -->` and
`<!-- site:end NAME -->`. README.md keeps what a first-time user reads on the repository's front
page; the site shows the same words, not a copy that drifts. README's links point into docs/
(`docs/how-to/vms.md`); they are rewritten relative to the page that shows them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

INCLUDE = re.compile(r"^<!-- readme: ([a-z0-9-]+) -->$", re.M)
MARKER = re.compile(r"^<!-- site:(?:start|end) [a-z0-9-]+ -->\n", re.M)


def readme_section(readme: str, name: str) -> str:
    """The text of README's section NAME, without its own or nested markers; KeyError if absent."""
    start, end = f"<!-- site:start {name} -->\n", f"<!-- site:end {name} -->"
    if readme.count(start) != 1 or readme.count(end) != 1:
        raise KeyError(f"README.md has no one section {name!r} (markers {start.strip()} ... {end})")
    body = readme.split(start, 1)[1].split(end, 1)[0]
    return MARKER.sub("", body)


def relink(text: str, page_path: str) -> str:
    """README's links into docs/ made relative to the page at PAGE_PATH (relative to docs/)."""
    up = "../" * page_path.count("/")
    return text.replace("](docs/", f"]({up}")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    readme = (Path(config["docs_dir"]).parent / "README.md").read_text()
    src = page.file.src_uri
    return INCLUDE.sub(lambda m: relink(readme_section(readme, m.group(1)), src), markdown)
