from __future__ import annotations

import json
from pathlib import Path

import pytest

from layerbench.analysis.percentiles import percentiles
from layerbench.workloads.fio import FioParseError, parse, samples

DATA = Path(__file__).parent.parent / "data" / "fio" / "3.33"


def raw(name: str) -> str:
    return (DATA / name).read_text()


@pytest.mark.parametrize("name", ["native-randread-4k-32x32.json", "container-volume-randread-4k-32x32.json"])
def test_randread_native_and_container(name: str) -> None:
    result = parse(raw(name))
    truth = json.loads(raw(name))["jobs"][0]["read"]
    assert result.version == "fio-3.33"
    assert len(result.jobs) == 1  # group_reporting: 32 jobs reported as one
    job = result.jobs[0]
    assert job.name == "RR" and job.error == 0
    assert set(job.directions) == {"read"}  # the empty write side is skipped
    read = job.directions["read"]
    assert read.iops == truth["iops"] and read.io_bytes == truth["io_bytes"]
    assert read.lat["clat"].percentiles["p99"] == truth["clat_ns"]["percentile"]["99.000000"]
    assert read.lat["slat"].mean_ns == truth["slat_ns"]["mean"]
    assert sum(read.clat_bins.values()) == truth["clat_ns"]["N"]


def test_histogram_percentiles_agree_with_fio_s_own() -> None:
    read = parse(raw("native-randread-4k-32x32.json")).jobs[0].directions["read"]
    ours = percentiles(read.clat_bins)
    for p in ("p50", "p99"):
        assert abs(ours[p] - read.lat["clat"].percentiles[p]) / read.lat["clat"].percentiles[p] < 0.02


def test_write_and_sequential() -> None:
    rw = parse(raw("container-writable-randwrite-4k-32x32.json")).jobs[0]
    assert set(rw.directions) == {"write"} and rw.directions["write"].iops > 0
    sw = parse(raw("native-raw-write-128k.json")).jobs[0].directions["write"]
    assert sw.bw_bytes == json.loads(raw("native-raw-write-128k.json"))["jobs"][0]["write"]["bw_bytes"]
    sr = parse(raw("native-read-128k.json")).jobs[0]
    assert set(sr.directions) == {"read"}


def test_mixed_job_has_both_directions_and_samples_for_each() -> None:
    result = parse(raw("native-randrw-70-mix.json"))
    assert set(result.jobs[0].directions) == {"read", "write"}
    metrics = {(s.metric, s.direction) for s in samples(result)}
    assert {("iops", "read"), ("iops", "write"), ("clat_p99", "read"), ("clat_p99.9", "write")} <= metrics
    assert all(s.job == "MIX" for s in samples(result) if s.metric != "ops")
    truth = json.loads(raw("native-randrw-70-mix.json"))["jobs"][0]
    ops = next(s.value for s in samples(result) if s.metric == "ops")
    total = truth["read"]["total_ios"] + truth["write"]["total_ios"]
    assert ops == pytest.approx(total / (truth["job_runtime"] / 1000))


def test_job_file_keeps_jobs_and_groups_apart() -> None:
    result = parse(raw("jobfile-two-sections-stonewall.json"))
    names = [(j.name, j.groupid) for j in result.jobs]
    assert names[0] == ("seq-write", 0)
    assert [n for n, g in names[1:]] == ["rand-read", "rand-read"] and all(g == 1 for _, g in names[1:])
    assert set(result.jobs[0].directions) == {"write"} and set(result.jobs[1].directions) == {"read"}


def test_failed_run_with_a_warning_line_before_the_json() -> None:
    text = raw("failed-unaligned-direct.json")
    assert text.startswith("fio: ")
    result = parse(text)
    assert result.jobs[0].error == 22


@pytest.mark.parametrize("text", ["", "fio: no such file\n", "{not json", "[1, 2]", '{"jobs": []}'])
def test_garbage_is_a_parse_error(text: str) -> None:
    with pytest.raises(FioParseError):
        parse(text)
