"""The host reads what a guest left in its 9p share (the guest is root there, with security_model=none)
without following a symbolic link at any step, only regular files, and at most a cap of bytes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from layerbench.errors import PrerequisiteError
from layerbench.proc import spawn
from layerbench.stack.engines.vm import qemu
from layerbench.stack.engines.vm.guest import Guest


@pytest.fixture
def share(tmp_path: Path) -> Path:
    (tmp_path / "share" / "res").mkdir(parents=True)
    (tmp_path / "secret").write_text("the host's own file")
    return tmp_path / "share"


def test_a_regular_file_is_read(share: Path) -> None:
    (share / "res" / "1.json").write_text('{"rc": 0}')
    assert qemu.guest_text(share, "res/1.json") == '{"rc": 0}'


def test_a_symlink_is_not_followed(share: Path) -> None:
    (share / "output").symlink_to(share.parent / "secret")
    with pytest.raises(qemu.GuestFileError, match="symbolic link"):
        qemu.guest_text(share, "output")


def test_a_symlinked_directory_is_not_followed(share: Path) -> None:
    (share.parent / "elsewhere").mkdir()
    (share.parent / "elsewhere" / "1.json").write_text("{}")
    (share / "res").rmdir()
    (share / "res").symlink_to(share.parent / "elsewhere")
    with pytest.raises(qemu.GuestFileError, match="symbolic link"):
        qemu.guest_text(share, "res/1.json")


def test_an_oversized_file_is_not_read(share: Path) -> None:
    with (share / "output").open("wb") as f:
        f.truncate(4097)  # sparse: large without taking space
    with pytest.raises(qemu.GuestFileError, match="4097 bytes, more than the 4096"):
        qemu.guest_text(share, "output", limit=4096)
    assert len(qemu.guest_text(share, "output", limit=4097)) == 4097


def test_a_fifo_is_refused_without_blocking(share: Path) -> None:
    os.mkfifo(share / "rc")
    with pytest.raises(qemu.GuestFileError, match="not a regular file"):
        qemu.guest_text(share, "rc")


def test_paths_leaving_the_share_are_refused(share: Path) -> None:
    for rel in ("../secret", "/etc/passwd", ""):
        with pytest.raises(qemu.GuestFileError, match="not a path inside"):
            qemu.guest_text(share, rel)


def test_the_files_returned_are_regular_ones_links_not_followed(share: Path) -> None:
    (share / "res" / "a.txt").write_text("a")
    (share / "link").symlink_to(share.parent / "secret")
    (share / "dirlink").symlink_to(share.parent)
    assert qemu.guest_files(share) == ["res/a.txt"]
    with pytest.raises(FileNotFoundError):
        qemu.guest_text(share, "missing")


def test_a_guest_servers_log_tail_follows_no_link_and_reads_only_the_end(tmp_path: Path) -> None:
    from layerbench.stack import handle

    (tmp_path / "secret").write_text("the host's own file\n")
    (tmp_path / "link.log").symlink_to(tmp_path / "secret")
    assert handle.log_tail(tmp_path / "link.log") == "(no log)"
    big = tmp_path / "big.log"
    big.write_text("x" * (handle.LOG_TAIL_BYTES + 10) + "\nlast line\n")
    assert handle.log_tail(big, lines=1) == "last line"


def test_a_guest_that_stops_while_booting_says_what_qemu_said(tmp_path: Path) -> None:
    """A qemu that exits at once writes nothing to the console: its own words must reach the trial."""
    log = tmp_path / "qemu.log"
    process = spawn(["sh", "-c", "echo 'qemu-system-x86_64: could not open disk image d.qcow2' >&2"], log)
    process.wait(30)
    (tmp_path / "share").mkdir()
    with pytest.raises(PrerequisiteError, match="could not open disk image"):
        Guest(process, tmp_path, "tcg").wait_ready(60)
