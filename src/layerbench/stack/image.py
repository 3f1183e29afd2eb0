"""An image assembled from the host's own binaries and their shared libraries.

No registry is needed, and native and container cells run the *same* fio
binary (its sha256 is a label of the image), so a difference between them is
the container's, not a different build's.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import tarfile
from pathlib import Path

from layerbench.errors import PrerequisiteError
from layerbench.stack.dockerd import DockerEngine
from layerbench.stack.target import BuildContext

REPOSITORY = "layerbench/tools"
PASSWD = b"root:x:0:0:root:/root:/bin/sh\n"


def parse_ldd(text: str) -> list[str]:
    """Absolute paths of the libraries (and the loader) that ldd lists."""
    paths = []
    for line in text.splitlines():
        match = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x[0-9a-f]+\)", line)
        if match:
            paths.append(match.group(1))
    return paths


def closure(binaries: list[str], ctx: BuildContext) -> list[str]:
    """Every file the binaries need, with symlinks and their targets both kept."""
    files: list[str] = []
    for name in binaries:
        path = shutil.which(name)
        if path is None:
            raise PrerequisiteError(f"{name} is not installed on this host", hint="make setup installs it")
        files.append(os.path.realpath(path))
        files += parse_ldd(ctx.runner(["ldd", path], timeout=30).check().stdout)
    return list(dict.fromkeys(files))


def content_tag(files: list[str]) -> str:
    digest = hashlib.sha256()
    for f in sorted(files):
        digest.update(f.encode())
        digest.update(Path(f).read_bytes())
    return digest.hexdigest()[:16]


def ensure_image(engine: DockerEngine, binaries: list[str], ctx: BuildContext) -> str:
    files = closure(binaries, ctx)
    ref = f"{REPOSITORY}:{content_tag(files)}"
    if engine.client.images.list(name=ref):
        return ref
    tar_path = ctx.work_dir / f"image-{ref.rsplit(':', 1)[1]}.tar"
    try:
        _write_rootfs(tar_path, binaries, files)
        engine.client.api.import_image_from_file(str(tar_path), repository=REPOSITORY, tag=ref.rsplit(":", 1)[1])
    finally:
        tar_path.unlink(missing_ok=True)
    return ref


def _write_rootfs(tar_path: Path, binaries: list[str], files: list[str]) -> None:
    with tarfile.open(tar_path, "w") as tar:
        for d in ("data", "tmp", "etc", "usr/bin", "bin"):
            _dir(tar, d, 0o1777 if d == "tmp" else 0o755)
        _bytes(tar, "etc/passwd", PASSWD)
        for f in files:
            _add_with_links(tar, f)
        for name in binaries:
            path = shutil.which(name)
            assert path is not None  # closure() checked
            for alias in {path, f"/usr/bin/{name}"}:
                if alias.lstrip("/") not in tar.getnames():
                    _symlink(tar, alias.lstrip("/"), os.path.realpath(path))


def _add_with_links(tar: tarfile.TarFile, path: str) -> None:
    # ldd prints the name the loader looks up (often a symlink): keep the link and its target.
    current = path
    for _ in range(10):
        name = current.lstrip("/")
        if name not in tar.getnames():
            tar.add(current, arcname=name, recursive=False)
        if not os.path.islink(current):
            return
        current = os.path.join(os.path.dirname(current), os.readlink(current))
        current = os.path.normpath(current)


def _dir(tar: tarfile.TarFile, name: str, mode: int) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.mode = tarfile.DIRTYPE, mode
    tar.addfile(info)


def _bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), 0o644
    tar.addfile(info, io.BytesIO(data))


def _symlink(tar: tarfile.TarFile, name: str, target: str) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, target
    tar.addfile(info)
