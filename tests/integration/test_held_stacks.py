"""Stacks held across rounds (trials.rebuild: once) against stacks rebuilt every round, through the CLI on
zram: held, each stack gets a device of its own and is built and prepared once for all rounds; rebuilt, each
round builds its stacks afresh. Nothing is left either way."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from layerbench import proc
from layerbench.spec.models import StackSpec
from layerbench.stack.ledger import Ledger
from layerbench.stack.pool import StackPool
from layerbench.stack.target import BuildContext
from tests import support
from tests.integration.leftovers import leftovers

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_fio]

SPEC = """
name: held-{rebuild}
device: {{kind: zram, size: 512MiB}}  # xfs needs 300 MiB
stacks:
  - {{filesystem: [ext4, xfs], engine: native, placement: host-dir}}
workloads:
  - {{name: rr, rw: randread, bs: 4k, size: 16MiB, runtime_s: 1}}
trials: {{repetitions: 2, rebuild: {rebuild}}}
"""


def made(state: Path) -> Counter[str]:
    """What the run built, by kind (every row of the ledger: removed or not)."""
    with sqlite3.connect(state / "ledger.db") as db:
        return Counter(kind for (kind,) in db.execute("SELECT kind FROM resources"))


def preconditions(db_path: Path) -> dict[str, set[str]]:
    """Per cell, the distinct records of its file's preparation over its trials (one: prepared once)."""
    with sqlite3.connect(db_path) as db:
        rows = db.execute("SELECT c.label, t.info_json FROM trials t JOIN cells c USING (run_id, cell_id)")
        found: dict[str, set[str]] = {}
        for label, info in rows:
            found.setdefault(label, set()).add(json.dumps(json.loads(info)["precondition"], sort_keys=True))
        return found


@pytest.mark.parametrize(
    ("rebuild", "devices", "mounts", "preparations"), [("once", 2, 2, 1), ("every-round", 2, 4, 2)]
)
def test_held_stacks_are_built_once_and_rebuilt_ones_every_round(
    tmp_path: Path, rebuild: str, devices: int, mounts: int, preparations: int
) -> None:
    dirs = {"db": tmp_path / "results.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    spec = tmp_path / "held.yaml"
    spec.write_text(SPEC.format(rebuild=rebuild))
    done = support.run(["run", str(spec)], dirs, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 trials ok, 0 failed" in done.stdout
    built = made(dirs["state"])
    # Held: a zram device per stack, each formatted and mounted once. Rebuilt: one device per round, shared
    # by the round's two stacks as before, each stack formatted and mounted every round.
    assert (built["zram"], built["mount"]) == (devices, mounts), built
    # Each native fio (a preparation's, a trial's) is in the ledger while it runs: four trials, and a fill of
    # each stack's file once (held) or every round (rebuilt). Timing cannot tell: two fills may take as long.
    assert built["process"] - 4 == preparations * 2, built
    if rebuild == "once":  # every trial of a cell carries its one preparation's record
        assert all(len(p) == 1 for p in preconditions(dirs["db"]).values())
    assert leftovers(dirs["work"]) == []
    with sqlite3.connect(dirs["state"] / "ledger.db") as db:
        assert db.execute("SELECT kind, ident FROM resources WHERE removed_at IS NULL").fetchall() == []


def held_stack(**fields: object) -> StackSpec:
    on = {"device": {"kind": "zram", "size": "256MiB"}, "filesystem": "ext4", "engine": "native"}
    return StackSpec.model_validate({**on, "placement": "host-dir", **fields})


def test_held_stacks_share_a_device_and_filesystem_while_it_has_room(tmp_path: Path) -> None:
    """Held stacks of one device and filesystem share them (and their engine) while the filesystem has room
    for the next one's files; one that would not fit gets a copy of its own. Releasing a stack leaves what
    the others still use; the last one out takes it."""
    plain, capped, big = held_stack(), held_stack(limits={"cpus": 1}), held_stack(limits={"cpus": 0.5})
    ledger = Ledger(tmp_path / "state" / "ledger.db", "share")
    (tmp_path / "work").mkdir()
    ctx = BuildContext(tmp_path / "work", ledger, "share", proc.run)
    with StackPool(ctx, fits=lambda stack, work: len(pool.held()) < 2) as pool:
        first = pool.visit(plain).builder.enter(plain, 32 * 2**20)
        second = pool.visit(capped).builder.enter(capped, 32 * 2**20)
        assert first.device == second.device and first.path != second.path  # one filesystem, two directories
        third = pool.visit(big).builder.enter(big, 220 * 2**20)  # past the shared filesystem's room
        assert third.device != first.device
        assert pool.held() == [capped, big]  # the first released for the third: its device stays for the second
        assert Path(second.path).is_dir() and not Path(first.path).exists()
        assert Counter(r.kind for r in ledger.live()) == {"zram": 2, "mount": 2, "dir": 2, "cgroup": 2}
    assert ctx.shared.keys() == [] and ledger.live() == []
    assert leftovers(tmp_path / "work") == []


def test_what_a_stack_will_write_counts_against_the_room_for_the_next(tmp_path: Path) -> None:
    """pipeline.preload builds the next stack while the last one's load still writes: a stack claims what it
    will write on its filesystem until it settles, so the next one is placed by what will be free, not by what
    is free now (two PostgreSQL loads on one filesystem ran out of space without it)."""
    a, b, c = held_stack(), held_stack(limits={"cpus": 1}), held_stack(limits={"cpus": 0.5})
    ledger = Ledger(tmp_path / "state" / "ledger.db", "claims")
    (tmp_path / "work").mkdir()
    ctx = BuildContext(tmp_path / "work", ledger, "claims", proc.run)
    with StackPool(ctx, fits=lambda stack, work: True) as pool:
        first = pool.visit(a).builder.enter(a, 120 * 2**20)
        second = pool.visit(b).builder.enter(b, 120 * 2**20)  # nothing written yet, but 240 MiB will not fit
        assert second.device != first.device
        pool.visit(a).builder.settle()  # its files are written (here: none), so free space says it all
        third = pool.visit(c).builder.enter(c, 120 * 2**20)
        assert third.device == first.device
    assert ctx.shared.keys() == [] and ctx.shared.claims() == {}  # every claim released with its stack
    assert ledger.live() == []
