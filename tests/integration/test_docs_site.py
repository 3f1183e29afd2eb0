"""The documentation site (mkdocs.yml, docs/) built and its front page opened in headless Chromium, as
test_report_browser.py opens the HTML report: a screenshot, and what the page it rendered holds. About
5 s (the build about 2 s; Chromium two short starts); needs no root."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.test_report_browser import CHROMIUM, FLAGS

ROOT = Path(__file__).parent.parent.parent


@pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (make test installs it)")
def test_docs_front_page_renders_in_a_browser(tmp_path: Path) -> None:
    site = tmp_path / "site"
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert built.returncode == 0, built.stderr
    page = (site / "index.html").as_uri()
    browser = [str(CHROMIUM), *FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    shot = tmp_path / "shot.png"
    # 1400 pixels wide: Material shows its navigation beside the page from 1220 on.
    subprocess.run(
        [*browser, f"--screenshot={shot}", "--window-size=1400,1600", page],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.stat().st_size > 20_000  # a blank page is a few KiB
    dom = subprocess.run([*browser, "--dump-dom", page], capture_output=True, text=True, timeout=120, check=True).stdout
    # The front page shows README's opening (tools/mkdocs_readme.py) under the site's navigation.
    assert "What does running a storage-heavy workload in a container really cost you" in dom
    for section in ("Tutorial", "How-to guides", "Reference", "Explanation"):
        assert section in dom
    assert 'href="tutorial/first-run/"' in dom and 'href="reference/spec/"' in dom
    head = dom.split("<body")[0]
    assert "http://" not in head and "https://" not in head  # no web fonts, no CDN: it works offline
