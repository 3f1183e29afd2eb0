"""A user's YCSB workload file: read and checked in the spec, sized into its server, run with what
layerbench must set named; YCSB 0.17.0's own workloada-f (tests/data/ycsb/workloads/) as the data."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from layerbench.records.info import TrialInfo
from layerbench.spec import load, ycsb_file
from layerbench.spec.databases import ServerSpec, YcsbWorkload
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.matrix import expand
from layerbench.spec.models import STORED_CONTEXT, Cell, StackSpec
from layerbench.workloads import footprint, ycsb

FILES = Path(__file__).resolve().parents[1] / "data" / "ycsb" / "workloads"
LETTERS = "abcdef"
ENDPOINT = {"host": "127.0.0.1", "port": "5432"}


def _file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "mine.properties"
    path.write_text(text)
    return str(path)


def _workload(path: Path | str, **fields: object) -> YcsbWorkload:
    return YcsbWorkload.model_validate({"name": "w", "workload_file": str(path), **fields})


def _stack(server: object = "postgres", size: str = "2GiB") -> StackSpec:
    fields = {"device": {"kind": "loop", "size": size}, "filesystem": "xfs", "engine": "native"}
    return StackSpec.model_validate({**fields, "placement": "host-dir", "server": server})


@pytest.mark.parametrize("letter", LETTERS)
def test_ycsb_s_own_files_are_the_mixes_layerbench_names_after_them(letter: str) -> None:
    w = _workload(FILES / f"workload{letter}")
    props = w.file_properties
    assert (props["recordcount"], props["workload"]) == ("1000", ycsb_file.CORE_WORKLOAD)
    mix = ycsb.mix_of(w)
    assert {k: float(v) for k, v in mix.items() if k.endswith("proportion")} == {
        k: float(v) for k, v in ycsb.MIXES[letter].items() if k.endswith("proportion")
    }
    assert mix["requestdistribution"] == ycsb.MIXES[letter]["requestdistribution"]
    assert w.inserts == (letter in "de")


def test_comments_blank_lines_colons_and_the_last_of_a_key() -> None:
    text = "# a comment\n! another\n\n  recordcount = 5\nfieldcount:3\nrecordcount=7\nhotspotdatafraction=0.2\n"
    assert ycsb_file.parse(text, "f") == {"recordcount": "7", "fieldcount": "3", "hotspotdatafraction": "0.2"}


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("recordcount=10\nreadproportion 0.5\n", "f, line 2: not key=value: 'readproportion 0.5'"),
        ("# c\n\nreadproportion\n", "f, line 3: not key=value"),
        ("=5\n", "f, line 1: not key=value"),
        ("fieldlength=10\\\n  0\n", "f, line 1: a backslash"),
    ],
)
def test_a_line_that_is_not_key_value_is_refused_with_its_line_number(text: str, words: str) -> None:
    with pytest.raises(ycsb_file.WorkloadFileError, match=words):
        ycsb_file.parse(text, "f")


def test_a_spec_with_a_broken_file_is_refused_when_loaded_naming_file_and_line(tmp_path: Path) -> None:
    path = _file(tmp_path, "recordcount=10\nnonsense\n")
    with pytest.raises(ValidationError, match=f"{path}, line 2: not key=value"):
        _workload(path)


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"workload_file: cannot read .*nowhere.*No such file"):
        _workload(tmp_path / "nowhere")


def test_an_unknown_workload_class_is_refused_naming_what_is_expected(tmp_path: Path) -> None:
    path = _file(tmp_path, "workload=site.ycsb.workloads.TimeSeriesWorkload\n")
    with pytest.raises(ValidationError, match=r"TimeSeriesWorkload: YCSB 0\.17\.0 as layerbench runs it has "):
        _workload(path)
    with pytest.raises(ValidationError, match=r"site\.ycsb\.workloads\.CoreWorkload"):
        _workload(_file(tmp_path, "workload=org.example.Mine\n"))


def test_a_pre_0_14_class_is_mapped_and_named_as_overridden(tmp_path: Path) -> None:
    w = _workload(_file(tmp_path, "workload=com.yahoo.ycsb.workloads.CoreWorkload\nreadproportion=1\n"))
    props = ycsb.properties(w, ServerSpec(kind="postgres"), 10_000, ENDPOINT, "run")
    assert props["workload"] == ycsb_file.CORE_WORKLOAD
    named = ycsb.overridden(w, props, "postgres", "run")
    assert named["workload"] == ("com.yahoo.ycsb.workloads.CoreWorkload", ycsb_file.CORE_WORKLOAD)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("recordcount=1e6\n", "recordcount=1e6: YCSB reads a whole number"),
        ("readproportion=1.5\n", "readproportion=1.5: a proportion"),
        ("exportfile=/tmp/out\n", "exportfile: layerbench reads YCSB's report from its output"),
    ],
)
def test_values_layerbench_reads_are_checked(tmp_path: Path, text: str, words: str) -> None:
    with pytest.raises(ValidationError, match=words):
        _workload(_file(tmp_path, text))


def test_a_file_or_a_mix_not_both() -> None:
    with pytest.raises(ValidationError, match="mix: a workload_file sets its own mix"):
        _workload(FILES / "workloada", mix="b")
    with pytest.raises(ValidationError, match="workload_text: layerbench reads it from workload_file"):
        YcsbWorkload(name="w", workload_text="recordcount=1\n")


def test_the_run_leaves_the_mix_to_the_file_and_names_what_it_set_otherwise() -> None:
    w = _workload(FILES / "workloada", threads=4, runtime_s=10)
    server = w.sized(_stack()).server
    assert server is not None
    props = ycsb.properties(w, server, 1_000, ENDPOINT, "run", "/tmp/hdr")
    assert not any(k.endswith("proportion") for k in props) and "requestdistribution" not in props
    assert "workload" not in props  # the file names CoreWorkload itself
    assert props["maxexecutiontime"] == "10" and props["threadcount"] == "4"
    named = ycsb.overridden(w, props, "postgres", "run")
    assert named == {"operationcount": ("1000", props["operationcount"])}  # recordcount and fields agree
    # After inserts the server holds more than the file's count: that is named too.
    later = ycsb.properties(w, server, 1_050, ENDPOINT, "run")
    assert ycsb.overridden(w, later, "postgres", "run")["recordcount"] == ("1000", "1050")


def test_flags_on_the_command_line_are_named_too(tmp_path: Path) -> None:
    w = _workload(_file(tmp_path, "db=site.ycsb.BasicDB\nthreadcount=1\nexporter=x.JSONExporter\n"), threads=2)
    props = ycsb.properties(w, ServerSpec(kind="redis"), 10, ENDPOINT, "load")
    named = ycsb.overridden(w, props, "redis", "load")
    assert named["db"] == ("site.ycsb.BasicDB", ycsb.BINDINGS["redis"])
    assert named["threadcount"] == ("1", "2")
    assert named["exporter"] == ("x.JSONExporter", ycsb.TEXT_EXPORTER)


def test_the_file_is_given_to_the_client_before_what_layerbench_sets(tmp_path: Path) -> None:
    w = _workload(FILES / "workloadf")
    files = ycsb.put_workload_file(w, tmp_path)
    assert Path(files[0]).read_text() == (FILES / "workloadf").read_text()
    argv = ycsb.argv("java", "/cache", "postgres", "run", {"threadcount": "2"}, files)
    assert argv.index("-P") < argv.index("-p") and argv[argv.index("-P") + 1] == files[0]
    assert ycsb.put_workload_file(YcsbWorkload(name="m"), tmp_path) == []


def test_a_stack_s_load_runs_the_first_file_among_its_workloads() -> None:
    mixed = [YcsbWorkload(name="m"), _workload(FILES / "workloade")]
    assert ycsb.loader(mixed, 3).workload_file == str(FILES / "workloade")
    assert ycsb.loader(mixed, 3).threads == 3
    assert ycsb.loader([YcsbWorkload(name="m")], 3).workload_file is None


def test_the_file_s_data_set_sizes_a_server_that_sets_none(tmp_path: Path) -> None:
    w = _workload(_file(tmp_path, "recordcount=5000\nfieldcount=4\nfieldlength=50\n"))
    server = w.sized(_stack()).server
    assert server is not None and (server.record_count, server.record_bytes) == (5000, 200)
    # A server's own size wins: seed 002's memory- and disk-bound cases, with the file's record size.
    disk_bound = w.sized(_stack({"kind": "postgres", "memory": "64MiB", "data": 4})).server
    assert disk_bound is not None and disk_bound.record_count == 4 * 64 * 2**20 // 200
    own = w.sized(_stack({"kind": "postgres", "records": 300, "fieldlength": 10})).server
    assert own is not None and (own.record_count, own.fieldcount, own.fieldlength) == (300, 4, 10)


SPEC = """
name: files
device: {{kind: loop, size: {size}}}
stacks:
  - {{filesystem: xfs, engine: native, placement: host-dir, server: postgres}}
  - {{filesystem: xfs, engine: "docker:overlay2", placement: volume, server: postgres}}
workloads:
  - {{kind: ycsb, name: A, mix: a}}
  - {{kind: ycsb, name: mine, workload_file: {path}}}
baseline: {{filesystem: xfs, engine: native, placement: host-dir, server: postgres}}
"""


def test_cells_of_a_file_run_on_its_data_set_and_keep_their_baseline(full_caps: HostCaps, tmp_path: Path) -> None:
    path = _file(tmp_path, "recordcount=2000\nreadproportion=1\n")
    m = expand(load.parse(SPEC.format(size="2GiB", path=path)), full_caps, files=footprint.files)
    assert not m.refused
    sizes = {(c.stack.engine.kind, c.workload.name): c.stack.server.record_count for c in m.cells if c.stack.server}
    assert sizes == {
        ("native", "A"): 10_000,
        ("native", "mine"): 2000,
        ("docker", "A"): 10_000,
        ("docker", "mine"): 2000,
    }
    by_id = {c.id: c for c in m.cells}
    for c in m.cells:
        base = by_id[m.baseline_of[c.id]] if m.baseline_of[c.id] else None
        assert base is not None and (base.stack.engine.kind, base.workload.name) == ("native", c.workload.name)


def test_a_data_set_larger_than_the_device_is_refused(full_caps: HostCaps, tmp_path: Path) -> None:
    path = _file(tmp_path, "recordcount=2000000\nfieldcount=10\nfieldlength=100\n")  # 2 GB of records
    m = expand(load.parse(SPEC.format(size="1GiB", path=path)), full_caps, files=footprint.files)
    refused = {r.cell.workload.name: r.reason for r in m.refused}
    assert set(refused) == {"mine"} and "postgres(2000000rec) records x1 1.86 GiB" in refused["mine"]


def test_a_stored_cell_keeps_the_file_s_text_and_needs_no_file(tmp_path: Path) -> None:
    path = Path(_file(tmp_path, "recordcount=20\nreadproportion=1\n"))
    cell = Cell(stack=_stack(), workload=_workload(path))
    dumped = cell.model_dump_json()
    path.unlink()
    back = Cell.model_validate_json(dumped, context=STORED_CONTEXT)
    assert back.workload.workload_text == "recordcount=20\nreadproportion=1\n"  # type: ignore[union-attr]
    assert back.id == cell.id and "mix" not in cell.model_dump()["workload"]


def test_a_cell_without_a_file_dumps_as_before() -> None:
    assert set(YcsbWorkload(name="m").model_dump()) == {
        "kind", "name", "mix", "distribution", "threads", "runtime_s", "warmup_s", "target_ops", "consistency",
    }  # fmt: skip


def test_the_trial_info_keeps_what_was_overridden() -> None:
    info = TrialInfo(overridden={"threadcount": ("1", "8"), "workload": ("", ycsb_file.CORE_WORKLOAD)})
    assert TrialInfo.from_json(info.to_json()) == info


def test_a_file_that_inserts_is_refused_with_many_clients_per_server(full_caps: HostCaps) -> None:
    text = (
        "name: c\nstacks:\n  - {filesystem: ext4, engine: native, placement: host-dir, server: postgres, "
        "clients: [1, 2]}\nworkloads:\n"
        f"  - {{kind: ycsb, name: d, workload_file: {FILES / 'workloadd'}}}\n"
        f"  - {{kind: ycsb, name: c, workload_file: {FILES / 'workloadc'}}}\n"
    )
    m = expand(load.parse(text), full_caps)
    refused = [(r.cell.workload.name, r.cell.stack.clients.count, r.reason) for r in m.refused]  # type: ignore[union-attr]
    assert [(name, n) for name, n, _ in refused] == [("d", 2)]
    assert "YCSB's workload file" in refused[0][2] and "inserts" in refused[0][2]
