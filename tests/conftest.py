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
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for marker, (available, reason) in REQUIREMENTS.items():
            if item.get_closest_marker(marker) and not available():
                item.add_marker(pytest.mark.skip(reason=reason))
