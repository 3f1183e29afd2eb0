"""The HTML report of a real short run, opened in headless Chromium: a screenshot, and the table and
figures present in the page it rendered."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integration.test_run_cli import layerbench

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_fio, pytest.mark.requires_docker, pytest.mark.slow]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (make test installs it)")
def test_report_renders_in_a_browser(tmp_path: Path) -> None:
    dirs = {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    assert layerbench("run", "smoke", dirs=dirs).returncode == 0
    done = layerbench("report", "latest", "--html", str(tmp_path / "report"), dirs=dirs)
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "report" / "report.html").as_uri()
    browser = [str(CHROMIUM), *FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    shot = tmp_path / "shot.png"
    subprocess.run(
        [*browser, f"--screenshot={shot}", "--window-size=1200,1600", page],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.stat().st_size > 20_000  # a blank page is a few KiB
    dom = subprocess.run([*browser, "--dump-dom", page], capture_output=True, text=True, timeout=120, check=True).stdout
    assert 'id="results"' in dom and "ext4/docker:overlay2/volume" in dom
    assert dom.count("<svg") >= 2  # the normalized bars and the latency figures
    assert (tmp_path / "report" / "figures" / "normalized.png").exists()
    assert (tmp_path / "report" / "figures" / "normalized.svg").exists()
    assert "http://" not in dom.split("<body")[0] and "https://" not in dom.split("<body")[0]  # no CDN
