"""Every server layerbench configures requires the run's password, which never reaches a command line."""

from __future__ import annotations

import dataclasses
import stat
from pathlib import Path

import pytest
import yaml

from layerbench import proc
from layerbench.run.kinds.database import credentials
from layerbench.spec import load
from layerbench.spec.databases import ServerSpec
from layerbench.spec.engines import kubernetes
from layerbench.spec.engines.kubernetes import ClusterNode, KubeCaps
from layerbench.spec.engines.swarm import SwarmCaps, SwarmNode
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.matrix import expand
from layerbench.stack.fleet import Fleet
from layerbench.stack.ledger import Ledger
from layerbench.stack.target import BuildContext, Device
from layerbench.workloads import ycsb
from layerbench.workloads.servers import SERVERS, cassandra, postgres, redis
from layerbench.workloads.servers import image as image_server
from layerbench.workloads.servers.base import ServerConfig

SECRET = "s3cret-Of-this-run"


def config(kind: str, listen: str = "127.0.0.1", password: str = SECRET) -> ServerConfig:
    return ServerConfig(
        f"/data/lb/{kind}", listen, 5000, 2**30, ServerSpec(kind=kind), 256, Path("/var/cache/lb"), password=password
    )


def test_each_run_has_a_password_of_its_own_which_its_context_does_not_show(tmp_path: Path) -> None:
    def ctx() -> BuildContext:
        return BuildContext(tmp_path, Ledger(tmp_path / "l.db", "r"), "r", proc.run)

    a, b = ctx(), ctx()
    assert len(a.password) >= 32 and a.password != b.password
    assert a.password not in repr(a) and SECRET not in repr(config("redis"))


def test_postgres_is_made_with_the_password_and_admits_scram_only() -> None:
    c = config("postgres")
    assert postgres.setup_files(c) == {"pwfile": SECRET + "\n"}
    (initdb,) = postgres.prepare(c)
    assert "--auth=scram-sha-256" in initdb and "--pwfile=/data/lb/pwfile" in initdb  # beside the data directory
    hba = postgres.config_files(c)["pg_hba.conf"].splitlines()
    assert hba == ["host all all 127.0.0.1/32 scram-sha-256", "host all all samenet scram-sha-256"]
    assert all(SECRET not in arg for arg in postgres.argv(c)) and "password_encryption=scram-sha-256" in postgres.argv(
        c
    )
    routed = postgres.config_files(ServerConfig(**{**c.__dict__, "client_address": "10.0.0.9"}))["pg_hba.conf"]
    assert routed.splitlines()[-1] == "host all all 10.0.0.9/32 scram-sha-256"


def test_redis_reads_its_password_from_its_own_file_and_keeps_protected_mode() -> None:
    c = config("redis")
    argv = redis.argv(c)
    assert argv[1] == "/data/lb/redis/redis.conf" and redis.config_files(c) == {"redis.conf": f"requirepass {SECRET}\n"}
    assert all(SECRET not in arg for arg in argv)
    assert argv[argv.index("--protected-mode") + 1] == "yes" and argv[argv.index("--bind") + 1] == "127.0.0.1"


def test_cassandra_asks_every_client_to_log_in() -> None:
    settings = cassandra.settings(config("cassandra"))
    assert settings["authenticator"] == "PasswordAuthenticator"
    assert all(SECRET not in arg for arg in cassandra.argv(config("cassandra")))
    assert "-Dcassandra.superuser_setup_delay_ms=0" in cassandra.argv(config("cassandra"))
    assert cassandra.settings(config("cassandra", password=""))["authenticator"] == "AllowAllAuthenticator"


def test_servers_layerbench_configures_authenticate_and_an_image_s_does_its_own() -> None:
    assert all(d.authenticates for d in SERVERS.values())
    spec = ServerSpec.model_validate({"image": "redis:7", "port": 6379, "client": "ycsb-redis"})
    assert not image_server.definition(spec).authenticates


def test_clients_get_the_password_in_private_files_only_while_they_run(tmp_path: Path) -> None:
    ctx = BuildContext(tmp_path, Ledger(tmp_path / "l.db", "r"), "r", proc.run, password=SECRET)
    server = ServerSpec(kind="cassandra")
    f = Fleet(server, SERVERS["cassandra"], [], Device("/dev/null", "none", 0), "native")
    with credentials(f, ctx):
        made = sorted(p for p in tmp_path.iterdir() if p.name.startswith("client-"))
        assert [stat.S_IMODE(p.stat().st_mode) for p in made] == [0o600, 0o600]
        assert {p.read_text() for p in made} == {f"*:*:*:postgres:{SECRET}\n", f"cassandra.password={SECRET}\n"}
        props = next(p for p in made if p.suffix == ".properties")
        argv = ycsb.argv("java", "/c", "cql", "run", {"cassandra.host": "h"}, [str(props)])
        assert argv[argv.index("-P") + 1] == str(props) and all(SECRET not in a for a in argv)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("client-")]


def test_an_image_server_on_the_host_network_is_refused(full_caps: HostCaps) -> None:
    image = {"image": "redis:7", "port": 6379, "client": "ycsb-redis"}
    stack = {"filesystem": "xfs", "engine": "docker:overlay2", "placement": "volume", "server": image}
    spec = {"name": "t", "stacks": [{**stack, "tuning": "host-network"}], "workloads": [{"kind": "ycsb", "name": "A"}]}
    m = expand(load.parse(yaml.safe_dump(spec)), dataclasses.replace(full_caps, images={"redis:7": None}))
    assert not m.cells and "would listen on every interface of this host" in m.refused[0].reason


@pytest.mark.parametrize("engine", ["swarm", "kubernetes"])
def test_ferretdb_which_cannot_ask_for_a_password_stays_off_clusters(full_caps: HostCaps, engine: str) -> None:
    stack = {"filesystem": "ext4", "engine": {"kind": engine, "node": "n1"}, "placement": "bind"}
    spec = {"name": "t", "device": {"kind": "zram", "size": "1GiB"}, "stacks": [{**stack, "server": "ferretdb"}],
            "workloads": [{"kind": "ycsb", "name": "A"}]}  # fmt: skip
    if engine == kubernetes.KIND:
        caps = full_caps.with_engine(engine, KubeCaps({"n1": ClusterNode(ready=True, local=True)}))
    else:
        caps = full_caps.with_engine(engine, SwarmCaps({"n1": SwarmNode(ready=True, unreachable=None)}))
    m = expand(load.parse(yaml.safe_dump(spec)), caps)
    assert not m.cells and any("ferretdb has no authentication" in r.reason for r in m.refused), m.refused
