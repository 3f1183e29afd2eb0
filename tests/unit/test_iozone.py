"""The IOzone adapter: command lines, and the parser on output of real IOzone 3.489 runs.

tests/data/iozone/3.489/README.md says how each fixture was produced.
"""

from __future__ import annotations

import math
import os
import statistics
import subprocess
from pathlib import Path

import pytest

from layerbench.errors import SpecError
from layerbench.proc import FakeRunner
from layerbench.records.sample import job_point, point_job
from layerbench.spec.models import IozoneWorkload
from layerbench.stack.environment import describe_host
from layerbench.workloads import iozone
from layerbench.workloads.iozone import IozoneParseError, IozonePoint, IozoneResult

DATA = Path(__file__).parent.parent / "data" / "iozone" / "3.489"
BINARY = "/tmp/lbiozone-fetch-test/iozone/iozone"  # where the fixtures' IOzone was
TABLES = sorted(p.name for p in DATA.glob("*.txt") if not p.name.startswith(("failed-", "version")))
FAILURES = sorted(p.name for p in DATA.glob("failed-*.txt"))
ALL = ("write", "rewrite", "read", "reread", "randread", "randwrite")
EVERY_COLUMN = (*ALL, "bkwdread", "recrewrite", "strideread", "fwrite", "frewrite", "fread", "freread")


def raw(name: str) -> str:
    return (DATA / name).read_text()


def stderr_of(name: str) -> str:
    path = DATA / name.replace(".txt", ".stderr")
    return path.read_text() if path.exists() else ""


def workload(**fields: object) -> IozoneWorkload:
    return IozoneWorkload.model_validate({"kind": "iozone", "name": "t", **fields})


def row(name: str, size_kb: int, record_kb: int) -> list[int]:
    """A fixture's row read the simplest way (split on blanks): right only where no cell is empty."""
    for line in raw(name).splitlines():
        words = line.split()
        if words[:2] == [str(size_kb), str(record_kb)]:
            return [int(w) for w in words[2:]]
    raise AssertionError(f"no row {size_kb} {record_kb} in {name}")


def doubling(low: int, high: int) -> list[int]:
    out = [low]
    while out[-1] * 2 <= high:
        out.append(out[-1] * 2)
    return out


# --- command lines -------------------------------------------------------------------------------


def test_argv_runs_auto_mode_over_the_whole_grid_with_every_test_and_fsync_by_default() -> None:
    assert iozone.argv(workload(), "/mnt/lb-data", "/c/iozone/iozone") == [
        "/c/iozone/iozone",
        "-a",
        "-z",
        *("-n", "64k", "-g", "16m"),
        *("-y", "4k", "-q", "16m"),
        *("-i", "0", "-i", "1", "-i", "2"),
        "-e",
        *("-f", "/mnt/lb-data/lb-iozone.tmp"),
    ]


def test_sizes_are_said_in_k_below_a_megabyte_and_in_m_from_it() -> None:
    w = workload(sizes=("96k", "1g"), records=("1536k", "2m"), tests=["write"], fsync=False)
    assert iozone.argv(w, "/d/", "iozone") == [
        *("iozone", "-a", "-z", "-n", "96k", "-g", "1024m", "-y", "1536k", "-q", "2m"),
        *("-i", "0", "-f", "/d/lb-iozone.tmp"),
    ]


def test_direct_adds_o_direct_and_no_fsync_drops_e() -> None:
    args = iozone.argv(workload(direct=True, fsync=False), "/d", "iozone")
    assert "-I" in args and "-e" not in args
    assert "-I" not in iozone.argv(workload(), "/d", "iozone")


@pytest.mark.parametrize(
    ("tests", "numbers"),
    [(["write"], [0]), (["read"], [0, 1]), (["random"], [0, 2]), (["random", "read", "write"], [0, 1, 2])],
)
def test_the_write_test_always_runs_first_because_the_others_read_its_file(
    tests: list[str], numbers: list[int]
) -> None:
    args = iozone.argv(workload(tests=tests), "/d", "iozone")
    assert [int(args[i + 1]) for i, a in enumerate(args) if a == "-i"] == numbers


def test_a_size_that_is_not_whole_kilobytes_is_refused() -> None:
    with pytest.raises(SpecError, match=r"iozone sizes: 70000 bytes is not a whole number of kB"):
        iozone.argv(workload(sizes=(70000, "1m")), "/d", "iozone")


@pytest.mark.parametrize(
    ("name", "fields", "directory"),
    [
        (
            "write-only-tmpfs.txt",
            {"sizes": ("64k", "1m"), "records": ("4k", "64k"), "tests": ["write"], "fsync": False},
            "/dev/shm/lbio",
        ),
        (
            "write-random-tmpfs.txt",
            {"sizes": ("64k", "256k"), "records": ("4k", "64k"), "tests": ["write", "random"], "fsync": False},
            "/dev/shm/lbio",
        ),
        ("all-tests-fsync-ext4.txt", {"sizes": ("64k", "1m"), "records": ("4k", "64k")}, "/var/tmp/lbio"),
        (
            "direct-fsync-ext4-1m-4m.txt",
            {"sizes": ("1m", "4m"), "records": ("64k", "1m"), "direct": True},
            "/var/tmp/lbio",
        ),
    ],
)
def test_the_fixtures_ran_exactly_what_argv_builds(name: str, fields: dict[str, object], directory: str) -> None:
    # IOzone echoes its command line: the fixture shows argv's list as IOzone received it.
    assert iozone.parse(raw(name)).command == " ".join(iozone.argv(workload(**fields), directory, BINARY))


# --- the binary ------------------------------------------------------------------------------------


def test_missing_says_how_to_fetch_it_until_the_binary_is_there(tmp_path: Path) -> None:
    assert iozone.binary(tmp_path) == tmp_path / "iozone" / "iozone"
    reason = iozone.missing(tmp_path)
    assert reason is not None and "make setup fetches it" in reason and f"tools/fetch-iozone.sh {tmp_path}" in reason
    path = iozone.binary(tmp_path)
    path.parent.mkdir()
    path.write_text("#!/bin/sh\n")
    assert iozone.missing(tmp_path) is not None  # not executable
    os.chmod(path, 0o755)
    assert iozone.missing(tmp_path) is None


def test_version_asks_iozone() -> None:
    runner = FakeRunner({"iozone": (0, raw("version.txt"), "")})
    assert iozone.version(runner, "/c/iozone/iozone") == "3.489"
    assert runner.calls == [["/c/iozone/iozone", "-v"]]


def test_the_run_records_the_iozone_it_would_use(tmp_path: Path) -> None:
    # A run's host record names every tool's version, so resume refuses a host whose IOzone changed.
    runner = FakeRunner({"iozone": (0, raw("version.txt"), "")})
    assert describe_host(runner, tmp_path)["tools"]["iozone"] is None  # not fetched: nothing to run
    path = iozone.binary(tmp_path)
    path.parent.mkdir()
    path.write_text("#!/bin/sh\n")
    os.chmod(path, 0o755)
    assert describe_host(runner, tmp_path)["tools"]["iozone"] == "3.489"
    assert [str(path), "-v"] in runner.calls
    garbled = FakeRunner({"iozone": (0, "something else\n", "")})
    assert describe_host(garbled, tmp_path)["tools"]["iozone"] is None


def test_a_version_text_without_a_revision_is_a_parse_error() -> None:
    with pytest.raises(IozoneParseError, match="Revision"):
        iozone.version(FakeRunner({"iozone": (0, "something else\n", "")}), "iozone")


# --- parsing -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", TABLES)
def test_every_table_parses_whole(name: str) -> None:
    result = iozone.parse(raw(name))
    assert result.version == "3.489"
    assert result.command.startswith(BINARY + " -a ")
    assert result.settings[0] == "Auto Mode"
    # Every file size by every record size that fits in it, in IOzone's order.
    sizes = sorted({p.size_kb for p in result.points})
    records = sorted({p.record_kb for p in result.points})
    grid = [(s, r) for s in doubling(sizes[0], sizes[-1]) for r in doubling(records[0], records[-1]) if r <= s]
    assert [(p.size_kb, p.record_kb) for p in result.points] == grid
    # Every row has a value in every column the run measured, and nowhere else.
    assert all(tuple(p.kbps) == result.operations for p in result.points)


def test_every_column_of_one_row() -> None:
    result = iozone.parse(raw("auto-tmpfs.txt"))
    assert result.operations == EVERY_COLUMN
    first = result.points[0]
    assert (first.size_kb, first.record_kb) == (64, 4)
    assert first.kbps == {
        "write": 1163036,
        "rewrite": 4274062,
        "read": 4988978,
        "reread": 5735102,
        "randread": 3958892,
        "randwrite": 3588436,
        "bkwdread": 3057153,
        "recrewrite": 3541098,
        "strideread": 4564786,
        "fwrite": 3738358,
        "frewrite": 4274062,
        "fread": 4897948,
        "freread": 5860307,
    }
    assert len(result.points) == 25


@pytest.mark.parametrize("name", ["auto-tmpfs.txt", "auto-direct-ext4.txt", "all-tests-fsync-ext4.txt"])
def test_rows_without_blank_cells_match_a_plain_split(name: str) -> None:
    result = iozone.parse(raw(name))
    for p in result.points:
        assert list(p.kbps.values()) == row(name, p.size_kb, p.record_kb)


def test_real_numbers_from_the_direct_and_fsync_runs() -> None:
    direct = iozone.parse(raw("direct-fsync-ext4-1m-4m.txt"))
    assert direct.settings[-2:] == ("O_DIRECT feature enabled", "Include fsync in write timing")
    assert "Cross over of record size disabled." in direct.settings
    last = direct.points[-1]
    assert (last.size_kb, last.record_kb) == (4096, 1024)
    assert last.kbps == dict(zip(ALL, [1706077, 3260676, 1641680, 1642936, 1742944, 2974454], strict=True))
    fsync = iozone.parse(raw("all-tests-fsync-ext4.txt"))
    assert fsync.operations == ALL
    assert fsync.points[-1].kbps["read"] == 10230845
    o_direct = iozone.parse(raw("auto-direct-ext4.txt"))
    assert o_direct.points[-1].kbps["recrewrite"] == 1093756 and o_direct.points[0].kbps["write"] == 68377


def test_write_only_has_two_columns() -> None:
    result = iozone.parse(raw("write-only-tmpfs.txt"))
    assert result.operations == ("write", "rewrite")
    assert result.points[-1] == IozonePoint(1024, 64, {"write": 2796556, "rewrite": 7319232})


def test_blank_cells_between_values_leave_those_columns_out() -> None:
    # -i 0 -i 2: read and reread are blank between rewrite and random read; a plain split would
    # have called random read "read".
    result = iozone.parse(raw("write-random-tmpfs.txt"))
    assert result.operations == ("write", "rewrite", "randread", "randwrite")
    assert result.points[3].kbps == {"write": 2772930, "rewrite": 10821524, "randread": 10821524, "randwrite": 10402178}


def test_a_cell_blanked_in_the_middle_of_a_full_row_is_absent_and_the_rest_keep_their_columns() -> None:
    text = raw("auto-tmpfs.txt")
    line = next(ln for ln in text.splitlines() if ln.split()[:2] == ["64", "4"])
    blanked = line.replace(" 4988978 ", "         ", 1)  # the read cell, same width
    result = iozone.parse(text.replace(line, blanked))
    first = result.points[0].kbps
    assert "read" not in first and first["reread"] == 5735102 and first["randread"] == 3958892
    assert len(first) == 12
    assert "read" in result.operations  # other rows still have it


def test_values_run_together_are_cut_where_their_fields_end() -> None:
    # IOzone fills 9-digit values into their 9-character fields with no separator: rewrite, read and
    # reread of one row came out as one word on zram.
    text = raw("run-together-zram-ext4.txt")
    assert "4934216111715537128000000" in text
    point = next(p for p in iozone.parse(text).points if (p.size_kb, p.record_kb) == (128, 64))
    assert point.kbps == {
        "write": 1231904,
        "rewrite": 4934216,
        "read": 111715537,
        "reread": 128000000,
        "randread": 60968594,
        "randwrite": 5325799,
    }


def test_values_run_together_where_no_row_shows_the_fields_are_refused_not_misread() -> None:
    # With the read column blank in every other row, nothing tells where rewrite ends and read begins.
    text = raw("write-random-tmpfs.txt")
    line = next(ln for ln in text.splitlines() if ln.split()[:2] == ["64", "32"])
    glued = line.replace(" 10821524                   ", " 10821524123456789          ", 1)
    assert glued != line
    with pytest.raises(IozoneParseError, match="under no column"):
        iozone.parse(text.replace(line, glued))


@pytest.mark.parametrize(
    ("name", "says"),
    [
        (
            "failed-missing-directory.txt",
            "Can not open temp file: /tmp/lb-no-such-dir/lb-iozone.tmp | open: No such file",
        ),
        ("failed-direct-ramfs.txt", "Can not open temp file: /tmp/lbramfs/lb-iozone.tmp | open: Invalid argument"),
        ("failed-read-without-write.txt", "Can not open temporary file /dev/shm/lbio/lb-iozone.tmp for read"),
    ],
)
def test_a_failed_run_is_a_parse_error_in_iozones_own_words(name: str, says: str) -> None:
    assert name in FAILURES
    with pytest.raises(IozoneParseError, match="stopped before finishing its table") as caught:
        iozone.parse(raw(name), stderr_of(name))
    assert says in str(caught.value)
    with pytest.raises(IozoneParseError, match="Can not open"):
        iozone.parse(raw(name))  # stdout alone still says what failed


def test_output_cut_off_mid_table_is_a_parse_error() -> None:
    text = raw("all-tests-fsync-ext4.txt")
    with pytest.raises(IozoneParseError, match="stopped before finishing"):
        iozone.parse(text[: text.index("  1024       4")])


@pytest.mark.parametrize("text", ["", "iozone: command not found\n", raw("version.txt")])
def test_output_without_a_table_is_a_parse_error(text: str) -> None:
    with pytest.raises(IozoneParseError, match="no table"):
        iozone.parse(text)


def test_an_unknown_column_is_named() -> None:
    text = raw("write-only-tmpfs.txt").replace("freread", "pwrite ", 1)
    with pytest.raises(IozoneParseError, match="'pwrite'"):
        iozone.parse(text)


# --- samples -------------------------------------------------------------------------------------


def test_samples_are_one_headline_then_every_cell_in_bytes_per_second() -> None:
    result = iozone.parse(raw("direct-fsync-ext4-1m-4m.txt"))
    out = iozone.samples(result)
    assert len(out) == 1 + 15 * 6
    assert out[0].metric == "iozone_geomean" and (out[0].unit, out[0].direction, out[0].job) == ("B/s", "", "")
    cells = out[1:]
    assert {s.metric for s in cells} == {"bw"} and {s.unit for s in cells} == {"B/s"}
    assert cells[0].job == "s1024k-r64k" and cells[0].direction == "write" and cells[0].value == 650574 * 1024
    assert cells[-1].job == "s4096k-r1024k" and cells[-1].direction == "randwrite" and cells[-1].value == 2974454 * 1024


def test_the_headline_is_the_geometric_mean_of_every_cell() -> None:
    name = "write-only-tmpfs.txt"  # no blank cell before a value: a plain split reads every row right
    values = [v * 1024 for p in iozone.parse(raw(name)).points for v in row(name, p.size_kb, p.record_kb)]
    assert len(values) == 50
    headline = iozone.samples(iozone.parse(raw(name)))[0].value
    assert headline == pytest.approx(statistics.geometric_mean(values), rel=1e-12)


def test_geomean_by_hand() -> None:
    # 1, 4 and 16 kB/s: the cube root of 64 is 4 kB/s, 4096 B/s.
    result = IozoneResult(
        "3.489",
        "iozone",
        (),
        ("write", "read"),
        (
            IozonePoint(64, 4, {"write": 1, "read": 4}),
            IozonePoint(64, 8, {"write": 16}),
        ),
    )
    assert iozone.geomean(result) == pytest.approx(4096.0)
    zero = IozoneResult("3.489", "iozone", (), ("write",), (IozonePoint(64, 4, {"write": 0}),))
    assert iozone.geomean(zero) == 0.0
    assert math.isnan(iozone.geomean(IozoneResult("3.489", "iozone", (), (), ())))


def test_cells_within_the_clocks_resolution_are_found() -> None:
    # On zram the small files' reads took one microsecond: IOzone prints size / 1 µs.
    result = iozone.parse(raw("run-together-zram-ext4.txt"))
    assert result.resolution_s == 1e-6
    fast = {(p.size_kb, p.record_kb, d) for p, d in iozone.at_the_clock(result)}
    assert fast == {
        (64, 32, "read"),
        (64, 32, "reread"),
        (64, 32, "randread"),
        (64, 64, "read"),
        (128, 64, "reread"),
    }
    assert iozone.at_the_clock(iozone.parse(raw("all-tests-fsync-ext4.txt"))) == []


def test_a_points_job_reads_back_as_its_sizes() -> None:
    assert job_point(point_job(1024, 64)) == (1024, 64)
    assert job_point("fileserver") is None and job_point("s1k-r2") is None


def test_the_table_goes_to_a_file_at_the_target_not_through_a_pipe(tmp_path: Path) -> None:
    out = iozone.output_file(str(tmp_path) + "/")
    wrapped = iozone.quiet_argv(["printf", "%s\\n", "a b", "c"], out)
    assert wrapped[:2] == ["sh", "-c"] and wrapped[4] == out  # the path is an argument, never in the script
    done = subprocess.run(wrapped, capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout == ""
    read = subprocess.run(iozone.read_argv(out), capture_output=True, text=True, check=True, timeout=60)
    assert read.stdout == "a b\nc\n"  # arguments with spaces pass through whole
