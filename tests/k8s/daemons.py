"""What the Swarm and Docker-host tiers share: a daemon's client, and waiting until a run's fio runs there."""

from __future__ import annotations

import contextlib
import subprocess
import time
from contextlib import AbstractContextManager

import docker


def daemon(url: str) -> AbstractContextManager[docker.DockerClient]:
    return contextlib.closing(docker.DockerClient(base_url=url, timeout=60))


def wait_for_fio(url: str, proc: subprocess.Popen[str]) -> None:
    """Until a container of the run on the daemon at ``url`` runs fio (a state, whatever the machine's speed)."""
    with daemon(url) as d:
        while proc.poll() is None:
            for c in d.containers.list(filters={"label": "layerbench.run"}, sparse=True):
                with contextlib.suppress(docker.errors.APIError):  # NotFound among them: gone meanwhile
                    if any("fio" in " ".join(p) for p in c.top().get("Processes") or []):
                        return
            time.sleep(0.5)
    raise AssertionError(f"the run ended before fio started: {proc.communicate()}")
