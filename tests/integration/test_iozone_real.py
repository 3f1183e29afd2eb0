"""IOzone itself through the whole pipeline (seed 004): natively and in a container, a surface per
operation, the ratio table folding each surface, the report drawing it."""

from __future__ import annotations

import json
import math
import sqlite3
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
    volume, native = cells["zram/ext4/docker:overlay2/volume"], cells["zram/ext4/native/host-dir"]
    assert volume["metric"] == "iozone_geomean" and volume["summary"]["n"] == 2 and native["is_baseline"]
    # Each trial's headline is the geometric mean of every point of its surface, as stored beside it
    # (the points span orders of magnitude: an arithmetic mean would be the cached rereads')...
    headlines = {}
    with sqlite3.connect(dirs["db"]) as db:
        for label, trial, metric, value in db.execute(
            "SELECT c.stack_label, t.repetition, s.metric, s.value FROM samples s JOIN trials t ON t.id = s.trial_id"
            " JOIN cells c ON c.run_id = t.run_id AND c.cell_id = t.cell_id"
            " WHERE s.metric IN ('iozone_geomean', 'bw') ORDER BY s.rowid"
        ):
            got = headlines.setdefault((label, trial), {"points": []})
            got.update({"geomean": value} if metric == "iozone_geomean" else {"points": [*got["points"], value]})
    assert len(headlines) == 4
    for got in headlines.values():
        assert len(got["points"]) >= 4 * 3  # four points of at least write, rewrite and read
        geomean = math.exp(sum(math.log(v) for v in got["points"]) / len(got["points"]))
        assert got["geomean"] == pytest.approx(geomean, rel=1e-9), got
    # ...the cell's mean is its trials' headlines' mean...
    volume_label, native_label = "zram/ext4/docker:overlay2/volume", "zram/ext4/native/host-dir"
    for label, cell in ((volume_label, volume), (native_label, native)):
        mine = [g["geomean"] for (lb, _), g in headlines.items() if lb == label]
        assert cell["summary"]["mean"] == pytest.approx(sum(mine) / len(mine), rel=1e-9), (label, mine)
    # ...and its ratio to native ext4, its baseline, pairs them by round: the geometric mean of the rounds'
    # ratios (analysis/comparisons.py), not the ratio of the means.
    heads = {key: got["geomean"] for key, got in headlines.items()}
    rounds = [math.log(heads[(volume_label, r)] / heads[(native_label, r)]) for lb, r in heads if lb == volume_label]
    assert volume["ratio"]["ratio"] == pytest.approx(math.exp(sum(rounds) / 2), rel=1e-9), rounds
    shown = support.run(["show", "latest"], dirs).stdout
    for op in ("iozone write", "iozone rewrite", "iozone read", "iozone reread", "iozone randread"):
        assert op in shown  # seed 004's table: a row per operation, its surface folded
    report = support.run(["report", "latest", "--html", str(tmp_path / "report")], dirs)
    assert report.returncode == 0, report.stderr
    assert (tmp_path / "report" / "figures" / "surfaces.svg").exists()
    assert leftovers(dirs["work"]) == []
