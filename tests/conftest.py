"""Markers skip, with the reason, where this machine lacks what a test needs.

CI installs everything (`make test` runs the same setup as `make run`), so on
CI none of these skip.
"""

from __future__ import annotations

import os
import shutil

import pytest

REQUIREMENTS = {
    "requires_root": (lambda: os.geteuid() == 0 and os.path.exists("/dev/loop-control"), "needs root and loop devices"),
    "requires_fio": (lambda: shutil.which("fio") is not None, "needs fio (apt-get install fio)"),
    "requires_docker": (
        lambda: all(shutil.which(b) for b in ("dockerd", "containerd", "runc")),
        "needs dockerd, containerd and runc (apt-get install docker.io)",
    ),
    "requires_podman": (
        lambda: all(shutil.which(b) for b in ("podman", "conmon", "runc")),
        "needs podman, conmon and runc (apt-get install podman)",
    ),
    "requires_iozone": (
        lambda: _iozone_missing() is None,
        "needs IOzone in the cache (make setup fetches it from Debian's non-free or Ubuntu's multiverse)",
    ),
    "requires_db": (
        lambda: _databases_missing() is None,
        "needs PostgreSQL, Redis, pgbench, java and the YCSB jars (make setup installs and builds them)",
    ),
    "requires_cassandra": (
        lambda: _cassandra_missing() is None,
        "needs java, Cassandra's jars and the YCSB jars with the CQL driver in the cache (make setup fetches them)",
    ),
    "requires_ferretdb": (
        lambda: _ferretdb_missing() is None,
        "needs FerretDB in the cache (make ferretdb builds it with Go 1.24), java and the YCSB jars (make setup)",
    ),
    "requires_remote": (
        lambda: all(shutil.which(b) for b in ("qemu-nbd", "nbdinfo", "nbdfuse", "tc")),
        "needs qemu-nbd, nbdinfo and nbdfuse (make setup installs qemu-utils and libnbd-bin)",
    ),
    "requires_perf": (
        lambda: _perf_missing() is None,
        "needs perf recording the whole machine (make setup installs linux-perf)",
    ),
    "requires_k8s": (
        lambda: _k8s_missing() is None,
        "needs Kubernetes in the cache (make k8s builds it), etcd, containerd and the CNI plugins (make test-k8s)",
    ),
    "requires_vm": (
        lambda: _vm_missing() is None,
        "needs qemu and the test VM image (make vm-image builds it; make test-vm runs this tier)",
    ),
}


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
    from layerbench.stack.capabilities import profiler_missing

    return profiler_missing(proc.run)


def _vm_missing() -> str | None:
    from layerbench.stack import vm
    from layerbench.stack.capabilities import DEFAULT_CACHE

    return vm.missing(DEFAULT_CACHE)


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


def _cassandra_missing() -> str | None:
    from layerbench.stack.capabilities import DEFAULT_CACHE, clients, database_servers

    notes: list[str] = []
    if "cassandra" not in database_servers(notes, DEFAULT_CACHE) or "ycsb" not in clients(DEFAULT_CACHE, notes):
        return "; ".join(notes)
    # A YCSB lib built before the CQL binding (an older checkout's build-ycsb.sh) lacks its driver.
    if not list((DEFAULT_CACHE / "ycsb" / "lib").glob("java-driver-core-*.jar")):
        return "the YCSB jars lack the CQL driver (java/build-ycsb.sh rebuilds them)"
    return None


def _ferretdb_missing() -> str | None:
    from layerbench.stack.capabilities import DEFAULT_CACHE, clients, database_servers

    notes: list[str] = []
    if "ferretdb" not in database_servers(notes, DEFAULT_CACHE) or "ycsb" not in clients(DEFAULT_CACHE, notes):
        return "; ".join(notes)
    # A YCSB lib built before the MongoDB binding (an older checkout's build-ycsb.sh) lacks its driver.
    if not list((DEFAULT_CACHE / "ycsb" / "lib").glob("mongodb-driver-sync-*.jar")):
        return "the YCSB jars lack the MongoDB driver (java/build-ycsb.sh rebuilds them)"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for marker, (available, reason) in REQUIREMENTS.items():
            if item.get_closest_marker(marker) and not available():
                item.add_marker(pytest.mark.skip(reason=reason))
