"""What the Swarm and Docker-host tiers share: a daemon's client, and waiting until a run's fio runs there."""

from __future__ import annotations

import contextlib
import subprocess
from contextlib import AbstractContextManager

import docker

from tests.deadlines import wait_for

# The run builds its stack and loads the tools image first: minutes on a busy machine, never ten.
FIO_START_S = 600.0


def daemon(url: str) -> AbstractContextManager[docker.DockerClient]:
    return contextlib.closing(docker.DockerClient(base_url=url, timeout=60))


def wait_for_fio(url: str, proc: subprocess.Popen[str]) -> None:
    """Until a container of the run on the daemon at ``url`` runs fio (a state, whatever the machine's speed)."""

    def running(d: docker.DockerClient) -> bool:
        for c in d.containers.list(filters={"label": "layerbench.run"}, sparse=True):
            with contextlib.suppress(docker.errors.APIError):  # NotFound among them: gone meanwhile
                if any("fio" in " ".join(p) for p in c.top().get("Processes") or []):
                    return True
        return False

    with daemon(url) as d:
        wait_for(
            lambda: running(d),
            f"a container of the run on {url} to run fio",
            FIO_START_S,
            alive=lambda: proc.poll() is None,
        )
