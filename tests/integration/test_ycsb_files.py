"""YCSB's own workload files (0.17.0's workloada-f, tests/data/ycsb/workloads/) against a private PostgreSQL
and a private Redis, each run as layerbench runs a ``workload_file``: the file given to the client as it is
(``-P``), with only what layerbench must set after it.

The runs are bounded by the files' own ``operationcount`` (1000), not by time: a slow machine cannot cut a
run short, and D's and E's 5% of inserts are all missed with odds of 0.95**1000 (about 10**-22).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from layerbench import proc
from layerbench.spec.databases import ServerSpec, YcsbWorkload
from layerbench.spec.models import StackSpec
from layerbench.stack.fleet import Endpoint
from layerbench.workloads import ycsb

# That module's fixtures: a PostgreSQL and a Redis started for this module too, and stopped after it.
from tests.integration.test_db_clients import CACHE, PASSWORD, java, servers  # noqa: F401

pytestmark = pytest.mark.requires_db

FILES = Path(__file__).resolve().parents[1] / "data" / "ycsb" / "workloads"
# Each proportion of a file, by the section of YCSB's report that counts its operations.
SECTIONS = {
    "readproportion": "READ",
    "updateproportion": "UPDATE",
    "insertproportion": "INSERT",
    "scanproportion": "SCAN",
    "readmodifywriteproportion": "READ-MODIFY-WRITE",
}


def _workload(letter: str) -> YcsbWorkload:
    return YcsbWorkload.model_validate(
        {"name": letter, "workload_file": str(FILES / f"workload{letter}"), "threads": 2}
    )


def _by_the_file_s_count(props: Mapping[str, str]) -> dict[str, str]:
    """What layerbench sets for a run, but bounded by the file's own operationcount instead of by time."""
    return {k: v for k, v in props.items() if k not in ("maxexecutiontime", "operationcount")}


def _client(
    java: str,  # noqa: F811
    kind: str,
    w: YcsbWorkload,
    phase: ycsb.Phase,
    props: Mapping[str, str],
    tmp: Path,
) -> ycsb.YcsbResult:
    argv = ycsb.argv(java, str(CACHE), kind, phase, props, ycsb.put_workload_file(w, tmp))
    done = proc.run(argv, timeout=180).check()
    result = ycsb.parse(done.stdout)
    assert result.exceptions == (), done.stderr[-2000:]  # YCSB exits 0 even when a client thread failed
    return result


def _stack(kind: str) -> StackSpec:
    fields = {"device": {"kind": "loop"}, "filesystem": "ext4", "engine": "native", "placement": "host-dir"}
    return StackSpec.model_validate({**fields, "server": kind})


@pytest.mark.parametrize("kind", ["postgres", "redis"])
def test_ycsb_s_own_files_load_and_run_unchanged(
    java: str,  # noqa: F811
    servers: dict[str, Endpoint],  # noqa: F811
    kind: str,
    tmp_path: Path,
) -> None:
    workloads = [_workload(letter) for letter in "abcdef"]
    server = workloads[0].sized(_stack(kind)).server  # the files' recordcount sizes the server
    assert isinstance(server, ServerSpec) and server.record_count == 1000
    endpoint = {"host": "127.0.0.1", "port": str(servers[kind].port), "password": PASSWORD}
    loader = ycsb.loader(workloads, 4)
    load = _client(java, kind, loader, "load", ycsb.properties(loader, server, 1000, endpoint, "load"), tmp_path)
    assert (load.operations["INSERT"].count, load.operations["INSERT"].errors) == (1000, 0)

    records = 1000
    for w in workloads:
        props = ycsb.properties(w, server, records, endpoint, "run", hdr_dir=str(tmp_path))
        assert set(ycsb.overridden(w, props, kind, "run")) <= {"operationcount", "recordcount"}
        result = _client(java, kind, w, "run", _by_the_file_s_count(props), tmp_path)
        mix = {SECTIONS[k] for k, v in w.file_properties.items() if k in SECTIONS and float(v) > 0}
        for section in mix:  # every operation the file asks for, none refused
            op = result.operations[section]
            assert op.count > 0 and op.errors in (0, None), (w.name, section, op)
        inner = {"READ", "UPDATE"} if "READ-MODIFY-WRITE" in mix else set()  # YCSB times RMW's parts too
        assert {s for s in result.operations if s in SECTIONS.values()} == mix | inner, (w.name, result.operations)
        records = ycsb.records_after(result, records)
    assert records > 1000  # D and E inserted, from the record count up, without a duplicate key
