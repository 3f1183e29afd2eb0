"""Server definitions, resource profiles and the fleet's pure parts, without starting anything."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace as dataclasses_replace
from pathlib import Path
from typing import TypeVar

import pytest

from layerbench import proc
from layerbench.errors import PrerequisiteError
from layerbench.spec.databases import ServerSpec, tuned
from layerbench.spec.models import StackSpec
from layerbench.spec.profiles import Budget, instance_limits, needs_bandwidth
from layerbench.stack import handle
from layerbench.stack.fleet import (
    PGBENCH_SCALE_BYTES,
    SERVER_UID,
    ServerError,
    data_bytes,
    let_through,
    server_config,
    server_memory,
)
from layerbench.stack.network import bridge_name
from layerbench.stack.placement import tuning_options
from layerbench.stack.ports import free_port
from layerbench.workloads.servers import SERVERS, ServerConfig, cassandra

GIB = 2**30


def stack(**fields: object) -> StackSpec:
    base = {"device": {"kind": "loop"}, "filesystem": "xfs", "engine": "docker:overlay2", "placement": "volume"}
    return StackSpec.model_validate({**base, "server": "postgres", **fields})


BUDGET = Budget(cpus=2.0, memory=24 * GIB, max_instances=4, read_bps=400 * 2**20, write_bps=200 * 2**20)


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        ("none", {}),
        ("CPU", {"cpus": 0.5}),
        ("MEM", {"memory": 6 * GIB}),
        ("CPU+MEM", {"cpus": 0.5, "memory": 6 * GIB}),
        ("BW", {"read_bps": 100 * 2**20, "write_bps": 50 * 2**20}),
        ("ALL", {"cpus": 0.5, "memory": 6 * GIB, "read_bps": 100 * 2**20, "write_bps": 50 * 2**20}),
    ],
)
def test_profiles_divide_the_budget_by_the_most_instances(profile: str, expected: dict[str, object]) -> None:
    # Seed 000, Table 2: the share is the same however many instances run now.
    for instances in (1, 4):
        limits = instance_limits(stack(profile=profile, instances=instances), BUDGET, 0, 2)
        assert limits.model_dump(exclude_none=True) == expected


def test_explicit_limits_win_and_cpuset_pins_round_robin() -> None:
    s = stack(profile="MEM", limits={"memory": "1GiB"}, tuning="cpuset", instances=3)
    assert [instance_limits(s, BUDGET, i, 2).cpuset for i in range(3)] == ["0", "1", "0"]
    assert instance_limits(s, BUDGET, 0, 2).memory == GIB


def test_all_tunings_together_pin_unconfine_and_take_the_host_network() -> None:
    s = stack(tuning="all", instances=2)
    assert [instance_limits(s, BUDGET, i, 2).cpuset for i in range(2)] == ["0", "1"]
    assert tuning_options("all") == tuning_options("seccomp-unconfined") == {"security_opt": ["seccomp=unconfined"]}
    assert tuning_options("cpuset") == {} and tuned("all", "host-network") and not tuned("cpuset", "host-network")


def test_bandwidth_is_measured_only_when_a_profile_needs_it() -> None:
    unmeasured = Budget(cpus=2.0, memory=GIB, max_instances=2)
    assert needs_bandwidth(stack(profile="BW"), unmeasured) and needs_bandwidth(stack(profile="ALL"), unmeasured)
    assert not needs_bandwidth(stack(profile="MEM"), unmeasured)
    assert not needs_bandwidth(stack(profile="BW"), BUDGET)


def test_server_is_sized_to_its_container_limit_when_smaller() -> None:
    spec = ServerSpec(kind="postgres", memory="512MiB")
    assert server_memory(spec, stack().limits) == 512 * 2**20
    assert server_memory(spec, instance_limits(stack(profile="MEM"), Budget(2, GIB, 8), 0, 2)) == GIB // 8


def config(kind: str, **fields: object) -> ServerConfig:
    spec = ServerSpec(kind=kind, **fields)  # type: ignore[arg-type]
    return ServerConfig("/data/x", "0.0.0.0", 5000, 400 * 2**20, spec, 256, Path("/var/cache/lb"))


T = TypeVar("T")


def installed(build: Callable[[], T]) -> T:
    """What ``build`` makes of the host's server binaries; a skip with what is missing where the host lacks them
    (make setup installs them: a failure on CI)."""
    try:
        return build()
    except PrerequisiteError as err:
        pytest.skip(f"{err} ({err.hint})" if err.hint else str(err))


def test_postgres_command_line_sizes_buffers_and_listens_tcp_only() -> None:
    argv = installed(lambda: SERVERS["postgres"].argv(config("postgres")))
    settings = dict(a.split("=", 1) for a in argv[argv.index("-c") :: 2][1:] if "=" in a) | dict(
        a.split("=", 1) for a in argv if "=" in a
    )
    assert settings["shared_buffers"] == "100MB" and settings["effective_cache_size"] == "300MB"
    assert settings["unix_socket_directories"] == "" and settings["listen_addresses"] == "0.0.0.0"
    assert settings["jit"] == "off" and settings["max_connections"] == "256"
    assert argv[argv.index("-p") + 1] == "5000"


@pytest.mark.parametrize(
    ("persistence", "expected"),
    [
        ("aof-everysec", ["--appendonly", "yes", "--appendfsync", "everysec", "--save", ""]),
        ("aof-always", ["--appendonly", "yes", "--appendfsync", "always", "--save", ""]),
        ("none", ["--appendonly", "no", "--save", ""]),
    ],
)
def test_redis_persistence_and_memory(persistence: str, expected: list[str]) -> None:
    argv = installed(lambda: SERVERS["redis"].argv(config("redis", persistence=persistence)))
    assert argv[-len(expected) :] == expected
    assert argv[argv.index("--maxmemory") + 1] == str(300 * 2**20)  # 3/4 of 400 MiB
    assert argv[argv.index("--maxmemory-policy") + 1] == "noeviction"


@pytest.fixture
def passable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A directory others may pass, as /var/tmp is (pytest's own temp root is private)."""
    base = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="lb-test-"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base)


def test_let_through_opens_only_the_run_directories_to_the_server_group(passable: Path) -> None:
    run = passable / "run"
    mnt = run / "mnt-xfs"
    mnt.mkdir(parents=True)
    for d in (run, mnt):
        d.chmod(0o700)
    let_through(mnt, run)
    for d in (run, mnt):
        st = d.stat()
        assert st.st_mode & 0o777 == 0o710 and st.st_gid == SERVER_UID  # the group may pass, others may not


def test_let_through_refuses_a_private_directory_above_the_run(tmp_path: Path) -> None:
    theirs = tmp_path / "private"
    run = theirs / "run"
    run.mkdir(parents=True)
    theirs.chmod(0o700)
    with pytest.raises(PrerequisiteError, match="cannot pass") as err:
        let_through(run, run)
    assert "chmod o+x" in str(err.value.hint) and theirs.stat().st_mode & 0o777 == 0o700  # left as it was


def test_kill_if_same_spares_a_reused_pid(tmp_path: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        handle.kill_if_same(sleeper.pid, "1")  # not the start time it has: someone else's process now
        assert sleeper.poll() is None
        handle.kill_if_same(sleeper.pid, handle.start_time(sleeper.pid))
        assert sleeper.wait(5) == -9
    finally:
        if sleeper.poll() is None:
            os.killpg(sleeper.pid, 9)


def test_bridge_name_is_the_link_docker_makes() -> None:
    assert bridge_name("6010ee285880aa77") == "br-6010ee285880"


def test_cassandra_is_sized_from_the_memory_it_is_given_as_cassandra_env_sizes_from_the_host() -> None:
    heap = cassandra.heap_bytes
    assert (heap(GIB), heap(2 * GIB), heap(8 * GIB), heap(64 * GIB)) == (GIB // 2, GIB, 2 * GIB, 8 * GIB)


def test_cassandra_yaml_keeps_everything_under_its_data_dir_and_its_own_internode_address() -> None:
    c = dataclasses_replace(config("cassandra"), memory=2 * GIB, port=9042)
    s = cassandra.settings(c)
    for key in ("commitlog_directory", "saved_caches_directory", "hints_directory", "cdc_raw_directory"):
        assert str(s[key]).startswith("/data/x/")
    assert s["data_file_directories"] == ["/data/x/data"]
    assert (s["native_transport_port"], s["rpc_address"]) == (9042, "0.0.0.0")
    assert s["listen_address"] == "127.35.82.1" == cassandra.internode_address(9042)  # 9042 = 35 x 256 + 82
    assert s["broadcast_rpc_address"] == "127.35.82.1"  # Cassandra wants one with a wildcard rpc_address
    assert s["memtable_heap_space"] == "256MiB"  # a quarter of the 1 GiB heap
    assert {cassandra.internode_address(p) for p in (40000, 40001, 40256)} == {
        "127.156.64.1",
        "127.156.65.1",
        "127.157.64.1",
    }  # instances on one loopback: one internode address each
    native = cassandra.settings(dataclasses_replace(c, listen="127.0.0.1"))
    assert native["rpc_address"] == "127.0.0.1" and "broadcast_rpc_address" not in native


def test_cassandra_command_line_heap_and_java_17_flags() -> None:
    argv = installed(lambda: cassandra.argv(dataclasses_replace(config("cassandra"), memory=2 * GIB)))
    assert argv[-1] == cassandra.MAIN_CLASS and argv[-2] == "/var/cache/lb/cassandra/lib/*"
    assert {"-Xms1024m", "-Xmx1024m", "-XX:MaxDirectMemorySize=256m"} <= set(argv)
    assert "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED" in argv and "-Dcassandra.jmx.local.port" not in " ".join(argv)
    assert "-Dcassandra.config=file:///data/x/cassandra.yaml" in argv


def test_cassandra_probe_says_no_where_nothing_speaks_cql(tmp_path: Path) -> None:
    assert not cassandra.ready("127.0.0.1", free_port(), proc.run)
    with socket.socket() as s:  # a port that accepts and closes: open, but no CQL
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        server = threading.Thread(target=lambda: s.accept()[0].close())
        server.start()
        assert not cassandra.ready("127.0.0.1", port, proc.run)
        server.join(5)


def test_cassandra_image_files_are_the_jars_and_the_jdk_without_its_desktop_libraries(tmp_path: Path) -> None:
    lib = tmp_path / "cassandra" / "lib"
    lib.mkdir(parents=True)
    with pytest.raises(PrerequisiteError, match="jars are not in") as err:
        cassandra.files(tmp_path)
    assert "java/fetch-cassandra.sh" in str(err.value.hint)
    (lib / "cassandra-all-5.0.9.jar").write_bytes(b"")
    found = installed(lambda: cassandra.files(tmp_path))
    names = {Path(f).name for f in found}
    assert {"cassandra-all-5.0.9.jar", "modules", "libjvm.so", "libnio.so"} <= names
    assert not names & (cassandra.DESKTOP_LIBRARIES | cassandra.JDK_SKIPPED)


def test_a_cassandra_whose_container_limit_leaves_less_than_a_gib_is_refused_with_the_fix() -> None:
    s = stack(server={"kind": "cassandra"}, profile="MEM", instances=2)
    small = instance_limits(s, Budget(2, GIB, 2), 0, 2)  # MEM: half of 1 GiB each
    with pytest.raises(ServerError, match="cassandra needs at least 1024 MiB and would get 512 MiB") as err:
        server_config(s, "/data/x", "127.0.0.1", 9042, small, Path("/var/cache/lb"))
    assert "larger resources.memory or fewer instances" in str(err.value)
    enough = instance_limits(s, Budget(2, 4 * GIB, 2), 0, 2)
    assert server_config(s, "/data/x", "127.0.0.1", 9042, enough, Path("/c")).memory == 2 * GIB


def test_a_postgresql_servers_room_counts_pgbenchs_tables_as_well_as_ycsbs_records() -> None:
    ycsb_only = ServerSpec.model_validate({"kind": "redis", "records": 1000, "scale": 100})
    postgres = ServerSpec.model_validate({"kind": "postgres", "records": 1000, "scale": 100})
    # scale 100 is about 1.6 GB of tables (measured: scale 10 made 165 MB): twice that, on a tmpfs too
    assert data_bytes(postgres) - data_bytes(ycsb_only) == 2 * 100 * PGBENCH_SCALE_BYTES > 3 * 10**9
