"""A Docker host over TLS in the spec: where tls may go, and how the daemon's address carries its files."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from layerbench.errors import PrerequisiteError
from layerbench.spec.models import EngineSpec
from layerbench.stack import docker_api
from layerbench.stack.engines.docker_host import host_api


def engine(**fields: object) -> EngineSpec:
    return EngineSpec.model_validate({"kind": "docker-host", "node": "tcp://10.0.0.5:2376", **fields})


def test_the_daemon_s_address_carries_its_tls_files_and_is_shown_without_them() -> None:
    e = engine(tls={"ca": "/etc/lb/ca.pem", "cert": "/etc/lb/cert.pem", "key": "/etc/lb/key.pem"})
    assert (
        e.daemon == "tcp://10.0.0.5:2376#ca=%2Fetc%2Flb%2Fca.pem&cert=%2Fetc%2Flb%2Fcert.pem&key=%2Fetc%2Flb%2Fkey.pem"
    )
    assert host_api.shown(e.daemon) == "tcp://10.0.0.5:2376" and e.label() == "docker-host(tcp://10.0.0.5:2376)"
    assert engine().daemon == "tcp://10.0.0.5:2376"
    # An engine without tls dumps as before tls existed: its cells keep their ids.
    assert "tls" not in engine().model_dump() and "tls" in e.model_dump()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"tls": {"ca": "/ca.pem", "cert": "/c.pem"}}, "cert and key go together"),
        ({"node": "unix:///run/docker.sock", "tls": {"ca": "/ca.pem"}}, "tls is for engine docker-host with a tcp://"),
        ({"tls": {"ca": "/ca.pem", "verify": False}}, "Extra inputs are not permitted"),
    ],
)
def test_tls_where_it_cannot_apply_is_refused_with_the_reason(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        engine(**fields)


def test_a_missing_tls_file_is_named(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("not read here")
    e = engine(tls={"ca": str(ca), "cert": str(tmp_path / "cert.pem"), "key": str(ca)})
    assert e.daemon is not None
    with pytest.raises(PrerequisiteError, match=r"tls\.cert: no file at .*/cert\.pem"):
        docker_api.client(e.daemon)
    assert (host_api.answers(e.daemon) or "").startswith("tls.cert: no file at")


def test_the_sdk_s_tls_errors_are_said_in_one_line() -> None:
    # Captured from a dockerd with --tlsverify (tests/k8s/test_docker_host_tls.py's daemon): a CA that did
    # not sign its certificate, and a client that showed none.
    data = Path(__file__).parents[1] / "data" / "dockerhost"
    stranger = host_api.why(Exception((data / "tls-stranger-ca.txt").read_text()))
    assert stranger == (
        "TLS: the daemon's certificate does not verify against tls.ca ([SSL: CERTIFICATE_VERIFY_FAILED] "
        "certificate verify failed: unable to get local issuer certificate)"
    )
    anonymous = host_api.why(Exception((data / "tls-no-client-cert.txt").read_text()))
    assert anonymous == (
        "TLS: the daemon refused this client or its certificate ([SSL: SSLV3_ALERT_BAD_CERTIFICATE] sslv3 alert "
        "bad certificate): check tls.cert and tls.key"
    )
