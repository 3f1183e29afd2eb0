"""A trial's info, typed (records/info.py): the store's JSON reads into it and writes back key for key."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from layerbench.records.facts import Facts
from layerbench.records.info import Attempt, ClientInfo, EndpointInfo, Load, Prepared, TrialInfo

DATA = Path(__file__).resolve().parents[1] / "data"
DATABASES = [DATA / "quick" / "run.db", DATA / "plan" / "scaling.db", DATA / "plan" / "check.db"]


@pytest.mark.parametrize("db", DATABASES, ids=lambda p: p.parent.name + "/" + p.name)
def test_every_committed_trials_info_reads_typed_and_writes_back_the_same_json(db: Path) -> None:
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        texts = [row[0] for row in conn.execute("SELECT info_json FROM trials")]
    assert texts
    for text in texts:
        stored = json.loads(text)
        info = TrialInfo.from_json(stored)
        assert info.to_json() == stored
        assert not info.extra  # every key these runs wrote is a field


def test_a_file_trials_info_is_typed_where_it_was_a_dict() -> None:
    stored = {
        "precondition": {"268435456:steady": {"seconds": 0.5, "steady_attained": False}},
        "target": {"placement": "host-dir", "pid": None, "fio_sha256": "2e54"},
        "engine": "native",
        "lat_log_ms": 100,
        "disturbed": [
            {
                "started_at": 1.0,
                "ended_at": 2.0,
                "contended": "busy",
                "samples": [["iops", "read", "", 5.0]],
                "waited_s": 1,
            }
        ],
        "profiled": "perf stat failed",
    }
    info = TrialInfo.from_json(stored)
    assert info.precondition == {"268435456:steady": Prepared(seconds=0.5, steady_attained=False)}
    assert info.target is not None and info.target.placement == "host-dir" and info.target.told == {"placement", "pid"}
    assert info.target.extra == {"fio_sha256": "2e54"}  # an engine's own key: kept, written back
    assert info.disturbed == (Attempt(1.0, 2.0, "busy", (("iops", "read", "", 5.0),), 1),)
    assert (info.lat_log_ms, info.profiled) == (100, "perf stat failed")
    assert info.to_json() == stored and info["lat_log_ms"] == 100


def test_a_database_trials_info_keeps_nulls_and_unknown_keys_as_they_were() -> None:
    stored = {
        "precondition": {"started_at": 1.0, "records": [10, 10], "pgbench_scale": 10, "seconds": 2.0, "ended_at": 3.0},
        "server": {"server": "redis", "budget": {"cpus": 2.0, "read_bps": None}, "records": [12, 10]},
        "endpoints": [{"name": "i0", "host": "h", "port": 1, "memory": 5, "limits": {}, "guest_kernel": None}],
        "a_later_key": {"kept": True},
    }
    info = TrialInfo.from_json(stored)
    assert info.precondition == Load(1.0, (10, 10), 10, 2.0, 3.0)
    assert info.server is not None and info.server.records == (12, 10) and info.server.budget is not None
    assert info.server.budget.read_bps is None and info.server.budget.cpus == 2.0
    (endpoint,) = info.endpoints or ()
    assert endpoint.name == "i0" and endpoint.facts.told == {"guest_kernel"}
    assert info.extra == {"a_later_key": {"kept": True}}
    assert info.to_json() == stored


def test_the_run_stage_writes_what_it_wrote_before_the_types() -> None:
    """What run/kinds build, as JSON: the keys and values the dicts had."""
    client = ClientInfo(name="c0", path="/d", facts=Facts.of({"pid": 7, "shared": False}))
    info = TrialInfo(
        precondition={"1:fill": Prepared(seconds=0.1, clients=2)},
        engine="docker",
        clients=(client,),
        clients_ran_ms={"c0": (1.0, 2.0)},
        runs_lost_a_log=("lost",),
    )
    assert info.to_json() == {
        "precondition": {"1:fill": {"seconds": 0.1, "clients": 2}},
        "engine": "docker",
        "clients": [{"name": "c0", "path": "/d", "pid": 7, "shared": False}],
        "clients_ran_ms": {"c0": [1.0, 2.0]},
        "runs_lost_a_log": ["lost"],
    }
    endpoint = EndpointInfo(name="i0", limits={"cpus": 1.0}, facts=Facts.of({"container": "abc"}))
    assert endpoint.to_json() == {"name": "i0", "limits": {"cpus": 1.0}, "container": "abc"}
    assert TrialInfo().to_json() == {}
