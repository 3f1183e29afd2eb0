"""An image server through the whole pipeline: a PostgreSQL image made here (no registry) as a
docker-archive file, loaded by the private daemon and run by its own entrypoint, which initialises
its data where the placement is, as the official image does; YCSB and pgbench against it; a
MongoDB-protocol image (FerretDB's static binary) under YCSB's MongoDB binding; a registry image
(mongo:7) refused before the run with the reason; then nothing left."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from layerbench.stack.capabilities import DEFAULT_CACHE
from layerbench.stack.image import resolve
from layerbench.stack.image_archive import ImageRecipe, write_archive
from layerbench.workloads.servers import ferretdb, postgres
from tests import support
from tests.integration.leftovers import assert_nothing_left, bridges, server_dirs

pytestmark = [
    pytest.mark.requires_root,
    pytest.mark.requires_docker,
    pytest.mark.requires_db,
    pytest.mark.requires_ferretdb,
    pytest.mark.slow,
]

DATA = "/var/lib/postgresql/data"
# The official image's contract, in a few lines: initialise an empty data directory as the server's
# user, let the network in, then become the server (exec: it is the container's process, signalled
# by `docker stop`).
ENTRYPOINT = f"""#!/bin/sh
set -e
as_server="setpriv --reuid=65534 --regid=65534 --clear-groups"
if [ ! -s {DATA}/PG_VERSION ]; then
  mkdir -p {DATA}
  chown 65534:65534 {DATA}
  chmod 700 {DATA}
  $as_server initdb -D {DATA} --no-sync --auth=trust --username=postgres --no-locale -E UTF8 >/dev/null
  echo "host all all 0.0.0.0/0 trust" >> {DATA}/pg_hba.conf
fi
exec $as_server postgres -D {DATA} -c listen_addresses='*' -c unix_socket_directories='' -c jit=off "$@"
"""


@pytest.fixture
def dirs() -> Iterator[dict[str, Path]]:
    with server_dirs("lb-image-test-") as made:
        yield made


def postgres_archive(where: Path) -> Path:
    script = where / "docker-entrypoint.sh"
    script.write_text(ENTRYPOINT)
    script.chmod(0o755)
    binaries = {**resolve(["sh", "mkdir", "chown", "chmod", "setpriv"]), **postgres.binaries()}
    recipe = ImageRecipe("lbtest/postgres:15", binaries, [str(script), *postgres.files()], [str(script)], 5432)
    return write_archive(recipe, where / "postgres-image.tar")


def mongodb_archive(where: Path) -> Path:
    """A MongoDB-protocol server as an image: FerretDB's static binary is its entrypoint."""
    binary = ferretdb.binaries(DEFAULT_CACHE)
    entrypoint = [binary["ferretdb"], "-listen-addr", "0.0.0.0:27017", "-sqlite-dir", "/data/db", "-log-level", "warn"]
    return write_archive(ImageRecipe("lbtest/ferretdb:1", binary, [], entrypoint, 27017), where / "ferret-image.tar")


def test_an_image_server_from_a_file_runs_and_a_registry_image_is_refused(dirs: dict[str, Path]) -> None:
    before = bridges()
    archive = postgres_archive(dirs["work"].parent)
    image = {"image": str(archive), "port": 5432, "client": "ycsb-postgres", "records": 1000, "memory": "256MiB"}
    ferret = {"image": str(mongodb_archive(dirs["work"].parent)), "port": 27017, "client": "ycsb-mongodb",
              "records": 1000}  # fmt: skip
    mongo = {"image": "mongo:7", "port": 27017, "client": "ycsb-mongodb", "records": 1000}
    spec = {
        "name": "image-it",
        "device": {"kind": "zram", "size": "1GiB"},
        "stacks": [
            {"filesystem": "ext4", "engine": "docker:overlay2", "placement": ["volume", "bind"], "server": image},
            {"filesystem": "ext4", "engine": "docker:overlay2", "placement": "volume", "server": mongo},
            {"filesystem": "ext4", "engine": "docker:overlay2", "placement": "bind", "server": ferret},
        ],
        "workloads": [
            {"kind": "ycsb", "name": "A", "mix": "a", "threads": 2, "runtime_s": 2, "warmup_s": 1},
            {"kind": "pgbench", "name": "S", "mode": "select-only", "clients": 2, "runtime_s": 2, "warmup_s": 0},
        ],
    }
    dirs["spec"].write_text(yaml.safe_dump(spec))
    done = support.run(["run", str(dirs["spec"])], dirs)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mongo:7 must be pulled from registry-1.docker.io, which this host cannot reach" in done.stdout
    shown = json.loads(support.run(["show", "latest", "--json"], dirs).stdout)
    cells = {c["stack_label"] + " · " + c["workload"]: c for c in shown["cells"]}
    pg = {f"zram/ext4/docker:overlay2/{p}/postgres-image.tar(1000rec) · {w}" for p in ("volume", "bind") for w in "AS"}
    assert set(cells) == pg | {"zram/ext4/docker:overlay2/bind/ferret-image.tar(1000rec) · A"}  # pgbench: not MongoDB
    assert all(c["summary"]["n"] == 1 and c["summary"]["mean"] > 0 for c in cells.values())
    with sqlite3.connect(dirs["db"]) as db:
        infos = [json.loads(i) for (i,) in db.execute("SELECT info_json FROM trials")]
    assert all(i["endpoints"][0]["container"] for i in infos)  # each served from a container of the image
    assert {i["endpoints"][0]["limits"]["memory"] for i in infos} == {256 * 2**20, 2**30}  # its memory: the limit
    assert_nothing_left(dirs, before)
