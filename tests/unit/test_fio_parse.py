"""The fio parser on output captured from real fio 3.33 runs (tests/data/fio/README.md says how)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from layerbench.proc import FakeRunner
from layerbench.records.percentiles import percentiles
from layerbench.workloads.fio import (
    FioParseError,
    fio_version,
    group_phases,
    parse,
    samples,
    steady_attained,
    total_ops,
)

DATA = Path(__file__).parent.parent / "data" / "fio" / "3.33"
FIXTURES = sorted(p.name for p in DATA.glob("*.json"))


def raw(name: str) -> str:
    return (DATA / name).read_text()


def truth(name: str) -> dict[str, Any]:
    """The fixture as plain JSON: warning lines cut, fio's bare -nan spelled as JSON's NaN."""
    text = raw(name)
    body = text if text.startswith("{") else text[text.index("\n{") + 1 :]
    return json.loads(body.replace(": -nan,", ": NaN,"))


@pytest.mark.parametrize("name", FIXTURES)
def test_every_fixture_parses_to_what_the_file_says(name: str) -> None:
    result, data = parse(raw(name)), truth(name)
    assert result.version == data["fio version"] == "fio-3.33"
    assert [j.name for j in result.jobs] == [j["jobname"] for j in data["jobs"]]
    for job, tj in zip(result.jobs, data["jobs"], strict=True):
        assert job.error == tj["error"] and job.groupid == tj["groupid"]
        # Directions that moved no data are left out; all the others are kept.
        assert set(job.directions) == {d for d in ("read", "write", "trim") if tj[d]["io_bytes"] > 0}
        for direction, d in job.directions.items():
            td = tj[direction]
            assert (d.iops, d.bw_bytes, d.io_bytes, d.total_ios) == (
                td["iops"],
                td["bw_bytes"],
                td["io_bytes"],
                td["total_ios"],
            )
            assert d.lat["clat"].mean_ns == td["clat_ns"]["mean"]
            assert sum(d.clat_bins.values()) == (td["clat_ns"]["N"] if "bins" in td["clat_ns"] else 0)


# (a) randread 4k, 4 jobs x QD8, group_reporting, through layerbench's argv().
def test_grouped_randread_is_one_job_with_histogram_and_percentiles() -> None:
    name = "zram-ext4-randread-4k-4x8.json"
    result, t = parse(raw(name)), truth(name)["jobs"][0]
    assert len(result.jobs) == 1 and result.jobs[0].name == "RR"  # 4 jobs reported as one group
    read = result.jobs[0].directions["read"]
    assert read.iops == t["read"]["iops"]
    assert read.lat["clat"].percentiles["p99"] == t["read"]["clat_ns"]["percentile"]["99.000000"]
    assert set(read.lat["clat"].percentiles) >= {"p50", "p90", "p95", "p99", "p99.9", "p99.99", "p1"}
    assert read.lat["slat"].mean_ns == t["read"]["slat_ns"]["mean"]
    assert read.clat_bins and sum(read.clat_bins.values()) == t["read"]["clat_ns"]["N"]
    assert "write" not in result.jobs[0].directions


def test_histogram_percentiles_agree_with_fio_s_own() -> None:
    for name in ("zram-ext4-randread-4k-4x8.json", "native-randread-4k-32x32.json"):
        read = parse(raw(name)).jobs[0].directions["read"]
        ours = percentiles(read.clat_bins)
        for p in ("p50", "p99"):
            assert abs(ours[p] - read.lat["clat"].percentiles[p]) / read.lat["clat"].percentiles[p] < 0.02


def test_grouped_ops_use_the_group_s_wall_time_not_the_summed_job_runtime() -> None:
    name = "zram-ext4-randread-4k-4x8.json"
    t = truth(name)["jobs"][0]
    assert t["job_runtime"] > 3.9 * t["read"]["runtime"]  # fio sums job_runtime over the 4 jobs
    assert total_ops(parse(raw(name))) == pytest.approx(t["read"]["total_ios"] / (t["read"]["runtime"] / 1000))


# (b) randwrite and (c) sequential 128k read.
def test_write_and_sequential() -> None:
    rw = parse(raw("zram-ext4-randwrite-4k-4x8.json")).jobs[0]
    assert set(rw.directions) == {"write"} and rw.directions["write"].iops > 0
    sr = parse(raw("zram-ext4-read-128k-1x16.json")).jobs[0]
    assert set(sr.directions) == {"read"}
    assert sr.directions["read"].bw_bytes == truth("zram-ext4-read-128k-1x16.json")["jobs"][0]["read"]["bw_bytes"]
    assert sr.directions["read"].io_bytes == 131072 * sr.directions["read"].total_ios


# (d) a mixed job: both directions, each with its own samples.
@pytest.mark.parametrize("name", ["zram-ext4-randrw-70-2x8.json", "native-randrw-70-mix.json"])
def test_mixed_job_has_both_directions_and_samples_for_each(name: str) -> None:
    result = parse(raw(name))
    assert set(result.jobs[0].directions) == {"read", "write"}
    got = {(s.metric, s.direction): s for s in samples(result)}
    assert {("iops", "read"), ("iops", "write"), ("clat_p99", "read"), ("clat_p99.9", "write")} <= set(got)
    assert all(s.job == "MIX" for s in samples(result) if s.metric != "ops")
    t = truth(name)["jobs"][0]
    assert got[("iops", "write")].value == t["write"]["iops"] and got[("iops", "write")].unit == "IO/s"
    assert got[("bw", "read")].unit == "B/s" and got[("io_bytes", "read")].value == t["read"]["io_bytes"]
    assert got[("clat_p99", "read")].value == t["read"]["clat_ns"]["percentile"]["99.000000"]
    wall = max(t["read"]["runtime"], t["write"]["runtime"]) / 1000
    assert got[("ops", "")].value == pytest.approx((t["read"]["total_ios"] + t["write"]["total_ios"]) / wall)


# (e) job files: results per job, groups (stonewall / new_group) and duplicate section names kept.
def test_job_file_keeps_jobs_and_groups_apart() -> None:
    result = parse(raw("jobfile-two-sections-stonewall.json"))
    names = [(j.name, j.groupid) for j in result.jobs]
    assert names[0] == ("seq-write", 0)
    assert [n for n, g in names[1:]] == ["rand-read", "rand-read"] and all(g == 1 for _, g in names[1:])
    assert set(result.jobs[0].directions) == {"write"} and set(result.jobs[1].directions) == {"read"}


def test_duplicate_section_names_are_jobs_of_their_own() -> None:
    name = "jobfile-shared-file-duplicate-sections.json"
    result = parse(raw(name))
    assert [(j.name, j.groupid) for j in result.jobs] == [
        ("seq-write", 0),
        ("rand-read", 1),
        ("rand-read", 1),
        ("rand-read", 2),
    ]
    per_job = [(s.job, s.direction) for s in samples(result) if s.metric == "iops"]
    assert per_job == [("seq-write", "write"), ("rand-read", "read"), ("rand-read", "read"), ("rand-read", "read")]
    # The rewritten file ran where it was pointed, and both groups used the one shared file.
    options = truth(name)["global options"]
    assert options["directory"].endswith("/lb-data") and options["filename"] == "shared.dat"


# (f) fio prints notes and warnings on stdout, before the JSON.
def test_a_note_before_the_json_and_an_unmeasured_slat() -> None:
    text = raw("note-psync-iodepth-capped.json")
    assert text.startswith("note: both iodepth >= 1 and synchronous I/O engine")
    read = parse(text).jobs[0].directions["read"]
    assert truth("note-psync-iodepth-capped.json")["jobs"][0]["read"]["slat_ns"]["N"] == 0
    assert "slat" not in read.lat and {"clat", "lat"} <= set(read.lat)  # not measured is not 0 ns
    assert not any(s.metric.startswith("slat") for s in samples(parse(text)))


def test_steadystate_output_with_a_bare_nan_is_read() -> None:
    text = raw("steadystate-nan.json")
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)  # fio printed "slope" : -nan: not JSON
    result = parse(text)
    assert result.jobs[0].name == "SS" and result.jobs[0].directions["read"].iops > 0


def test_steady_state_attained_or_capped() -> None:
    assert steady_attained(raw("steadystate-nan.json"))
    assert not steady_attained(raw("steady-capped.json"))  # a 5 s window could not fill a 2 s cap
    with pytest.raises(FioParseError):
        steady_attained(raw("zram-ext4-read-128k-1x16.json"))  # no steady state asked for


def test_nan_inside_a_string_is_left_alone() -> None:
    text = raw("zram-ext4-read-128k-1x16.json").replace('"jobname" : "SR"', '"jobname" : "SR, nan"')
    assert parse(text).jobs[0].name == "SR, nan"


# (g) a failed job: fio's error on stdout before the JSON, "error" set, the detail on stderr.
def test_failed_run_with_an_error_line_before_the_json() -> None:
    text = raw("failed-unaligned-direct.json")
    assert text.startswith("fio: pid=")
    job = parse(text).jobs[0]
    assert job.error == 22 and job.directions == {}
    assert "Invalid argument" in (DATA / "failed-unaligned-direct.stderr").read_text()


def test_plain_json_has_no_histogram_and_the_precondition_wrote_the_whole_file() -> None:
    write = parse(raw("precondition-64m.json")).jobs[0].directions["write"]
    assert write.clat_bins == {} and write.io_bytes == 64 * 2**20


@pytest.mark.parametrize(
    "text",
    [
        "",
        "fio: no such file\n",
        "{not json",
        "[1, 2]",
        '{"jobs": []}',
        '{"fio version": "fio-3.33", "jobs": []}',
        '{"fio version": "fio-3.33", "jobs": [{"jobname": "x"}]}',
    ],
)
def test_garbage_is_a_parse_error(text: str) -> None:
    with pytest.raises(FioParseError):
        parse(text)


def test_output_cut_off_mid_way_is_a_parse_error() -> None:
    text = raw("zram-ext4-randread-4k-4x8.json")
    with pytest.raises(FioParseError, match="malformed"):
        parse(text[: len(text) // 2])


def test_fio_version_asks_fio() -> None:
    runner = FakeRunner({"fio": (0, "fio-3.33\n", "")})
    assert fio_version(runner) == "fio-3.33"
    assert runner.calls == [["fio", "--version"]]


# A job file's groups in turn (stonewall) ran for the sum of their wall times, not the longest one's.
def test_stonewall_groups_divide_by_the_sum_of_their_wall_times() -> None:
    name = "jobfile-two-sections-stonewall.json"
    jobs = truth(name)["jobs"]
    ios = sum(j[d]["total_ios"] for j in jobs for d in ("read", "write"))
    walls = [jobs[0]["write"]["runtime"], max(j["read"]["runtime"] for j in jobs[1:])]
    phases = group_phases((DATA / "jobfile-two-sections-stonewall.fio").read_text())
    assert phases == {0: 0, 1: 1}
    assert total_ops(parse(raw(name)), phases) == pytest.approx(ios / (sum(walls) / 1000))
    assert total_ops(parse(raw(name))) == pytest.approx(ios / (sum(walls) / 1000))  # groups default to in turn


def test_a_new_group_without_stonewall_runs_beside_the_group_before_it() -> None:
    name = "jobfile-shared-file-duplicate-sections.json"
    jobs = truth(name)["jobs"]
    phases = group_phases((DATA / "jobfile-shared-file-duplicate-sections.fio").read_text())
    assert phases == {0: 0, 1: 1, 2: 1}  # the third section says new_group, not stonewall
    ios = sum(j[d]["total_ios"] for j in jobs for d in ("read", "write"))
    wall = jobs[0]["write"]["runtime"] + max(j["read"]["runtime"] for j in jobs[1:])
    assert total_ops(parse(raw(name)), phases) == pytest.approx(ios / (wall / 1000))


def test_group_phases_follow_fio_numbering() -> None:
    text = "[global]\nstonewall\n[a]\nnumjobs=4\n[b]\n[c]\nnew_group\n"
    assert group_phases(text) == {0: 0, 1: 1, 2: 2}  # a global stonewall stonewalls every job
    assert group_phases("[a]\nstonewall\n[b]\n") == {0: 0}  # the first job starts no new group
