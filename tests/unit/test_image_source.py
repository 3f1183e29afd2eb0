"""Where an image server's image comes from: registries by Docker's naming rule, and archive files checked
before the run (a real probe of an unreachable registry is in the integration test)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from layerbench.spec.databases import is_archive
from layerbench.stack import image_source


@pytest.mark.parametrize(
    ("reference", "registry"),
    [
        ("mongo:7", ("registry-1.docker.io", 443)),
        ("scylladb/scylla:6.2", ("registry-1.docker.io", 443)),
        ("quay.io/minio/minio", ("quay.io", 443)),
        ("localhost:5000/pg:15", ("localhost", 5000)),
        ("registry.example:8443/team/db", ("registry.example", 8443)),
    ],
)
def test_the_registry_of_a_reference_follows_dockers_rule(reference: str, registry: tuple[str, int]) -> None:
    assert image_source.registry_of(reference) == registry


def test_files_and_references_are_told_apart() -> None:
    assert is_archive("/srv/pg.tar") and is_archive("./mongo.tar.gz") and is_archive("pg.tar")
    assert not is_archive("mongo:7") and not is_archive("quay.io/minio/minio")


def _tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_an_archive_is_checked_before_the_run(tmp_path: Path) -> None:
    assert "does not exist (docker save IMAGE -o" in str(image_source.missing(str(tmp_path / "none.tar")))
    plain = _tar(tmp_path / "plain.tar", {"etc/hostname": b"x\n"})
    assert "is not a docker-archive" in str(image_source.missing(str(plain)))
    manifest = [{"Config": "c.json", "RepoTags": ["lbtest/pg:15"], "Layers": ["l/layer.tar"]}]
    saved = _tar(tmp_path / "saved.tar", {"manifest.json": json.dumps(manifest).encode()})
    assert image_source.missing(str(saved)) is None
    assert image_source.archive_tags(saved) == ["lbtest/pg:15"]


def test_a_registry_that_cannot_be_reached_is_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in image_source.PROXY_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    reason = image_source.missing("localhost:1/nothing:1")  # port 1: nothing listens, refused at once
    assert reason is not None and "must be pulled from localhost, which this host cannot reach" in reason
    assert "docker save localhost:1/nothing:1 -o image.tar" in reason
