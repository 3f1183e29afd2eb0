"""Where an image server's image comes from: a registry, or a docker-archive file.

A registry reference (``mongo:7``) is pulled by the engine's own daemon, which
needs the registry; whether this host reaches it is probed before the run, so
a cell that could never start is refused with the reason instead of failing
its stack. A file (``docker save``'s tar) is loaded into the daemon with no
registry at all: the way to run an image on a host without one.
"""

from __future__ import annotations

import json
import os
import socket
import tarfile
from pathlib import Path
from typing import TYPE_CHECKING

from layerbench.errors import PrerequisiteError, ToolError
from layerbench.spec.databases import is_archive
from layerbench.spec.engines import API_CLI

if TYPE_CHECKING:  # the host's capabilities probe images before any daemon exists: no import cycle
    from layerbench.stack.dockerd import ApiDaemon

DOCKER_HUB = "registry-1.docker.io"  # what the daemon asks for a reference with no registry in it
CONNECT_TIMEOUT_S = 5.0
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy")


def registry_of(reference: str) -> tuple[str, int]:
    """The registry host and port a reference is pulled from, by Docker's rule: a first path part with
    a dot or a port, or ``localhost``, names the registry; anything else is Docker Hub."""
    first, _, rest = reference.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        host, _, port = first.partition(":")
        return host, int(port) if port.isdigit() else 443
    return DOCKER_HUB, 443


def missing(image: str) -> str | None:
    """Why the engine cannot have this image here, or None."""
    return _archive_missing(Path(image)) if is_archive(image) else _registry_missing(image)


def _archive_missing(path: Path) -> str | None:
    if not path.is_file():
        return f"image archive {path} does not exist (docker save IMAGE -o {path.name} makes one)"
    try:
        with tarfile.open(path) as tar:
            tar.getmember("manifest.json")
    except (tarfile.TarError, KeyError, OSError) as exc:
        return f"{path} is not a docker-archive (docker save's output, with a manifest.json): {exc}"
    return None


def _registry_missing(reference: str) -> str | None:
    host, port = registry_of(reference)
    if any(os.environ.get(v) for v in PROXY_VARIABLES):
        return None  # through a proxy only the daemon's pull can tell: it fails the stack with its answer
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        return (
            f"image {reference} must be pulled from {host}, which this host cannot reach ({exc}); "
            f"on a host that can, `docker save {reference} -o image.tar`, and name that file as the image"
        )
    return None


def acquire(engine: ApiDaemon, image: str) -> str:
    """The image in this daemon (loaded from its file, or pulled); the reference to create containers from."""
    from layerbench.stack.dockerd import API_ERRORS  # here: capabilities imports this module, dockerd it

    if is_archive(image):
        return _load(engine, Path(image))
    try:
        engine.client.images.get(image)
        return image
    except API_ERRORS:
        pass
    try:
        engine.client.images.pull(image)
    except API_ERRORS as exc:
        raise PrerequisiteError(f"image {image} could not be pulled: {exc}") from exc
    return image


def _load(engine: ApiDaemon, path: Path) -> str:
    from layerbench.stack.dockerd import API_ERRORS

    tags = archive_tags(path)
    try:
        with path.open("rb") as f:
            loaded = engine.client.images.load(f)
    except API_ERRORS as exc:
        raise ToolError([API_CLI, "load", "-i", str(path)], 1, str(exc)) from exc
    if tags:
        return tags[0]
    if not loaded:
        raise ToolError([API_CLI, "load", "-i", str(path)], 1, "the daemon loaded no image from it")
    return str(loaded[0].id)


def archive_tags(path: Path) -> list[str]:
    """The references a docker-archive names (its manifest's RepoTags), in its order."""
    with tarfile.open(path) as tar:
        member = tar.extractfile("manifest.json")
        assert member is not None  # a regular file, checked by missing() before the run
        manifest = json.load(member)
    return [tag for entry in manifest for tag in entry.get("RepoTags") or []]
