"""A Docker host over TLS, as Docker hosts are exposed in practice: a private dockerd in a network namespace
of its own (tools/localcluster/dockerhosts.py) with ``--tlsverify`` at ``tcp://<its address>:2376``, and
certificates made here with openssl (a CA, the daemon's pair naming its address, a client's pair; and a
second CA that signed nothing of the daemon's). fio runs there through ``engine: {kind: docker-host, node:
tcp://...:2376, tls: {...}}``; a wrong CA, no client certificate, or plain TCP, is refused with the reason."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from localcluster import dockerhosts  # on the path by tests/k8s/conftest.py (tools/ is not a package)

from layerbench.errors import PrerequisiteError
from layerbench.spec.models import EngineSpec
from layerbench.stack.engines.docker_host import host_api
from tests import support
from tests.integration.leftovers import server_dirs

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_fio, pytest.mark.requires_docker]

SUBNET = 97  # the other local clusters: 77 (Kubernetes), 88 (Swarm), 99 (Docker hosts)
NODE_IP = f"10.250.{SUBNET}.10"  # node1 of the subnet (netns.plan)


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, text=True, timeout=60)


def authority(d: Path, name: str) -> tuple[Path, Path]:
    cert, key = d / f"{name}.pem", d / f"{name}-key.pem"
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
            "-keyout", str(key), "-out", str(cert))  # fmt: skip
    return cert, key


def signed(d: Path, name: str, ca: tuple[Path, Path], extensions: str) -> tuple[Path, Path]:
    """A key and a certificate for ``name`` signed by ``ca``, with these X.509 v3 extensions."""
    cert, key, csr, ext = d / f"{name}.pem", d / f"{name}-key.pem", d / f"{name}.csr", d / f"{name}.ext"
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout", str(key), "-out", str(csr))
    ext.write_text(extensions)
    openssl("x509", "-req", "-in", str(csr), "-CA", str(ca[0]), "-CAkey", str(ca[1]), "-CAcreateserial",
            "-days", "2", "-extfile", str(ext), "-out", str(cert))  # fmt: skip
    return cert, key


@pytest.fixture(scope="module")
def tls_host() -> Iterator[tuple[dockerhosts.State, dict[str, Path]]]:
    """One dockerd with --tlsverify, and the files: its CA, a client's pair, a stranger CA's."""
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="lbtls-") as tmp:
        d = Path(tmp)
        ca = authority(d, "ca")
        server = signed(d, "daemon", ca, f"subjectAltName=IP:{NODE_IP}\nextendedKeyUsage=serverAuth\n")
        client = signed(d, "client", ca, "extendedKeyUsage=clientAuth\n")
        stranger = authority(d, "stranger")
        files = {"ca": ca[0], "cert": client[0], "key": client[1], "stranger": stranger[0]}
        tls = dockerhosts.Tls(str(ca[0]), str(server[0]), str(server[1]))
        root = d / "hosts"
        state = dockerhosts.up(root, nodes=1, subnet=SUBNET, tls=tls)
        try:
            assert state.url("node1") == f"tcp://{NODE_IP}:2376"
            yield state, files
        finally:
            left = dockerhosts.down(root)
            assert left == [], f"the TLS Docker host left {left}"


def engine(url: str, **tls: Any) -> EngineSpec:
    return EngineSpec.model_validate({"kind": "docker-host", "node": url, **({"tls": tls} if tls else {})})


def test_the_daemon_answers_with_the_right_ca_and_refuses_otherwise_with_the_reason(tls_host: Any) -> None:
    state, f = tls_host
    url = state.url("node1")
    good = engine(url, ca=str(f["ca"]), cert=str(f["cert"]), key=str(f["key"]))
    assert good.daemon is not None and host_api.answers(good.daemon) is None
    assert host_api.describe_facts(good.daemon)["driver"] == "overlay2"

    stranger = engine(url, ca=str(f["stranger"]), cert=str(f["cert"]), key=str(f["key"]))
    assert stranger.daemon is not None
    why = host_api.answers(stranger.daemon)
    assert why is not None and why.startswith("TLS: the daemon's certificate does not verify against tls.ca"), why
    with pytest.raises(PrerequisiteError, match=f"no Docker daemon answers at {url}: TLS: the daemon's certificate"):
        host_api.connect(stranger.daemon)

    anonymous = engine(url, ca=str(f["ca"]))  # --tlsverify: the daemon wants the client's certificate
    assert anonymous.daemon is not None
    why = host_api.answers(anonymous.daemon)
    assert why is not None and why.startswith("TLS: the daemon refused this client"), why
    assert host_api.answers(url) is not None  # plain HTTP to a TLS port: no answer

    missing = engine(url, ca=str(f["ca"].parent / "absent.pem"))
    assert missing.daemon is not None and "tls.ca: no file at" in (host_api.answers(missing.daemon) or "")


def test_fio_runs_on_the_tls_host_and_a_wrong_ca_is_refused_before_the_run(tls_host: Any) -> None:
    state, f = tls_host
    url = state.url("node1")
    files = {"ca": str(f["ca"]), "cert": str(f["cert"]), "key": str(f["key"])}
    good = {"kind": "docker-host", "node": url, "tls": files}
    bad = {**good, "tls": {**files, "ca": str(f["stranger"])}}
    workload = {"name": "RR", "rw": "randread", "bs": "4k", "size": "16MiB", "runtime_s": 1}
    spec = {
        "name": "tls-host",
        "device": {"kind": "none"},
        "stacks": [{"filesystem": "none", "engine": good, "placement": "tmpfs"}],
        "workloads": [workload],
        "trials": {"repetitions": 1},
    }
    with server_dirs("lbtls-run-") as dirs:
        dirs["spec"].write_text(yaml.safe_dump(spec))
        done = support.run(["run", str(dirs["spec"])], dirs, timeout=900)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        spec["stacks"] = [{"filesystem": "none", "engine": bad, "placement": "tmpfs"}]
        dirs["spec"].write_text(yaml.safe_dump(spec))
        refused = support.run(["run", str(dirs["spec"]), "--dry-run"], dirs, timeout=300)
        said = " ".join((refused.stdout + refused.stderr).split())  # as printed, wrapped to the terminal
        assert (
            f"no Docker daemon answers at {url}: TLS: the daemon's certificate does not verify against tls.ca" in said
        ), said[-3000:]
