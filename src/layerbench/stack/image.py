"""An image assembled from the host's own binaries and their shared libraries.

No registry is needed, and native and container cells run the *same* fio
binary: every binary sits at its host path, with the libraries `ldd` names,
the dynamic loader, and each symlink on the way to them (Debian's merged /usr
makes /lib64/ld-linux-x86-64.so.2 three links deep). The tag is a hash of all
that content, so the same binaries give the same tag and a daemon that has it
is not asked again; each binary's sha256 is a label of the image, so a result
can prove which fio produced it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import os
import re
import shutil
import stat
import tarfile
from dataclasses import dataclass
from pathlib import Path

from docker.errors import ImageNotFound

from layerbench.errors import PrerequisiteError, ToolError
from layerbench.spec.engines import API_CLI
from layerbench.stack.dockerd import API_ERRORS, ApiDaemon
from layerbench.stack.ldd import missing_libraries, parse_ldd
from layerbench.stack.target import BuildContext

REPOSITORY = "layerbench/tools"
RECIPE_VERSION = "1"  # part of the tag: a change to what goes into the image must change the tag
LABEL_PREFIX = "layerbench.sha256."
IDLE = ["sleep", "infinity"]  # a tools container's own process: every command is an exec beside it
DEFAULT_PATH = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
ETC_FILES = {
    "etc/passwd": b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
    "etc/group": b"root:x:0:\nnogroup:x:65534:\n",
}
EMPTY_DIRS = {"data": 0o755, "tmp": 0o1777, "root": 0o700, "etc": 0o755}
MAX_LINKS = 40


def symlink_chain(path: str) -> list[str]:
    """Each symlink met on the way to ``path`` (directories too), then the real file, all absolute."""
    met: list[str] = []
    done, todo = "/", list(Path(os.path.normpath(path)).parts[1:])
    while todo:
        current = os.path.join(done, todo.pop(0))
        if not os.path.islink(current):
            done = current
            continue
        met.append(current)
        if len(met) > MAX_LINKS:
            raise PrerequisiteError(f"{path}: more than {MAX_LINKS} symlinks deep (a loop?)")
        # `done` has no symlinks in it, so a relative target's ".." resolves lexically.
        target = os.path.normpath(os.path.join(done, os.readlink(current)))
        done, todo = "/", [*Path(target).parts[1:], *todo]
    return [*met, done]


@dataclass(frozen=True)
class Entry:
    """One member of the image's tar: a directory, a symlink (``link``) or a host file (``source``)."""

    name: str  # relative to the image root
    mode: int
    link: str | None = None
    source: str | None = None


def plan(files: list[str]) -> list[Entry]:
    """The tar's members for these host files: parent directories first, then links and files."""
    members: dict[str, Entry] = {}
    for path in files:
        for step in symlink_chain(path):
            name = step.lstrip("/")
            if os.path.islink(step):
                members[name] = Entry(name, 0o777, link=os.readlink(step))
            else:
                members[name] = Entry(name, stat.S_IMODE(os.stat(step).st_mode), source=step)
    dirs = {str(p): Entry(str(p), _dir_mode(p)) for name in members for p in Path(name).parents if str(p) != "."}
    dirs.update({d: Entry(d, mode) for d, mode in EMPTY_DIRS.items()})
    return [*(dirs[d] for d in sorted(dirs)), *(members[n] for n in sorted(members))]


def _dir_mode(rel: Path) -> int:
    try:
        return stat.S_IMODE(os.stat(Path("/") / rel).st_mode)
    except OSError:
        return 0o755


def file_sha256(path: str) -> str:
    """The file's sha256, hashed once per version of it: every container stack of a run asks for its image's
    tag, and PostgreSQL's closure (1,500 files) took half a second each time. A file changed in place gets a
    new modification or change time, so it is hashed again."""
    return _sha256_of(path, _version(path))


def _version(path: str) -> tuple[int, ...]:
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@functools.lru_cache(maxsize=8192)
def _sha256_of(path: str, version: tuple[int, ...]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def content_tag(entries: list[Entry], labels: dict[str, str]) -> str:
    """Same members with the same content and labels → same tag."""
    digest = hashlib.sha256(RECIPE_VERSION.encode())
    for e in entries:
        body = file_sha256(e.source) if e.source else (e.link or "")
        digest.update(f"{e.name}\0{e.mode:o}\0{body}\n".encode())
    for key in sorted(labels):
        digest.update(f"{key}={labels[key]}\n".encode())
    return digest.hexdigest()[:16]


def resolve(binaries: list[str]) -> dict[str, str]:
    """Binary name → its path on this host's PATH (the path it also has in the image)."""
    found = {}
    for name in binaries:
        path = shutil.which(name)
        if path is None:
            raise PrerequisiteError(f"{name} is not installed on this host", hint="make setup installs it")
        found[name] = os.path.abspath(path)
    return found


def binary_digests(binaries: list[str]) -> dict[str, str]:
    """Binary name → sha256 of the file it runs: how the native side proves it ran the same fio."""
    return {name: file_sha256(os.path.realpath(path)) for name, path in resolve(binaries).items()}


def closure(paths: dict[str, str], ctx: BuildContext, extra: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The binaries, ``extra`` files, and every library they load (as ldd names them), loader included."""
    files = [*paths.values(), *extra]
    # A library the image itself carries is not missing: the JDK's plugins (libnio.so, ...) need
    # libjvm.so, which ldd cannot find from them but the JVM has loaded before it loads them.
    carried = {os.path.basename(f) for f in files}
    for path in [*paths.values(), *(f for f in extra if f.endswith(".so"))]:
        text = _ldd(path, ctx)
        if text is None:
            continue  # static: nothing to add
        if missing := [lib for lib in missing_libraries(text) if lib not in carried]:
            raise PrerequisiteError(f"{path} needs libraries this host lacks: {', '.join(missing)}")
        files += parse_ldd(text)
    return list(dict.fromkeys(files))


# ldd's answer per version of a file (as file_sha256 keys it): run once per binary in a run, not per stack.
_LDD: dict[tuple[str, tuple[int, ...]], str | None] = {}


def _ldd(path: str, ctx: BuildContext) -> str | None:
    """What ldd says the file loads, or None for a static one."""
    key = (path, _version(path))
    if key not in _LDD:
        done = ctx.runner(["ldd", path], timeout=30)
        static = done.rc != 0 and "not a dynamic executable" in done.stdout + done.stderr
        _LDD[key] = None if static else done.check().stdout
    return _LDD[key]


def ensure_image(
    engine: ApiDaemon,
    binaries: list[str] | dict[str, str],
    ctx: BuildContext,
    files: list[str] | tuple[str, ...] = (),
) -> str:
    """The image reference (``layerbench/tools:<content hash>``), imported into this daemon if missing.

    ``binaries`` are names on PATH, or name → path for binaries kept off PATH (PostgreSQL's);
    ``files`` are other host files the binaries read at run time (plugins, share files).
    """
    paths = binaries if isinstance(binaries, dict) else resolve(binaries)
    entries, labels, tag = recipe(paths, ctx, files)
    ref = f"{REPOSITORY}:{tag}"
    if not _has_image(engine, ref):
        _import(engine, entries, tag, changes(paths, labels), ctx)
    return ref


def recipe(
    paths: dict[str, str], ctx: BuildContext, files: list[str] | tuple[str, ...] = ()
) -> tuple[list[Entry], dict[str, str], str]:
    """What an image of these binaries holds, its labels (each binary's sha256), and its content tag."""
    entries = plan(closure(paths, ctx, files))
    labels = {f"{LABEL_PREFIX}{name}": file_sha256(os.path.realpath(p)) for name, p in paths.items()}
    return entries, labels, content_tag(entries, labels)


def changes(paths: dict[str, str], labels: dict[str, str]) -> list[str]:
    """Dockerfile instructions applied on import: the binaries' directories on PATH, the digests as labels."""
    search = list(dict.fromkeys([*(os.path.dirname(p) for p in paths.values()), *DEFAULT_PATH]))
    return [f"ENV PATH={':'.join(search)}", *(f"LABEL {k}={v}" for k, v in sorted(labels.items()))]


def _import(engine: ApiDaemon, entries: list[Entry], tag: str, changes: list[str], ctx: BuildContext) -> None:
    ref = f"{REPOSITORY}:{tag}"
    tar_path = ctx.work_dir / f"image-{tag}.tar"  # a file, not memory: fio's libraries weigh ~100 MB
    try:
        write_rootfs(tar_path, entries)
        answer = engine.client.api.import_image_from_file(str(tar_path), REPOSITORY, tag, changes)
    except API_ERRORS as exc:
        raise ToolError([API_CLI, "import", ref], 1, str(exc)) from exc
    finally:
        tar_path.unlink(missing_ok=True)
    if not _has_image(engine, ref):
        _tag_imported(engine, answer, tag)
    if not _has_image(engine, ref):
        raise ToolError([API_CLI, "import", ref], 1, f"the daemon answered {answer!r} but has no {ref}")


def _tag_imported(engine: ApiDaemon, answer: str, tag: str) -> None:
    """Podman 4.3's Docker API imports as ``:latest`` whatever tag it is given; its answer names the image."""
    found = re.search(r"sha256:[0-9a-f]{64}", answer or "")
    if found is None:
        return
    with contextlib.suppress(*API_ERRORS):
        engine.client.images.get(found.group(0)).tag(REPOSITORY, tag)
        engine.client.images.remove(f"{REPOSITORY}:latest")


def image_labels(engine: ApiDaemon, ref: str) -> dict[str, str]:
    return dict(engine.client.images.get(ref).labels or {})


def _has_image(engine: ApiDaemon, ref: str) -> bool:
    try:
        engine.client.images.get(ref)
    except ImageNotFound:
        return False
    return True


def write_rootfs(tar_path: Path, entries: list[Entry]) -> None:
    with tarfile.open(tar_path, "w") as tar:
        for e in entries:
            info = tarfile.TarInfo(e.name)
            info.mode = e.mode
            if e.link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, e.link
                tar.addfile(info)
            elif e.source is not None:
                info.size = os.path.getsize(e.source)
                with open(e.source, "rb") as f:
                    tar.addfile(info, f)
            else:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
        for name, data in ETC_FILES.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
