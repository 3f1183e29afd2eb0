"""FerretDB as a server kind: its definition, the MongoDB binding's properties, and the spec's rules."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from layerbench.errors import PrerequisiteError
from layerbench.spec import load
from layerbench.spec.databases import ServerSpec, YcsbWorkload
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.matrix import expand
from layerbench.workloads import ycsb
from layerbench.workloads.servers import SERVERS, ServerConfig, ferretdb, mongo_wire


def config(cache: Path, listen: str = "0.0.0.0") -> ServerConfig:
    return ServerConfig("/data/x/ferretdb", listen, 5000, 256 * 2**20, ServerSpec(kind="ferretdb"), 256, cache)


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    binary = tmp_path / "ferretdb" / "bin" / "ferretdb"
    binary.parent.mkdir(parents=True)
    binary.write_bytes(b"")
    return tmp_path


def test_the_server_is_the_binary_in_the_cache_on_its_data_dir_and_port(cache: Path) -> None:
    definition = SERVERS["ferretdb"]
    assert definition.binaries(cache) == {"ferretdb": str(cache / "ferretdb" / "bin" / "ferretdb")}
    assert definition.files(cache) == [] and definition.prepare(config(cache)) == []  # static; SQLite makes its files
    assert definition.argv(config(cache)) == [
        str(cache / "ferretdb" / "bin" / "ferretdb"),
        "-listen-addr", "0.0.0.0:5000",
        "-sqlite-dir", "/data/x/ferretdb",
        "-log-level", "warn",
    ]  # fmt: skip
    assert definition.argv(config(cache, "::1"))[2] == "[::1]:5000"
    assert definition.ready is mongo_wire.ready and definition.default_port == 27017


def test_without_its_binary_the_hint_is_make_ferretdb(tmp_path: Path) -> None:
    with pytest.raises(PrerequisiteError, match="FerretDB is not built") as err:
        ferretdb.binaries(tmp_path)
    assert err.value.hint is not None and "make ferretdb" in err.value.hint


def test_the_mongodb_binding_gets_its_own_property_prefix() -> None:
    props = ycsb.properties(YcsbWorkload(name="a"), ServerSpec(kind="ferretdb"), 10, {"host": "h", "port": "5"}, "run")
    assert (props["mongodb.host"], props["mongodb.port"]) == ("h", "5")
    assert not any(key.startswith("ferretdb.") for key in props)
    assert ServerSpec(kind="ferretdb").protocol == "mongodb"
    args = ycsb.argv("java", "/c", "mongodb", "load", props)
    at = args.index("-load")
    assert args[at : at + 3] == ["-load", "-db", "dev.layerbench.ycsb.MongoDB"]


SPEC = "name: t\nstacks:\n  - {{filesystem: xfs, engine: native, server: ferretdb}}\nworkloads:\n  - {workload}\n"


def test_a_host_with_ferretdb_built_runs_ycsb_on_it_and_one_without_says_how_to_build_it(full_caps: HostCaps) -> None:
    text = SPEC.format(workload="{kind: ycsb, name: A}")
    built = dataclasses.replace(full_caps, servers=full_caps.servers | {"ferretdb"})
    assert len(expand(load.parse(text), built).cells) == 1
    (refused,) = expand(load.parse(text), full_caps).refused
    assert "ferretdb is not built" in refused.reason and "make ferretdb" in refused.reason


@pytest.mark.parametrize(
    ("workload", "reason"),
    [
        ("{kind: ycsb, name: A, consistency: quorum}", "consistency is a CQL client's setting: ferretdb has none"),
        ("{kind: pgbench, name: P}", "pgbench drives postgres, not ferretdb (it speaks mongodb)"),
    ],
)
def test_what_only_other_servers_take_is_refused(full_caps: HostCaps, workload: str, reason: str) -> None:
    built = dataclasses.replace(full_caps, servers=full_caps.servers | {"ferretdb"})
    m = expand(load.parse(SPEC.format(workload=workload)), built)
    assert not m.cells and reason in m.refused[0].reason
