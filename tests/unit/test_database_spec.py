"""Database stacks in specs: parsing, axes, pairing with workloads, refusals with reasons."""

from __future__ import annotations

import dataclasses

import pytest

from layerbench.errors import SpecError
from layerbench.spec import load
from layerbench.spec.databases import ServerSpec, YcsbWorkload
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.matrix import expand

SPEC = """
name: db
device: {kind: loop, size: 2GiB}
stacks:
  - {filesystem: xfs, engine: native, placement: host-dir, server: [postgres, redis]}
  - {filesystem: xfs, engine: "docker:overlay2", placement: [volume, bind], server: postgres,
     instances: [1, 2], profile: [none, MEM]}
  - {filesystem: xfs, engine: native, placement: host-dir}
workloads:
  - {kind: ycsb, name: A, mix: a, threads: 4}
  - {kind: pgbench, name: TPCB}
  - {name: RR, rw: randread}
"""


def test_axes_and_pairing(full_caps: HostCaps) -> None:
    m = expand(load.parse(SPEC), full_caps)
    db_stacks = [s for s in m.stacks() if s.server is not None]
    assert len(db_stacks) == 2 + 2 * 2 * 2  # native postgres, redis; docker placements x instances x profiles
    kinds = {(c.stack.server is None, c.workload.kind) for c in m.cells}
    assert kinds == {(True, "fio"), (False, "ycsb"), (False, "pgbench")}  # fio never on a server, clients never off
    refused = {r.cell.label(): r.reason for r in m.refused}
    assert any("pgbench drives postgres, not redis" in reason for reason in refused.values())
    assert len(m.refused) == 1


def test_stack_labels_name_server_instances_and_profile(full_caps: HostCaps) -> None:
    labels = {s.label() for s in expand(load.parse(SPEC), full_caps).stacks()}
    assert "loop/xfs/docker:overlay2/volume/postgres(10000rec)x2[MEM]" in labels
    assert "loop/xfs/native/host-dir/redis(10000rec)" in labels


@pytest.mark.parametrize(
    ("stack", "reason"),
    [
        ("{filesystem: none, placement: raw, server: redis}", "keeps its data in files"),
        ("{filesystem: xfs, engine: native, server: redis, profile: CPU}", "natively there is none"),
        ("{filesystem: xfs, engine: native, server: redis, tuning: cpuset}", "nothing to tune"),
    ],
)
def test_impossible_database_stacks_are_refused(full_caps: HostCaps, stack: str, reason: str) -> None:
    text = f"name: t\nstacks:\n  - {stack}\nworkloads:\n  - {{kind: ycsb, name: A}}\n"
    m = expand(load.parse(text), full_caps)
    assert not m.cells and reason in m.refused[0].reason


def test_missing_server_and_client_are_refused_with_the_install(full_caps: HostCaps) -> None:
    bare = dataclasses.replace(full_caps, servers=frozenset({"postgres"}), clients=frozenset({"pgbench"}))
    text = SPEC.replace("  - {name: RR, rw: randread}\n", "")
    reasons = {r.reason for r in expand(load.parse(text), bare).refused}
    assert any("redis is not installed" in r and "apt-get install redis-server" in r for r in reasons)
    assert any("YCSB client is not set up" in r for r in reasons)


@pytest.mark.parametrize(
    ("fragment", "message"),
    [
        ("instances: 2", "only for stacks with a server"),
        (
            "server: mysql",
            "'mysql' is not allowed; allowed values: 'postgres', 'redis', 'cassandra', 'ferretdb' or 'image'",
        ),
        ("server: redis, profile: HALF", "allowed values: 'none', 'CPU', 'MEM', 'CPU+MEM', 'BW' or 'ALL'"),
        ("server: {kind: redis, records: 5, data: 2}", "records or data"),
        ("server: {kind: cassandra, memory: 512MiB}", "memory: cassandra needs at least 1024 MiB, got 512 MiB"),
        ("server: {kind: postgres, memory: 0}", "greater than or equal to 1"),
    ],
)
def test_bad_database_fields_name_field_and_values(full_caps: HostCaps, fragment: str, message: str) -> None:
    text = f"name: t\nstacks:\n  - {{filesystem: xfs, {fragment}}}\nworkloads:\n  - {{kind: ycsb, name: A}}\n"
    with pytest.raises(SpecError) as err:
        expand(load.parse(text), full_caps)
    assert "stacks[0]." in str(err.value) and message in str(err.value)


def test_unknown_workload_kind_lists_the_kinds() -> None:
    with pytest.raises(SpecError) as err:
        load.parse("name: t\nstacks: [{filesystem: xfs}]\nworkloads:\n  - {kind: sysbench, name: S}\n")
    expected = "workloads[0]: 'sysbench' is not allowed; allowed values: 'fio', 'iozone', 'ycsb', 'pgbench'"
    assert expected in str(err.value)
    assert "Tuple should have" not in str(err.value)


def test_data_size_as_a_multiple_of_memory() -> None:
    server = ServerSpec(kind="postgres", memory="256MiB", data=4)
    assert server.record_count == 4 * 256 * 2**20 // 1000  # 10 fields x 100 bytes
    assert ServerSpec(kind="redis").record_count == 10_000


def test_memory_defaults_by_kind_and_a_cassandra_needs_a_gib() -> None:
    assert ServerSpec(kind="postgres").memory == ServerSpec(kind="redis").memory == 256 * 2**20
    assert ServerSpec(kind="cassandra").memory == 2 * 2**30  # a 1 GiB heap: about 1.5 GiB resident
    assert ServerSpec(kind="cassandra", memory="1GiB").memory == 2**30


@pytest.mark.parametrize(
    ("stack", "workload", "reason"),
    [
        ("{filesystem: xfs, engine: native, server: postgres}", "{kind: ycsb, name: A, consistency: quorum}",
         "consistency is a CQL client's setting: postgres has none"),
        ("{filesystem: xfs, engine: vm, placement: host-dir, server: cassandra}", "{kind: ycsb, name: A}",
         "cassandra in a VM is not"),
        ("{filesystem: xfs, engine: native, server: cassandra}", "{kind: pgbench, name: T}",
         "pgbench drives postgres, not cassandra (it speaks cql)"),
    ],
)  # fmt: skip
def test_cassandra_cells_this_host_cannot_run_are_refused(
    full_caps: HostCaps, stack: str, workload: str, reason: str
) -> None:
    text = f"name: t\nemulation: allow\nstacks:\n  - {stack}\nworkloads:\n  - {workload}\n"
    m = expand(load.parse(text), full_caps)
    assert not m.cells and reason in m.refused[0].reason


def test_cassandra_without_its_jars_is_refused_with_the_set_up_step(full_caps: HostCaps) -> None:
    bare = dataclasses.replace(full_caps, servers=frozenset({"postgres", "redis"}))
    stack = "{filesystem: xfs, engine: native, server: cassandra}"
    text = f"name: t\nstacks:\n  - {stack}\nworkloads:\n  - {{kind: ycsb, name: A}}\n"
    (refused,) = expand(load.parse(text), bare).refused
    assert "cassandra is not set up" in refused.reason and "make setup fetches them" in refused.reason


IMAGE = "{image: mongo:7, port: 27017, client: ycsb-mongodb}"


def test_an_image_server_is_known_by_its_image_and_speaks_its_clients_protocol() -> None:
    server = ServerSpec.model_validate({"image": "/srv/images/pg.tar", "port": 5432, "client": "ycsb-postgres"})
    assert (server.kind, server.protocol, server.name) == ("image", "postgres", "pg.tar")
    assert server.data_path == "/var/lib/postgresql/data"  # where the official image keeps it
    assert server.memory == 2**30  # its container's limit unless the spec says
    mongo = ServerSpec.model_validate({"image": "mongo:7", "port": 27017, "client": "ycsb-mongodb", "env": {"B": 1}})
    assert (mongo.name, mongo.data_path, mongo.env) == ("mongo:7", "/data/db", ("B=1",))
    assert mongo.label() == "mongo:7(10000rec)"


@pytest.mark.parametrize(
    ("server", "message"),
    [
        ("{image: mongo:7}", "an image server needs port, client"),
        ("{kind: postgres, port: 5433}", "port: only a server of kind image"),
        ("{image: mongo:7, port: 27017, client: mongo}", "allowed values: 'ycsb-postgres', 'ycsb-redis'"),
        ("{image: mongo:7, port: 27017, client: ycsb-mongodb, data_path: data}", "should match pattern '^/'"),
        ("{image: mongo:7, port: 27017, client: ycsb-mongodb, env: [NOEQUALS]}", "KEY=VALUE strings"),
    ],
)
def test_bad_image_servers_name_the_field(full_caps: HostCaps, server: str, message: str) -> None:
    text = f"name: t\nstacks:\n  - {{filesystem: xfs, engine: 'docker:overlay2', placement: volume, server: {server}}}"
    with pytest.raises(SpecError) as err:
        expand(load.parse(text + "\nworkloads:\n  - {kind: ycsb, name: A}\n"), full_caps)
    assert "stacks[0].server" in str(err.value) and message in str(err.value)


@pytest.mark.parametrize(
    ("stack", "workload", "reason"),
    [
        (f"{{filesystem: xfs, engine: native, server: {IMAGE}}}", "{kind: ycsb, name: A}",
         "an image server (mongo:7) runs in a container: use engine docker or podman"),
        (f"{{filesystem: xfs, engine: 'docker:overlay2', placement: volume, server: {IMAGE}, instances: 2, "
         "tuning: host-network}", "{kind: ycsb, name: A}", "would all listen on port 27017"),
        (f"{{filesystem: xfs, engine: 'docker:overlay2', placement: volume, server: {IMAGE}}}",
         "{kind: pgbench, name: T}", "pgbench drives postgres, not mongo:7 (it speaks mongodb)"),
        (f"{{filesystem: xfs, engine: 'docker:overlay2', placement: volume, server: {IMAGE}}}",
         "{kind: ycsb, name: A}", "no registry here"),
    ],
)  # fmt: skip
def test_image_cells_this_host_cannot_run_are_refused(
    full_caps: HostCaps, stack: str, workload: str, reason: str
) -> None:
    pullable = reason != "no registry here"  # the stack's own rules come before the image's availability
    caps = dataclasses.replace(full_caps, images={"mongo:7": None if pullable else "no registry here"})
    text = f"name: t\nstacks:\n  - {stack}\nworkloads:\n  - {workload}\n"
    m = expand(load.parse(text), caps)
    assert not m.cells and reason in m.refused[0].reason


def test_an_image_the_engine_can_have_runs(full_caps: HostCaps) -> None:
    caps = dataclasses.replace(full_caps, images={"mongo:7": None})
    text = f"name: t\nstacks:\n  - {{filesystem: xfs, engine: 'docker:overlay2', placement: volume, server: {IMAGE}}}"
    m = expand(load.parse(text + "\nworkloads:\n  - {kind: ycsb, name: A}\n"), caps)
    assert [c.label() for c in m.cells] == ["loop/xfs/docker:overlay2/volume/mongo:7(10000rec) · A"] and not m.refused


def test_servers_of_a_kind_keep_their_cell_ids_from_before_image_servers() -> None:
    # The hash of a cell's dump identifies it across runs (resume, compare): fields a kind never
    # uses must not enter its dump. The ids below are those layerbench gave before image servers.
    from layerbench.spec.models import Cell, StackSpec

    ids = []
    for server in ({"kind": "postgres", "records": 5}, "redis", {"kind": "cassandra"}):
        stack = {"device": {"kind": "zram", "size": "1GiB"}, "filesystem": "xfs", "engine": "native",
                 "placement": "host-dir", "server": server}  # fmt: skip
        ids.append(Cell(stack=StackSpec.model_validate(stack), workload=YcsbWorkload(name="A")).id)
    assert ids == ["0a694010aabb", "1e67598b1d13", "3da026fc7585"]
