"""The local Kubernetes cluster (tools/localcluster): three nodes, up once for the tier, down after."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from layerbench.stack.capabilities import DEFAULT_CACHE

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

from localcluster import k8s


@pytest.fixture(scope="session")
def cluster() -> Iterator[k8s.State]:
    root = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="lbk8s-")) / "cluster"
    state = k8s.up(root, DEFAULT_CACHE / "k8s" / "bin", nodes=3)
    try:
        yield state
    finally:
        left = k8s.down(root)
        root.parent.rmdir()
        assert left == [], f"the local cluster left {left}"
