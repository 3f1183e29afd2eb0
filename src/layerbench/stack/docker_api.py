"""The Docker SDK, as the engines that reach a daemon by URL share it (a swarm node's, a Docker host's): a
client of a daemon at a URL (with TLS files named in its fragment), the tools image loaded into it from a
docker-archive, and removal of images and volumes by the daemon's URL (for ``cleanup``). No engine's own.
"""

from __future__ import annotations

import contextlib
import secrets
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import docker
from docker.errors import NotFound
from docker.tls import TLSConfig

from layerbench.errors import PrerequisiteError
from layerbench.stack.image import IDLE, REPOSITORY, recipe
from layerbench.stack.image_archive import ImageRecipe, write_archive
from layerbench.stack.ledger import Resource, tracked
from layerbench.stack.target import BuildContext

RUN_LABEL = "layerbench.run"
# One engine's objects within a run: held stacks on one daemon (stack/pool.py) each remove only their own.
SCOPE_LABEL = "layerbench.scope"
API_TIMEOUT_S = 60


def client(url: str, timeout: float = API_TIMEOUT_S) -> docker.DockerClient:
    """A client of the daemon at ``url``; a fragment names TLS files (EngineSpec.daemon): then the daemon's
    certificate is verified against the CA (and its host name), and this client shows its own, as
    ``docker --tlsverify`` does."""
    base, _, fragment = url.partition("#")
    if not fragment:
        return docker.DockerClient(base_url=url, timeout=timeout)
    return _TlsClient(base_url=base, timeout=timeout, tls=tls_config(fragment))


class _TlsApiClient(docker.APIClient):
    """The SDK's client whose requests trust tls.ca alone. requests lets REQUESTS_CA_BUNDLE or
    CURL_CA_BUNDLE in the environment replace a session's CA file on every request (psf/requests#3829),
    which would verify the daemon against the system's CAs instead; docker --tlsverify never does that."""

    def merge_environment_settings(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        settings: dict[str, Any] = super().merge_environment_settings(*args, **kwargs)
        settings["verify"] = self.verify
        return settings


class _TlsClient(docker.DockerClient):
    def __init__(self, **kwargs: Any) -> None:
        self.api = _TlsApiClient(**kwargs)  # all DockerClient's own __init__ does, with the client above


def tls_config(fragment: str) -> TLSConfig:
    files = dict(urllib.parse.parse_qsl(fragment))
    for role in ("ca", "cert", "key"):
        if role in files and not Path(files[role]).is_file():
            raise PrerequisiteError(f"tls.{role}: no file at {files[role]}", hint="give the PEM file's path")
    pair = (files["cert"], files["key"]) if "cert" in files else None
    return TLSConfig(client_cert=pair, ca_cert=files["ca"], verify=True)


def shown(url: str) -> str:
    """A daemon's URL as a person reads it (without its TLS files)."""
    return url.partition("#")[0]


def image_on(
    daemon: docker.DockerClient,
    socket: str,
    binaries: dict[str, str],
    ctx: BuildContext,
    exits: contextlib.ExitStack,
    files: tuple[str, ...] = (),
    kind: str = "swarm-image",
) -> str:
    """The image of these host binaries on a daemon layerbench did not start (a swarm node's, a Docker
    host's): loaded there unless it has it, removed (ledger ``kind``) when ``exits`` closes and no other
    engine of the run uses it there (stack/shared.py)."""
    _, _, tag = recipe(binaries, ctx, files)
    ref = f"{REPOSITORY}:{tag}"

    def load(owned: contextlib.ExitStack) -> str:
        if has_image(daemon, ref):
            return ref  # the daemon's own (an image it had before is left there)
        archive = ctx.work_dir / f"{kind}-{tag}.tar"
        write_archive(ImageRecipe(ref, binaries, list(files), IDLE), archive)
        try:
            owned.enter_context(loaded_image(daemon, socket, archive, ref, ctx, kind))
        finally:
            archive.unlink(missing_ok=True)
        return ref

    return str(exits.enter_context(ctx.shared.use((socket, ref), load)))


@contextmanager
def loaded_image(
    daemon: docker.DockerClient, socket: str, archive: Path, ref: str, ctx: BuildContext, kind: str = "swarm-image"
) -> Iterator[str]:
    """``ref`` loaded into the daemon at ``socket`` from a docker-archive (no registry needed), removed after."""

    def create(rid: int) -> str:
        with archive.open("rb") as f:
            daemon.images.load(f)
        return ref

    with tracked(ctx.ledger, kind, ref, create, lambda _: remove_image(socket, ref), socket=socket):
        yield ref


def has_image(daemon: docker.DockerClient, ref: str) -> bool:
    try:
        daemon.images.get(ref)
    except NotFound:
        return False
    return True


def remove_image(socket: str, ref: str) -> None:
    with contextlib.closing(client(socket)) as daemon, contextlib.suppress(NotFound):
        daemon.images.remove(ref)


def remove_volume(socket: str, name: str) -> None:
    with contextlib.closing(client(socket)) as daemon, contextlib.suppress(NotFound):
        daemon.volumes.get(name).remove(force=True)


def first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]


# Removers for `cleanup`, from the ledger's rows of a daemon at a URL.
def reclaim_volume(res: Resource, runner: Any) -> None:
    remove_volume(res.detail["socket"], res.ident)


def reclaim_image(res: Resource, runner: Any) -> None:
    remove_image(res.detail["socket"], res.ident)


def scope_labels(run_id: str) -> dict[str, str]:
    """The labels of one engine's objects on a daemon: the run's (what `cleanup` sweeps after a kill) and
    the engine's own scope (what the engine sweeps when it closes, leaving the other held stacks' alone)."""
    return {RUN_LABEL: run_id, SCOPE_LABEL: f"{run_id}.{secrets.token_hex(3)}"}
