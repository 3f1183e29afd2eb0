"""The OCI runtimes of spec/engines/runtimes.py on this host: can each run a container here, and what it is.

Whether a runtime runs here is asked of the runtime itself, before anything is built: it runs
``/bin/true`` in a throw-away bundle (a root filesystem of that binary and its libraries, its state in
a temporary directory, no network, only /proc mounted). crun 1.8 on a host with cgroup v1 controllers and a v2
hierarchy answers "cgroups in hybrid mode not supported": that answer, the host's own, is the refusal.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

from layerbench.errors import ToolError
from layerbench.proc import Runner
from layerbench.spec.engines.runtimes import DEFAULT_RUNTIME, RUNTIMES
from layerbench.stack.ldd import parse_ldd

PROBE_TIMEOUT_S = 60.0  # gVisor's sandbox starts in about 0.2 s; a busy host is slower
PROBE_BINARY = "/bin/true"


def probe(name: str, runner: Runner) -> str | None:
    """None where runtime ``name`` runs a container on this host, else why not (in its own words)."""
    rt = RUNTIMES[name]
    binary = _binary(name)
    if binary is None:
        return f"{name} is not installed (apt-get install {rt.package}; make setup does)"
    with tempfile.TemporaryDirectory(prefix="lb-runtime-") as tmp:
        bundle, state = Path(tmp) / "bundle", Path(tmp) / "state"
        state.mkdir()
        _bundle(bundle, runner)
        ident = f"lb-probe-{uuid.uuid4().hex[:8]}"
        try:
            done = runner(
                [binary, *rt.args, "--root", str(state), "run", "--bundle", str(bundle), ident], timeout=PROBE_TIMEOUT_S
            )
        except ToolError as exc:  # timed out
            return f"{name} could not run a container here: {exc}"
        finally:
            runner([binary, "--root", str(state), "delete", "--force", ident], timeout=PROBE_TIMEOUT_S)
        if done.rc != 0:
            said = last_line(done.stderr or done.stdout) or f"exit status {done.rc}"
            return f"{name} cannot run a container on this host: {said}"
    return None


def _binary(name: str) -> str | None:
    """The runtime's binary: on PATH, or in an sbin directory a root shell may lack (runc is in /usr/sbin)."""
    binary = RUNTIMES[name].binary
    return shutil.which(binary) or shutil.which(binary, path="/usr/sbin:/sbin")


def _bundle(bundle: Path, runner: Runner) -> None:
    """An OCI bundle whose root filesystem holds /bin/true and the libraries it loads."""
    rootfs = bundle / "rootfs"
    libraries = parse_ldd(runner(["ldd", PROBE_BINARY], timeout=30).stdout)
    for path in (PROBE_BINARY, *libraries):
        target = rootfs / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(Path(path).resolve(), target)
    for mountpoint in ("proc", "dev", "sys", "tmp"):  # crun on cgroup v2 opens /dev in the rootfs
        (rootfs / mountpoint).mkdir(exist_ok=True)
    (bundle / "config.json").write_text(json.dumps(_config()))


def _config() -> dict[str, Any]:
    return {
        "ociVersion": "1.0.2",
        "process": {
            "terminal": False,
            "user": {"uid": 0, "gid": 0},
            "args": [PROBE_BINARY],
            "env": ["PATH=/bin:/usr/bin"],
            "cwd": "/",
            "noNewPrivileges": True,
        },
        "root": {"path": "rootfs", "readonly": True},
        "hostname": "lb-probe",
        "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}],  # runc closes fds by /proc
        "linux": {"namespaces": [{"type": t} for t in ("pid", "ipc", "uts", "mount", "network")]},
    }


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[-1]
    # runc logs as logrus: time="..." level=error msg="..."; the message is what a person reads.
    found = re.search(r'msg="((?:[^"\\]|\\.)*)"', line)
    return found.group(1).replace('\\"', '"') if found else line


def daemon_config(name: str) -> dict[str, Any]:
    """What dockerd's config file says to make ``name`` every container's runtime (runc is built in)."""
    rt = RUNTIMES[name]
    if name == DEFAULT_RUNTIME:
        return {"default-runtime": name}
    path = _binary(name) or rt.binary
    entry: dict[str, Any] = {"path": path}
    if rt.args:
        entry["runtimeArgs"] = list(rt.args)
    return {"runtimes": {name: entry}, "default-runtime": name}


def facts(name: str, runner: Runner) -> dict[str, Any]:
    """The runtime as a result records it: its version line and the options it runs with (gVisor: its
    platform and file-system mode, its defaults unless the options name them)."""
    rt = RUNTIMES[name]
    done = runner([_binary(name) or rt.binary, "--version"], timeout=30)
    found: dict[str, Any] = {"name": name, "version": _first_line(done.stdout), "args": list(rt.args)}
    if rt.recorded:
        given = dict(arg.lstrip("-").split("=", 1) for arg in rt.args if "=" in arg)
        found.update({key: given.get(key, default) for key, default in rt.recorded.items()})
    return found


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")
