"""What goes into the host-binary image: ldd parsed from real output, symlinks followed."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from layerbench import proc
from layerbench.proc import Completed
from layerbench.stack.image import (
    Entry,
    closure,
    content_tag,
    file_sha256,
    missing_libraries,
    parse_ldd,
    plan,
    symlink_chain,
)

DATA = Path(__file__).parent.parent / "data" / "ldd"


def test_parse_ldd_on_fio_3_33_debian_12() -> None:
    text = (DATA / "fio.txt").read_text()
    paths = parse_ldd(text)
    assert len(paths) == 63  # 64 lines, minus linux-vdso (no file: the kernel maps it)
    assert paths[0] == "/lib/x86_64-linux-gnu/libnuma.so.1"
    assert "/lib64/ld-linux-x86-64.so.2" in paths  # the loader, listed without "=>"
    assert "/lib/x86_64-linux-gnu/libaio.so.1" in paths  # fio's libaio engine is linked, not a plugin
    assert "/usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2" in paths  # found through librados' RUNPATH
    assert not any("vdso" in p for p in paths)
    assert all(p.startswith("/") and "(" not in p for p in paths)
    assert missing_libraries(text) == []


def test_parse_ldd_static_missing_and_duplicates() -> None:
    assert parse_ldd("\tstatically linked\n") == []
    assert parse_ldd("\tnot a dynamic executable\n") == []
    text = (
        "\tlibfoo.so.1 => not found\n"
        "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0000000000)\n"
        "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0000000000)\n"
    )
    assert parse_ldd(text) == ["/lib/x86_64-linux-gnu/libc.so.6"]
    assert missing_libraries(text) == ["libfoo.so.1"]


@pytest.fixture
def merged_usr(tmp_path: Path) -> Path:
    """A tree shaped like Debian 12: /lib and /lib64 are links into /usr, the loader a link to a file."""
    root = tmp_path / "root"
    (root / "usr/lib/x86_64-linux-gnu").mkdir(parents=True)
    (root / "usr/lib64").mkdir()
    (root / "usr/lib/x86_64-linux-gnu/ld-2.36.so").write_bytes(b"loader")
    (root / "usr/lib/x86_64-linux-gnu/libaio.so.1.0.2").write_bytes(b"aio")
    os.symlink("libaio.so.1.0.2", root / "usr/lib/x86_64-linux-gnu/libaio.so.1")
    os.symlink("usr/lib", root / "lib")
    os.symlink("usr/lib64", root / "lib64")
    os.symlink(str(root / "lib/x86_64-linux-gnu/ld-2.36.so"), root / "usr/lib64/ld-linux-x86-64.so.2")
    return root


def test_symlink_chain_follows_directory_and_file_links(merged_usr: Path) -> None:
    r = str(merged_usr)
    assert symlink_chain(f"{r}/lib64/ld-linux-x86-64.so.2") == [
        f"{r}/lib64",
        f"{r}/usr/lib64/ld-linux-x86-64.so.2",
        f"{r}/lib",
        f"{r}/usr/lib/x86_64-linux-gnu/ld-2.36.so",
    ]
    assert symlink_chain(f"{r}/lib/x86_64-linux-gnu/libaio.so.1") == [
        f"{r}/lib",
        f"{r}/usr/lib/x86_64-linux-gnu/libaio.so.1",
        f"{r}/usr/lib/x86_64-linux-gnu/libaio.so.1.0.2",
    ]


def test_plan_keeps_link_and_target_with_parents_first(merged_usr: Path) -> None:
    entries = plan([f"{merged_usr}/lib/x86_64-linux-gnu/libaio.so.1"])
    rel = str(merged_usr).lstrip("/")
    by_name = {e.name: e for e in entries}
    assert by_name[f"{rel}/lib"].link == "usr/lib"
    assert by_name[f"{rel}/usr/lib/x86_64-linux-gnu/libaio.so.1"].link == "libaio.so.1.0.2"
    assert by_name[f"{rel}/usr/lib/x86_64-linux-gnu/libaio.so.1.0.2"].source is not None
    assert {"data", "tmp", "etc"} <= set(by_name)
    assert by_name["tmp"].mode == 0o1777
    names = [e.name for e in entries]
    for e in entries:  # a directory comes before anything inside it
        parent = str(Path(e.name).parent)
        if parent != ".":
            assert names.index(parent) < names.index(e.name)


def test_content_tag_follows_content_not_time(tmp_path: Path) -> None:
    f = tmp_path / "fio"
    f.write_bytes(b"one build")
    entries = [Entry("usr/bin/fio", 0o755, source=str(f))]
    first = content_tag(entries, {"layerbench.sha256.fio": "x"})
    os.utime(f, (0, 0))
    assert content_tag(entries, {"layerbench.sha256.fio": "x"}) == first
    f.write_bytes(b"another build")
    assert content_tag(entries, {"layerbench.sha256.fio": "x"}) != first


def test_a_file_rewritten_in_place_is_hashed_again_even_with_its_old_times(tmp_path: Path) -> None:
    """file_sha256 keeps a digest per version of a file: a rewrite of the same size, its times put back,
    still changes the file's change time, and so its digest."""
    f = tmp_path / "fio"
    f.write_bytes(b"build one")
    first = file_sha256(str(f))
    times = (f.stat().st_atime_ns, f.stat().st_mtime_ns)
    f.write_bytes(b"build two")
    os.utime(f, ns=times)
    assert file_sha256(str(f)) != first
    assert file_sha256(str(f)) == hashlib.sha256(b"build two").hexdigest()


def test_closure_asks_ldd_once_per_binary_however_many_stacks_ask(tmp_path: Path) -> None:
    calls: list[list[str]] = []

    def runner(argv: list[str], timeout: float | None = None) -> Completed:
        calls.append(argv)
        return proc.run(argv, timeout=timeout)

    ctx = SimpleNamespace(runner=runner)
    found = shutil.which("sleep")
    assert found is not None
    sleep = str(tmp_path / "sleep")  # a file no other test asked about
    shutil.copy2(found, sleep)
    first = closure({"sleep": sleep}, ctx)  # type: ignore[arg-type]
    assert closure({"sleep": sleep}, ctx) == first  # type: ignore[arg-type]
    assert calls == [["ldd", sleep]]
    assert any("libc.so" in f for f in first)
