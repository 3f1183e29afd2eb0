"""The mountinfo parser and the volatile-mount check on mountinfo captured from real runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from layerbench.run.measure.mount_check import judge, volatile_check
from layerbench.stack import mountinfo

DATA = Path(__file__).parents[1] / "data" / "mountinfo"


def entries(name: str) -> list[mountinfo.MountEntry]:
    return mountinfo.parse((DATA / name).read_text())


def test_parses_optional_fields_and_super_options() -> None:
    root, *_ = entries("docker-overlay2-volume.txt")
    assert root.mount_point == "/" and root.fs_type == "overlay" and root.source == "overlay"
    assert any(o.startswith("lowerdir=") for o in root.super_options) and "rw" in root.options
    data = mountinfo.holding(entries("docker-overlay2-volume.txt"), "/data")[0]
    assert data.fs_type == "ext4" and data.root.endswith("/_data")


def test_escaped_mount_points_are_decoded() -> None:
    [entry] = mountinfo.parse("36 25 8:1 / /mnt/a\\040b rw - ext4 /dev/sda1 rw\n")
    assert entry.mount_point == "/mnt/a b"


def test_garbage_is_an_error_not_a_guess() -> None:
    with pytest.raises(mountinfo.MountinfoError):
        mountinfo.parse("not a mountinfo line\n")


@pytest.mark.parametrize(
    ("name", "path", "status"),
    [
        ("podman-overlay-autoremove.txt", "/data", "flag"),  # /data is in the writable layer, mounted volatile
        ("podman-overlay-writable-layer.txt", "/data", "pass"),  # layerbench's own: never auto-removed
        ("docker-overlay2-volume.txt", "/data", "pass"),  # a volume: ext4 below, whatever the root is
        ("host-overlay-volatile.txt", "/tmp/capmi/ov/merged/lb-data", "flag"),
        ("host-overlay-volatile.txt", "/tmp/capmi/ov", "flag"),  # the volatile mount lies below the path
        ("host-overlay-volatile.txt", "/var/tmp/lb", "pass"),
    ],
)
def test_volatile_is_flagged_where_the_data_lives(name: str, path: str, status: str) -> None:
    check = judge(entries(name), path)
    assert check.status == status, check.detail
    if status == "flag":
        assert "fsync is a no-op" in check.detail


def test_last_mount_over_a_path_wins() -> None:
    text = (
        "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
        "2 1 0:40 / /data rw - overlay overlay rw,volatile\n"
        "3 1 8:2 / /data rw - xfs /dev/sdb rw\n"  # mounted over the volatile one: the data is on xfs
    )
    assert judge(mountinfo.parse(text), "/data/f").status == "pass"


def test_a_raw_device_is_skipped() -> None:
    assert volatile_check("/dev/loop3", None, is_device=True).status == "skip"


def test_this_process_is_read_when_no_pid_is_given() -> None:
    assert volatile_check("/", None).status in ("pass", "flag")
