"""IOzone itself through the whole pipeline (seed 004): natively and in a container, a surface per
operation, the ratio table folding each surface, the report drawing it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests import support
from tests.integration.leftovers import leftovers

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_docker, pytest.mark.requires_iozone, pytest.mark.slow]

SPEC = {
    "name": "iozone-it",
    "device": {"kind": "zram", "size": "512MiB"},
    "stacks": [
        {"filesystem": "ext4", "engine": "native", "placement": "host-dir"},
        {"filesystem": "ext4", "engine": "docker:overlay2", "placement": "volume"},
    ],
    "workloads": [{"kind": "iozone", "name": "iozone", "sizes": ["64k", "1M"], "records": ["4k", "64k"]}],
    "baseline": {"filesystem": "ext4", "engine": "native", "placement": "host-dir", "same": ["filesystem"]},
    "trials": {"repetitions": 2},
}


def test_iozone_natively_and_in_a_container(tmp_path: Path) -> None:
    dirs = {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    spec = tmp_path / "iozone-it.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    done = support.run(["run", str(spec)], dirs)
    assert done.returncode == 0, done.stdout + done.stderr
    cells = {c["stack_label"]: c for c in json.loads(support.run(["show", "latest", "--json"], dirs).stdout)["cells"]}
    volume = cells["zram/ext4/docker:overlay2/volume"]
    assert volume["metric"] == "iozone_geomean" and volume["summary"]["n"] == 2
    assert volume["ratio"]["ratio"] > 0  # the surface's geometric mean against native ext4
    shown = support.run(["show", "latest"], dirs).stdout
    for op in ("iozone write", "iozone rewrite", "iozone read", "iozone reread", "iozone randread"):
        assert op in shown  # seed 004's table: a row per operation, its surface folded
    report = support.run(["report", "latest", "--html", str(tmp_path / "report")], dirs)
    assert report.returncode == 0, report.stderr
    assert (tmp_path / "report" / "figures" / "surfaces.svg").exists()
    assert leftovers(dirs["work"]) == []
