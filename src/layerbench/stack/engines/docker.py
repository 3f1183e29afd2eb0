"""The Docker engine: a private dockerd per storage driver (stack/dockerd.py), its API for the rest."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from layerbench.errors import LayerbenchError
from layerbench.proc import Runner
from layerbench.spec.models import EngineSpec
from layerbench.stack import devmapper, dockerd, runtimes
from layerbench.stack.cgroups import remove_parent
from layerbench.stack.engines.container import ApiEngine
from layerbench.stack.ledger import Resource
from layerbench.stack.target import BuildContext, Mount

# What the Docker API's exec answers when the container or its daemon is gone (stack/placement.py).
EXEC_FAILED_RC = 125


@contextmanager
def start(mount: Mount, spec: EngineSpec, ctx: BuildContext) -> Iterator[ApiEngine]:
    """A private dockerd on ``mount``; for devicemapper's direct-lvm, on a thin pool built for it first
    (and removed after the daemon); with the spec's OCI runtime as every container's."""
    with contextlib.ExitStack() as stack:
        pool = stack.enter_context(devmapper.thin_pool(mount, ctx)) if spec.mode == "direct-lvm" else None
        opts = tuple(devmapper.storage_opts(spec.mode, pool))
        config = runtimes.daemon_config(spec.runtime) if spec.runtime else {}
        if spec.seccomp:
            config["seccomp-profile"] = str(Path(spec.seccomp).resolve())
        daemon = stack.enter_context(dockerd.private_dockerd(mount, spec.driver or "overlay2", ctx, opts, config))
        daemon.info["runtime"] = runtimes.facts(spec.runtime or "runc", ctx.runner)
        yield ApiEngine(daemon)


def failure(rc: int | None, stderr: str) -> str | None:
    """An exec the daemon could not run: the stack must be rebuilt, the tool is not to blame."""
    return "engine-error" if rc == EXEC_FAILED_RC and "docker exec" in stderr else None


def reclaim(res: Resource, runner: Runner) -> None:
    """A dead run's daemon (dockerd, or Podman's service: both are swept by their two roots and cgroup)."""
    exec_root = Path(res.ident)
    data_root = Path(res.detail.get("data_root", exec_root / "absent"))
    left = dockerd.sweep(exec_root, data_root, runner)
    if left:
        raise LayerbenchError(f"{res.kind} {exec_root.name} left {', '.join(left)}")
    shutil.rmtree(exec_root, ignore_errors=True)
    shutil.rmtree(data_root, ignore_errors=True)
    remove_parent(dockerd.cgroup_parent(exec_root))
    if res.detail.get("log"):
        Path(res.detail["log"]).unlink(missing_ok=True)
