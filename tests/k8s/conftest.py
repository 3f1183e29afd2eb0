"""The local clusters (tools/localcluster): three Kubernetes nodes, three Docker Swarm nodes, and two plain
Docker hosts, each up once for the tier (when a test asks for it), down after."""

from __future__ import annotations

import contextlib
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from layerbench.stack.capabilities import DEFAULT_CACHE

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

from localcluster import dockerhosts, k8s, swarm

S = TypeVar("S")


@contextlib.contextmanager
def scratch(prefix: str) -> Iterator[Path]:
    """A directory of the tier's own under /var/tmp, removed after, also when its cluster never came up (a
    cluster's `down` empties it; one that could not is named by the fixture's assertion)."""
    parent = Path(tempfile.mkdtemp(dir="/var/tmp", prefix=prefix))
    try:
        yield parent
    finally:
        with contextlib.suppress(OSError):
            parent.rmdir()


@pytest.fixture(scope="session")
def cluster() -> Iterator[k8s.State]:
    bin_dir = DEFAULT_CACHE / "k8s" / "bin"
    with scratch("lbk8s-") as parent:
        root = parent / "cluster"
        try:
            state = k8s.up(root, bin_dir, nodes=3)
        except TimeoutError as first:
            # Once in CI (stop 43, beside the VM tier) the nodes never became Ready, and the logs that would
            # say why went with the cluster. `up` now puts each node's state and latest errors in its error,
            # and a second cluster is built from scratch, the first failure kept as a warning in the output.
            warnings.warn(f"the local cluster did not come up, built again: {first}", stacklevel=1)
            root = parent / "again"
            state = k8s.up(root, bin_dir, nodes=3)
        try:
            yield state
        finally:
            left = k8s.down(root)
            assert left == [], f"the local cluster left {left}"


@pytest.fixture(scope="session")
def local_swarm() -> Iterator[swarm.State]:
    """Three dockerd in network namespaces, one swarm (node1 its manager); down after, leaving nothing."""
    yield from held("lbswarm-", lambda root: swarm.up(root, nodes=3), swarm.down, "the local swarm")


@pytest.fixture(scope="session")
def docker_hosts() -> Iterator[dockerhosts.State]:
    """Two plain dockerd (no swarm) in network namespaces, reached at tcp://<address>:2375 and by socket;
    down after, leaving nothing."""
    yield from held("lbdocker-", lambda root: dockerhosts.up(root, nodes=2), dockerhosts.down, "the local Docker hosts")


def held(prefix: str, up: Callable[[Path], S], down: Callable[[Path], list[str]], what: str) -> Iterator[S]:
    """``up`` in a scratch directory for the tier's tests, then ``down``, which must leave nothing."""
    with scratch(prefix) as parent:
        root = parent / "cluster"
        state = up(root)
        try:
            yield state
        finally:
            left = down(root)
            assert left == [], f"{what} left {left}"
