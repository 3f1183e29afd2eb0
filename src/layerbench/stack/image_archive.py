"""Docker-archive files (``docker save``'s format) made from this host's binaries, with no daemon.

What a user without a registry brings to an image server (the tests make one, so the image path is
exercised for real), and how layerbench hands its tools image to engines it cannot build images in
(a Kubernetes node's containerd imports the file). The rootfs is layerbench's own host-binary recipe
(stack/image.py); the archive around it is the format ``docker load`` and ``ctr images import`` read:
manifest.json, the image's config, one layer.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from layerbench import proc
from layerbench.stack.image import changes, closure, plan, write_rootfs


@dataclass(frozen=True)
class ImageRecipe:
    tag: str  # repository:tag, as `docker load` will name it
    binaries: dict[str, str]  # name -> host path
    files: list[str]  # other host files (the entrypoint script among them)
    entrypoint: list[str]
    port: int | None = None
    env: tuple[str, ...] = ()


def write_archive(recipe: ImageRecipe, out: Path) -> Path:
    """``out``: a docker-archive of one layer holding the recipe's files at their host paths."""
    ctx = SimpleNamespace(runner=proc.run)
    entries = plan(closure(recipe.binaries, ctx, recipe.files))  # type: ignore[arg-type]
    layer = out.with_suffix(".layer.tar")
    try:
        write_rootfs(layer, entries)
        diff_id = "sha256:" + _sha256(layer)
        config = json.dumps(_config(recipe, diff_id)).encode()
        config_name = hashlib.sha256(config).hexdigest() + ".json"
        manifest = [{"Config": config_name, "RepoTags": [recipe.tag], "Layers": ["layer/layer.tar"]}]
        with tarfile.open(out, "w") as tar:
            tar.add(layer, "layer/layer.tar")
            _add_bytes(tar, config_name, config)
            _add_bytes(tar, "manifest.json", json.dumps(manifest).encode())
    finally:
        layer.unlink(missing_ok=True)
    return out


def _config(recipe: ImageRecipe, diff_id: str) -> dict[str, Any]:
    path_env = [c.removeprefix("ENV ") for c in changes(recipe.binaries, {}) if c.startswith("ENV ")]
    return {
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "Env": [*path_env, *recipe.env],
            "Entrypoint": recipe.entrypoint,
            "ExposedPorts": {f"{recipe.port}/tcp": {}} if recipe.port else {},
        },
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    }


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))
