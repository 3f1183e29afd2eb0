"""The top layer: where the workload's data lives, natively or in a container."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import tarfile
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from docker.errors import DockerException, NotFound
from docker.models.containers import Container

from layerbench.errors import ToolError
from layerbench.proc import Completed
from layerbench.spec.models import Limits, PlacementSpec
from layerbench.stack.dockerd import DockerEngine
from layerbench.stack.ledger import tracked
from layerbench.stack.target import BuildContext, Mount, Put, Target

DATA = "/data"


@contextmanager
def native_placement(mount: Mount, spec: PlacementSpec, ctx: BuildContext) -> Iterator[Target]:
    def run(argv: Sequence[str], timeout: float) -> Completed:
        return ctx.runner(argv, timeout=timeout)

    def put(name: str, text: str) -> str:
        # Beside the run's files, not in the placement: it must not count as test data.
        path = ctx.work_dir / name
        path.write_text(text)
        return str(path)

    if spec.kind == "raw":
        yield Target(run, put, mount.device.path, True, mount.device, "native", {"placement": "raw"})
        return
    assert mount.mountpoint is not None  # the feasibility rules guarantee a filesystem here
    with _host_dir(mount.mountpoint / "lb-data", ctx) as path:
        yield Target(run, put, str(path), False, mount.device, "native", {"placement": spec.kind})


@contextmanager
def _host_dir(path: Path, ctx: BuildContext) -> Iterator[Path]:
    def make(rid: int) -> Path:
        path.mkdir(mode=0o700)
        return path

    with tracked(ctx.ledger, "dir", str(path), make, lambda p: shutil.rmtree(p, ignore_errors=True)) as made:
        yield made


@contextmanager
def container_placement(
    engine: DockerEngine,
    image: str,
    mount: Mount,
    spec: PlacementSpec,
    limits: Limits,
    data_bytes: int,
    ctx: BuildContext,
) -> Iterator[Target]:
    with contextlib.ExitStack() as stack:
        kwargs = _limits(limits, mount.device.path)
        if spec.kind == "volume":
            name = stack.enter_context(_volume(engine, ctx))
            kwargs["volumes"] = {name: {"bind": DATA, "mode": "rw"}}
        elif spec.kind == "bind":
            assert mount.mountpoint is not None
            host = stack.enter_context(_host_dir(mount.mountpoint / f"lb-bind-{uuid.uuid4().hex[:8]}", ctx))
            kwargs["volumes"] = {str(host): {"bind": DATA, "mode": "rw"}}
        elif spec.kind == "tmpfs":
            # Room for the test file plus fio's own files; tmpfs only takes what is written.
            kwargs["tmpfs"] = {DATA: f"size={data_bytes + 64 * 2**20}"}
        container = stack.enter_context(_container(engine, image, kwargs, ctx))
        info = {
            "placement": spec.kind,
            "container": container.id[:12],
            "image": image,
            "driver": engine.driver,
            "limits": limits.model_dump(mode="json", exclude_none=True),
        }
        yield Target(_exec_in(engine, container), _put_in(container), DATA, False, mount.device, "docker", info)


def _limits(limits: Limits, device: str) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    if limits.cpuset:
        kwargs["cpuset_cpus"] = limits.cpuset
    if limits.cpus:
        kwargs["nano_cpus"] = int(limits.cpus * 1e9)
    if limits.memory:
        kwargs["mem_limit"] = int(limits.memory)
    if limits.read_bps:
        kwargs["device_read_bps"] = [{"Path": device, "Rate": int(limits.read_bps)}]
    if limits.write_bps:
        kwargs["device_write_bps"] = [{"Path": device, "Rate": int(limits.write_bps)}]
    return kwargs


@contextmanager
def _volume(engine: DockerEngine, ctx: BuildContext) -> Iterator[str]:
    name = f"lb-{uuid.uuid4().hex[:8]}"

    def create(rid: int) -> str:
        return engine.client.volumes.create(name=name, driver="local").name

    def remove(vol: str) -> None:
        with contextlib.suppress(NotFound):
            engine.client.volumes.get(vol).remove(force=True)

    with tracked(ctx.ledger, "volume", name, create, remove, socket=str(engine.socket)) as vol:
        yield vol


@contextmanager
def _container(engine: DockerEngine, image: str, kwargs: dict[str, Any], ctx: BuildContext) -> Iterator[Container]:
    name = f"lb-{ctx.run_id[-4:]}-{uuid.uuid4().hex[:6]}"

    def create(rid: int) -> Container:
        return engine.client.containers.run(
            image,
            ["sleep", "infinity"],
            name=name,
            detach=True,
            network_mode="none",
            labels={"layerbench.run": ctx.run_id},
            **kwargs,
        )

    def remove(container: Container) -> None:
        with contextlib.suppress(NotFound):
            container.remove(force=True, v=True)

    with tracked(ctx.ledger, "container", name, create, remove, socket=str(engine.socket)) as container:
        yield container


def _exec_in(engine: DockerEngine, container: Container):  # -> Exec
    api = engine.client.api

    def run(argv: Sequence[str], timeout: float) -> Completed:
        args = [str(a) for a in argv]
        exec_id = api.exec_create(container.id, args, stdout=True, stderr=True)["Id"]
        result: dict[str, Any] = {}
        worker = threading.Thread(target=_collect, args=(api, exec_id, result), daemon=True)
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            _kill_exec(api, exec_id)
            worker.join(10)
            raise ToolError(args, None, f"timed out after {timeout:.0f}s inside container {container.name}")
        if "error" in result:
            raise ToolError(args, 125, f"docker exec failed: {result['error']}")
        code = api.exec_inspect(exec_id)["ExitCode"]
        return Completed(args, int(code if code is not None else 125), result["out"], result["err"])

    return run


def _put_in(container: Container) -> Put:
    def put(name: str, text: str) -> str:
        data = text.encode()
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        container.put_archive("/tmp", buf.getvalue())
        return f"/tmp/{name}"

    return put


def _collect(api: Any, exec_id: str, result: dict[str, Any]) -> None:
    try:
        out, err = api.exec_start(exec_id, demux=True)
        result["out"] = (out or b"").decode(errors="replace")
        result["err"] = (err or b"").decode(errors="replace")
    except DockerException as exc:
        result["error"] = str(exc)


def _kill_exec(api: Any, exec_id: str) -> None:
    # exec has no timeout of its own: kill the exec'd process by its host PID.
    pid = api.exec_inspect(exec_id).get("Pid")
    if pid:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
