"""The HTML report of a real short run, opened in headless Chromium: a screenshot, and the table and
figures present in the page it rendered; and the report of a cut-down run of the sweeps preset, with its
heatmaps, bandwidth against block size and latency over time."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from layerbench.spec import load as spec_load
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


def small_sweeps(path: Path) -> Path:
    """The sweeps preset cut to a cheap run of its shape: its native stack, both sweeps over two values per axis,
    1 s trials, one round."""
    spec = yaml.safe_load(spec_load.preset_text("sweeps"))
    spec["stacks"] = spec["stacks"][:1]
    spec["device"]["size"] = "512MiB"
    rr, sr = spec["workloads"]
    rr["sweep"] = {"iodepth": [1, 8], "numjobs": [1, 2]}
    sr["sweep"] = {"bs": ["4k", "64k"]}
    for w in (rr, sr):
        w.update(size="64MiB", runtime_s=1, ramp_s=0)
    spec["trials"] = {"repetitions": 1}
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (make test installs it)")
def test_sweep_report_shows_heatmaps_and_latency_over_time(tmp_path: Path) -> None:
    dirs = {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    done = layerbench("run", str(small_sweeps(tmp_path / "sweeps.yaml")), dirs=dirs)
    assert done.returncode == 0, done.stdout + done.stderr
    done = layerbench("report", "latest", "--html", str(tmp_path / "report"), dirs=dirs)
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "report" / "report.html").as_uri()
    browser = [str(CHROMIUM), *FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    shot = tmp_path / "shot.png"
    subprocess.run(
        [*browser, f"--screenshot={shot}", "--window-size=1200,4000", page], capture_output=True, timeout=120,
        check=True,
    )  # fmt: skip
    assert shot.stat().st_size > 20_000
    dom = subprocess.run([*browser, "--dump-dom", page], capture_output=True, text=True, timeout=120, check=True).stdout
    for name in ("qd-jobs-heatmap", "latency-over-time", "bandwidth-block-size"):
        figure = dom.split(f'id="fig-{name}"', 1)[1].split("</figure>", 1)[0]
        assert "<svg" in figure, name  # drawn inline, as the browser rendered it
        assert (tmp_path / "report" / "figures" / f"{name}.png").exists()
    heatmap = dom.split('id="fig-qd-jobs-heatmap"', 1)[1].split("</figure>", 1)[0]
    assert "queue depth (iodepth)" in heatmap and "p99 latency" in heatmap
    assert "seconds into the trial" in dom.split('id="fig-latency-over-time"', 1)[1].split("</figure>", 1)[0]
