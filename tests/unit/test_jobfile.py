"""A user's job file as fio reads it: fio's own language (comments, variables, arithmetic, includes),
what it costs, what is refused and why, and the file fio runs at the placement."""

from __future__ import annotations

from pathlib import Path

import pytest

from layerbench.workloads import jobfile

pytestmark = pytest.mark.requires_fio


def read(tmp: Path, text: str, name: str = "job.fio") -> jobfile.JobFile:
    path = tmp / name
    path.write_text(text)
    return jobfile.read(path)


def test_inline_comments_variables_and_arithmetic_are_fios(tmp_path: Path) -> None:
    # The lines that crashed layerbench's own reader (issue 32), as benchmark suites write them.
    jf = read(
        tmp_path,
        "[global]\nnumjobs=4\t; 4 simultaneous threads for each job\nsize=102404k ; 100Mb+4k\n"
        "[a]\nrw=read\n[b]\nrw=write\nsize=2m # two MiB\nnumjobs=2  ; two copies\n",
    )
    assert jf.error is None
    assert [j.section for j in jf.jobs] == ["a", "b"]
    assert jf.jobs[0].get("numjobs") == "4" and jf.jobs[0].get("size") == "102404k"
    assert jf.jobs[1].get("size") == "2m"
    assert jobfile.footprint(jf) == {"[a]#0": 4 * 102404 * 1024, "[b]#1": 2 * 2 * 1024 * 1024}
    assert jobfile.refusal(jf, raw=False) is None


def test_fios_variables_are_evaluated_by_fio(tmp_path: Path) -> None:
    jf = read(tmp_path, "[m]\nrw=read\nsize=5*1024*1024*$mb_memory/8 # 5/8 of the memory\n")
    assert jf.error is None
    assert int(jf.jobs[0].get("size") or "0") > 5 * 2**20  # fio put in $mb_memory, this host's, and did the sum
    # Without a variable fio 3.33 (Debian's, built without its expression parser) does no sum itself.
    bare = read(tmp_path, "[m]\nrw=read\nsize=2*1024*1024\n", "bare.fio")
    assert "size=2*1024*1024: layerbench cannot tell" in (jobfile.refusal(bare, raw=False) or "")


def test_a_later_global_applies_to_the_jobs_after_it_only(tmp_path: Path) -> None:
    jf = read(tmp_path, "[a]\nrw=read\nsize=1m\n[global]\niodepth=8\n[b]\nrw=write\nsize=1m\n")
    assert jf.jobs[0].get("iodepth") is None and jf.jobs[1].get("iodepth") == "8"


def test_a_jobs_own_name_option_is_kept_as_an_option(tmp_path: Path) -> None:
    jf = read(tmp_path, "[job1]\nname=read_iops\nrw=randread\nsize=1m\n[job2]\nname=write_iops\nsize=1m\n")
    assert [j.section for j in jf.jobs] == ["job1", "job2"]
    assert jf.jobs[1].get("name") == "write_iops"


def test_what_fio_cannot_read_is_refused_with_fios_message(tmp_path: Path) -> None:
    jf = read(tmp_path, "[x]\nfoo=bar\nsize=1m\n")
    assert jf.error is not None and "Bad option <foo=bar>" in jf.error and "job x dropped" in jf.error
    assert jobfile.refusal(jf, raw=False) == jf.error
    stray = read(tmp_path, "size=1m\n[x]\nrw=read\n", "stray.fio")
    assert stray.error == "fio refuses it: option <size=1m> outside of [] job section"
    assert read(tmp_path, "[global]\nsize=1m\n", "empty.fio").error == "it defines no job"


def test_engines_without_files_cost_nothing(tmp_path: Path) -> None:
    jf = read(tmp_path, "[n]\nioengine=null\nsize=100g\n[c]\nioengine=cpuio\ncpuload=10\nsize=100g\n")
    assert jobfile.refusal(jf, raw=False) is None and jobfile.footprint(jf) == {}
    net = read(tmp_path, "[r]\nioengine=net\nport=8888\nprotocol=tcp\nlisten\nrw=read\nsize=100g\n", "net.fio")
    assert jobfile.refusal(net, raw=True) is None and jobfile.footprint(net) == {}


def test_a_parenthesised_sum_is_counted_as_fio_evaluates_it() -> None:
    assert jobfile.fio_bytes("(2*1024*1024)", 0) == 2 * 2**20
    assert jobfile.fio_bytes("(1/0)", 0) is None and jobfile.fio_bytes("(__import__('os'))", 0) is None


def test_sizes_in_zones_and_ranges(tmp_path: Path) -> None:
    zones = read(tmp_path, "[z]\nzonemode=strided\nzonesize=1m\nzonerange=2m\nsize=128z\nrw=read\n")
    assert jobfile.footprint(zones) == {"[z]#0": 128 * 2**20}
    bare = read(tmp_path, "[z]\nsize=128z\nrw=read\n", "bare.fio")
    assert "size=128z: layerbench cannot tell how much space that takes" in (jobfile.refusal(bare, False) or "")
    ranged = read(tmp_path, "[r]\nnrfiles=8\nfilesize=4k-64k\nrw=write\n", "range.fio")
    assert jobfile.footprint(ranged) == {"[r]#0": 8 * 64 * 2**10}


def test_clones_share_a_named_file(tmp_path: Path) -> None:
    jf = read(tmp_path, "[a]\nfilename=x.dat\nsize=1g\nnumjobs=4\n[b]\nfilename=x.dat\nsize=512m\n")
    assert jobfile.footprint(jf) == {"file x.dat": 2**30}


def test_paths_outside_the_placement_are_refused_unless_allowed(tmp_path: Path) -> None:
    jf = read(tmp_path, "[d]\nfilename=/dev/sda\nrw=read\nsize=1m\n")
    reason = jobfile.refusal(jf, raw=False)
    assert reason == (
        "[d]: filename=/dev/sda names a path outside the placement; "
        "set allow_outside_placement: true in the workload to let it"
    )
    assert jobfile.refusal(jf, raw=False, outside=True) is None
    assert jobfile.refusal(jf, raw=True) is None  # on a raw placement every filename is the placement's device
    up = read(tmp_path, "[u]\nfilename=../escape\nsize=1m\n", "up.fio")
    assert "outside the placement" in (jobfile.refusal(up, raw=False) or "")
    log = read(tmp_path, "[l]\nsize=1m\nwrite_iolog=/etc/cron.d/x\n", "log.fio")
    assert "write_iolog=/etc/cron.d/x" in (jobfile.refusal(log, raw=False) or "")


def test_an_include_is_read_and_its_options_judged(tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "device.fio").write_text("filename=/dev/sdb ; the disk\n")
    jf = read(tmp_path, "[global]\nsize=1m\n[j]\ninclude inc/device.fio\nrw=read\n")
    assert jf.jobs[0].get("filename") == "/dev/sdb"
    assert "filename=/dev/sdb names a path outside" in (jobfile.refusal(jf, raw=False) or "")
    missing = read(tmp_path, "[j]\ninclude nowhere.fio\nsize=1m\n", "missing.fio")
    assert missing.error is not None and "nowhere.fio" in missing.error


def test_programs_are_refused_unless_allowed(tmp_path: Path) -> None:
    pre = read(tmp_path, "[p]\nexec_prerun=touch /tmp/owned\nsize=1m\nrw=read\n")
    assert jobfile.refusal(pre, raw=False) == (
        "[p]: exec_prerun=touch /tmp/owned runs a program as root; set allow_programs: true in the workload to let it"
    )
    assert jobfile.refusal(pre, raw=False, programs=True) is None
    exe = read(tmp_path, "[e]\nioengine=exec\nprogram=/bin/true\n", "exec.fio")
    assert "ioengine=exec runs a program as root" in (jobfile.refusal(exe, raw=False) or "")
    # fio dlopen()s an engine to read options it does not know itself: refused before fio reads the file.
    for engine in ("external:/tmp/engine.so", "/tmp/engine.so", "${ENGINE}"):
        ext = read(tmp_path, f"[x]\nioengine={engine} ; its own\nengine_option=1\nsize=1m\n", "ext.fio")
        assert ext.error == (
            f"ioengine={engine} loads a program (a shared object) as root; "
            "set allow_programs: true in the workload to let it"
        )
    (tmp_path / "ext.fio").write_text("[x]\nioengine=external:/nonexistent/engine.so\nengine_option=1\nsize=1m\n")
    let = jobfile.read(tmp_path / "ext.fio", programs=True)
    assert let.error is not None and "not loadable" in let.error  # fio tried: there is no such engine


def test_engines_this_host_cannot_run_are_refused_with_a_reason(tmp_path: Path) -> None:
    for engine, said in [
        ("rbd", "reaches storage elsewhere"),
        ("libpmem", "needs a DAX filesystem"),
        ("sg", "SCSI generic device"),
        ("dev-dax", "/dev/dax"),
    ]:
        jf = read(tmp_path, f"[e]\nioengine={engine}\nsize=1m\n", f"{engine}.fio")
        assert said in (jobfile.refusal(jf, raw=False) or ""), engine
    http = read(tmp_path, "[h]\nioengine=http\nhttp_host=example.com\nsize=1m\n", "http.fio")
    assert "engine http not loadable" in (jobfile.refusal(http, raw=False) or "")  # fio's own words
    zbd = read(tmp_path, "[z]\nzonemode=zbd\nsize=1m\n", "zbd.fio")
    assert "zonemode=zbd needs a zoned block device" in (jobfile.refusal(zbd, raw=True) or "")


def test_a_file_job_without_a_size_is_refused_on_a_filesystem(tmp_path: Path) -> None:
    jf = read(tmp_path, "[w]\nrw=write\n")
    assert jobfile.refusal(jf, raw=False) == (
        "[w]: it gives no size; on a filesystem placement fio needs size= or filesize= in bytes: "
        "set size: in the workload"
    )
    assert jobfile.refusal(jf, raw=True) is None
    share = read(tmp_path, "[a]\nfilename=f\nsize=1m\n[b]\nfilename=f\nsize=50%\n", "share.fio")
    assert jobfile.refusal(share, raw=False) is None  # the file exists once [a] laid it out


def test_the_rewrite_writes_every_jobs_options_at_the_placement(tmp_path: Path) -> None:
    (tmp_path / "common.fio").write_text("bs=64k\n")
    jf = read(
        tmp_path,
        "[global]\ndirectory=/somewhere\ninclude common.fio\n[a]\nrw=read\nsize=1m\nstonewall\n"
        "[a]\nfilename=shared\nrw=write\nsize=1m\n",
    )
    text = jobfile.rewrite(jf, "/data", raw=False)
    assert text.splitlines()[:2] == ["[global]", "directory=/data"]
    assert "directory=/somewhere" not in text and text.count("bs=64k") == 2
    assert "[a]\nbs=64k\nrw=read\nsize=1m\nstonewall\n" in text and "filename=shared" in text
    on_device = jobfile.rewrite(jf, "/dev/zram3", raw=True)
    assert "filename=/dev/zram3" in on_device and "filename=shared" not in on_device


def test_the_rewrite_is_what_fio_reads_back(tmp_path: Path) -> None:
    jf = read(tmp_path, "[global]\nnumjobs=2 ; two\n[a]\nrw=randread\nsize=4m\n[global]\niodepth=4\n[b]\nsize=4m\n")
    again = read(tmp_path, jobfile.rewrite(jf, str(tmp_path), raw=False), "again.fio")
    assert again.error is None
    assert [dict(j.options) for j in again.jobs] == [{"directory": str(tmp_path), **dict(j.options)} for j in jf.jobs]


def test_engines_moving_no_data_through_a_device_are_named(tmp_path: Path) -> None:
    jf = read(tmp_path, "[n]\nioengine=null\nsize=1g\n[d]\nioengine=dircreate\nnrfiles=3\n[f]\nsize=1m\n")
    assert jobfile.without_device_io(jf) == ["dircreate", "null"]


def test_an_include_outside_the_job_files_directory_is_refused_before_fio_reads_it(tmp_path: Path) -> None:
    # fio would read it as root and echo its lines in "Bad option <...>": a file's secrets in a refusal.
    (tmp_path / "secret").write_text("root:$6$hash:19000:0:99999:7:::\n")
    (tmp_path / "jobs").mkdir()
    jf = read(tmp_path / "jobs", "[j]\nsize=1m\ninclude ../secret\n")
    assert jf.error == (
        "include ../secret reads a file outside the job file's directory; "
        "set allow_outside_placement: true in the workload to let it"
    )
    (tmp_path / "jobs" / "nested.fio").write_text(f"include {tmp_path / 'secret'}\n")
    nested = read(tmp_path / "jobs", "[j]\nsize=1m\ninclude nested.fio\n", "nested-top.fio")
    assert nested.error is not None and "outside the job file's directory" in nested.error
    allowed = jobfile.read(tmp_path / "jobs" / "job.fio", outside=True)
    assert allowed.error is not None and "Bad option" in allowed.error  # fio's own reading, when let
