"""Markers skip, with the reason, where this machine lacks what a test needs.

CI installs everything (`make test` runs the same setup as `make run`; `make test-k8s` and `make
test-vm` build their tiers' parts), so on CI none of these may skip: with CI=true each such skip is a
failure that says what is missing (tests/skip_policy.py). The only skips CI keeps are those this kind
of machine cannot avoid, each named in tests/unavoidable_skips.py.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable

import pytest
from hypothesis import settings

from tests.pg_service import pg_service, pg_url  # noqa: F401 (fixtures: pytest finds them by name here)
from tests.skip_policy import (  # noqa: F401 (hooks: pytest finds them by name in this module)
    on_ci,
    pytest_configure,
    pytest_make_collect_report,
    pytest_runtest_makereport,
    pytest_terminal_summary,
)

# On CI the fuzzers draw the same cases every run (derandomize): a case that breaks layerbench is still
# found there, on the commit that brings it, never at random on a later one. Elsewhere they explore.
settings.register_profile("ci", derandomize=True)
if on_ci(os.environ):
    settings.load_profile("ci")


def _root_missing() -> str | None:
    if os.geteuid() != 0:
        return "not root"
    return None if os.path.exists("/dev/loop-control") else "no /dev/loop-control"


def _binaries_missing(*names: str) -> str | None:
    return ", ".join(b for b in names if shutil.which(b) is None) or None


def _k8s_missing() -> str | None:
    from layerbench.stack.capabilities import DEFAULT_CACHE

    bins = DEFAULT_CACHE / "k8s" / "bin"
    needed = [bins / b for b in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "pause")]
    missing = [str(p) for p in needed if not p.exists()]
    missing += [b for b in ("etcd", "containerd", "ctr", "runc", "openssl") if shutil.which(b) is None]
    missing += [p for p in ("/usr/lib/cni/bridge", "/usr/lib/cni/host-local") if not os.path.exists(p)]
    return ", ".join(missing) or None


def _perf_missing() -> str | None:
    from layerbench import proc
    from layerbench.profiling import perf

    return perf.missing(proc.run)


def _vm_missing() -> str | None:
    from layerbench.stack.capabilities import DEFAULT_CACHE
    from layerbench.stack.engines.vm import qemu

    return qemu.missing(DEFAULT_CACHE)


def _iozone_missing() -> str | None:
    from layerbench.stack.capabilities import DEFAULT_CACHE
    from layerbench.workloads import iozone

    return iozone.missing(DEFAULT_CACHE)


def _databases_missing() -> str | None:
    from layerbench.stack.capabilities import DEFAULT_CACHE, clients, database_servers

    notes: list[str] = []
    servers = database_servers(notes, DEFAULT_CACHE)
    if not {"postgres", "redis"} <= servers or not {"ycsb", "pgbench"} <= clients(DEFAULT_CACHE, notes):
        return "; ".join(notes) or "pgbench is not installed"
    return None


def _postgres_missing() -> str | None:
    from tests.pg_service import available

    return available()


def _cassandra_missing() -> str | None:
    from layerbench.stack.capabilities import DEFAULT_CACHE, clients, database_servers

    notes: list[str] = []
    if "cassandra" not in database_servers(notes, DEFAULT_CACHE) or "ycsb" not in clients(DEFAULT_CACHE, notes):
        return "; ".join(notes) or "Cassandra's jars or the YCSB jars"
    # A YCSB lib built before the CQL binding (an older checkout's build-ycsb.sh) lacks its driver.
    if not list((DEFAULT_CACHE / "ycsb" / "lib").glob("java-driver-core-*.jar")):
        return "the YCSB jars lack the CQL driver (java/build-ycsb.sh rebuilds them)"
    return None


def _ferretdb_missing() -> str | None:
    from layerbench.stack.capabilities import DEFAULT_CACHE, clients, database_servers

    notes: list[str] = []
    if "ferretdb" not in database_servers(notes, DEFAULT_CACHE) or "ycsb" not in clients(DEFAULT_CACHE, notes):
        return "; ".join(notes) or "FerretDB or the YCSB jars"
    # A YCSB lib built before the MongoDB binding (an older checkout's build-ycsb.sh) lacks its driver.
    if not list((DEFAULT_CACHE / "ycsb" / "lib").glob("mongodb-driver-sync-*.jar")):
        return "the YCSB jars lack the MongoDB driver (java/build-ycsb.sh rebuilds them)"
    return None


# marker -> (what of it this machine lacks, None if nothing; what the marker needs and what installs it)
REQUIREMENTS: dict[str, tuple[Callable[[], str | None], str]] = {
    "requires_root": (_root_missing, "needs root and loop devices"),
    "requires_fio": (lambda: _binaries_missing("fio"), "needs fio (apt-get install fio)"),
    "requires_docker": (
        lambda: _binaries_missing("dockerd", "containerd", "runc"),
        "needs dockerd, containerd and runc (apt-get install docker.io)",
    ),
    "requires_podman": (
        lambda: _binaries_missing("podman", "conmon", "runc"),
        "needs podman, conmon and runc (apt-get install podman)",
    ),
    "requires_iozone": (
        _iozone_missing,
        "needs IOzone in the cache (make setup fetches it from Debian's non-free or Ubuntu's multiverse)",
    ),
    "requires_postgres": (
        _postgres_missing,
        "needs PostgreSQL's server (apt-get install postgresql; make setup does) and root (it runs as nobody)",
    ),
    "requires_db": (
        _databases_missing,
        "needs PostgreSQL, Redis, pgbench, java and the YCSB jars (make setup installs and builds them)",
    ),
    "requires_cassandra": (
        _cassandra_missing,
        "needs java, Cassandra's jars and the YCSB jars with the CQL driver in the cache (make setup fetches them)",
    ),
    "requires_ferretdb": (
        _ferretdb_missing,
        "needs FerretDB in the cache (make ferretdb builds it with Go 1.24), java and the YCSB jars (make setup)",
    ),
    "requires_remote": (
        lambda: _binaries_missing("qemu-nbd", "nbdinfo", "nbdfuse", "tc"),
        "needs qemu-nbd, nbdinfo and nbdfuse (make setup installs qemu-utils and libnbd-bin)",
    ),
    "requires_ceph": (
        lambda: _binaries_missing("ceph-mon", "ceph-mgr", "ceph-osd", "ceph", "rbd", "rbd-fuse", "monmaptool"),
        "needs Ceph's daemons, its ceph and rbd tools and rbd-fuse (make setup, or make apt-ceph, installs them)",
    ),
    "requires_perf": (
        _perf_missing,
        "needs perf recording the whole machine (make setup installs linux-perf)",
    ),
    "requires_k8s": (
        _k8s_missing,
        "needs Kubernetes in the cache (make k8s builds it), etcd, containerd and the CNI plugins (make test-k8s)",
    ),
    "requires_vm": (
        _vm_missing,
        "needs qemu and the test VM image (make vm-image builds it; make test-vm runs this tier)",
    ),
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    lacking: dict[str, str | None] = {}  # each check once a session: some probe the host
    for item in items:
        for marker, (missing, needs) in REQUIREMENTS.items():
            if item.get_closest_marker(marker) is None:
                continue
            if marker not in lacking:
                lacking[marker] = missing()
            if lacking[marker] is not None:
                item.add_marker(pytest.mark.skip(reason=f"{needs}; missing here: {lacking[marker]}"))
