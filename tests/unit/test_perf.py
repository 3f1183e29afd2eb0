"""The perf adapter: command lines, and the parsers on output of real perf 6.1 runs.

tests/data/perf/README.md says how each fixture was produced.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from layerbench.errors import LayerbenchError, SpecError
from layerbench.profiling import perf
from layerbench.profiling.perf import PerfError

DATA = Path(__file__).parent.parent / "data" / "perf"
IDLE = (
    "swapper;common_startup_64_[k];x86_64_start_kernel_[k];__pfx_clear_bss_[k];start_kernel_[k];rest_init_[k];"
    "cpu_startup_entry_[k];do_idle_[k];cpuidle_enter_[k];cpuidle_enter_state_[k];default_enter_idle_[k];"
    "default_idle_[k];pv_native_safe_halt_[k]"
)


def folded(name: str) -> dict[str, int]:
    return perf.fold((DATA / name).read_text())


def test_record_argv_samples_every_cpu_with_the_software_clock() -> None:
    assert perf.record_argv(Path("/w/p.data")) == [
        "perf", "record", "-e", "cpu-clock", "-F", "99", "-a", "-g", "-o", "/w/p.data",
    ]  # fmt: skip
    assert perf.record_argv(Path("x"), frequency=997)[5] == "997"


def test_record_argv_refuses_a_frequency_below_one() -> None:
    with pytest.raises(SpecError, match="at least 1 Hz"):
        perf.record_argv(Path("x"), frequency=0)


def test_stat_and_script_argv() -> None:
    assert perf.stat_argv(Path("/w/s.csv")) == [
        "perf", "stat", "-a", "-x", ",", "-e", "context-switches,raw_syscalls:sys_enter,cpu-clock", "-o", "/w/s.csv",
    ]  # fmt: skip
    assert perf.script_argv(Path("/w/p.data")) == [
        "perf", "script", "-F", "comm,pid,tid,period,ip,sym,dso", "-i", "/w/p.data",
    ]  # fmt: skip


def test_fold_fio_capture_counts_every_sample() -> None:
    stacks = folded("fio-native-1s.perf-script")
    assert sum(stacks.values()) == 154
    assert len(stacks) == 20
    assert stacks[IDLE] == 109  # idle is kept: the analysis decides
    assert sum(n for stack, n in stacks.items() if stack.startswith("fio;")) == 43
    assert stacks["kdamond.0;ret_from_fork_asm_[k];ret_from_fork_[k];kthread_[k];kdamond_fn_[k];"
                  "damon_pa_check_accesses_[k];__damon_get_folio_[k];pfn_to_online_page_[k]"] == 1  # fmt: skip


def test_fold_puts_user_frames_above_kernel_frames_root_first() -> None:
    stacks = folded("fio-native-1s.perf-script")
    pread = (
        "fio;__libc_pread;entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k];__x64_sys_pread64_[k];vfs_read_[k];"
        "filemap_read_[k];filemap_get_pages_[k];force_page_cache_ra_[k];page_cache_ra_unbounded_[k];read_pages_[k];"
        "blk_finish_plug_[k];__blk_flush_plug_[k];blk_mq_flush_plug_list_[k];blk_mq_dispatch_list_[k];"
        "dd_insert_requests_[k];__list_add_valid_or_report_[k]"
    )
    assert stacks[pread] == 1
    assert stacks["fio;clock_gettime@@GLIBC_2.17;__vdso_clock_gettime"] == 10  # [vdso] is user space


def test_fold_drops_garbage_frames_and_names_unknown_symbols_by_binary() -> None:
    stacks = folded("fio-native-1s.perf-script")
    assert not any("[unknown]" in stack for stack in stacks)
    # The 127-frame samples end at the last real frame.
    assert max(stack.count(";") for stack in stacks) == 22
    assert stacks["fio;[fio]"] == 3  # a symbol perf could not name, in fio's own code


def test_fold_keeps_cpp_symbols_whole() -> None:
    stacks = folded("fio-native-1s.perf-script")
    cpp = "fio;std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_replace"
    assert stacks[cpp] == 1


def test_fold_default_format_strips_offsets() -> None:
    stacks = folded("find-1s-default.perf-script")
    assert sum(stacks.values()) == 149
    assert stacks[IDLE] == 40
    assert sum(n for stack, n in stacks.items() if stack.startswith("find;")) == 105
    assert stacks["find;[find]"] == 7
    assert not any("+0x" in stack for stack in stacks)
    assert "kworker/0:2-vir" in {stack.split(";")[0] for stack in stacks}


def test_both_formats_fold_the_same_sample_alike() -> None:
    default = (
        "fio  5960 [001] 19895.516683:   10101010 cpu-clock: \n"
        "\tffffffff816dfba4 __d_lookup+0x24 ([kernel.kallsyms])\n"
        "\t           f6417 __libc_pread+0x17 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
        "\n"
    )
    fields = (
        "fio  5960/5960    10101010 \n"
        "\tffffffff816dfba4 __d_lookup ([kernel.kallsyms])\n"
        "\t           f6417 __libc_pread (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
        "\n"
    )
    assert perf.fold(default) == perf.fold(fields) == {"fio;__libc_pread;__d_lookup_[k]": 1}


def test_fold_reads_a_comm_with_spaces_and_digits() -> None:
    text = "Thread 2  5960/5961    10101010 \n\tffffffff816dfba4 f ([kernel.kallsyms])\n\n"
    assert perf.fold(text) == {"Thread 2;f_[k]": 1}
    default = "Web Content 12  77 [000] 1.5:   10101010 cpu-clock: \n\t1 g (/usr/lib/x.so)\n"
    assert perf.fold(default) == {"Web Content 12;g": 1}


def test_fold_marks_module_frames_as_kernel_and_sanitises_separators() -> None:
    text = (
        "fio  1/1  10101010 \n"
        "\tffffffffc0a1b2c3 xfs_file_read_iter ([xfs])\n"
        "\tffffffffc0a1b2c3 [unknown] ([btrfs])\n"
        "\t1234 operator;weird (/opt/a b/lib (x).so (deleted))\n"
        "\t1234 [unknown] ([unknown])\n"
    )
    assert perf.fold(text) == {"fio;operator:weird;[btrfs]_[k];xfs_file_read_iter_[k]": 1}


def test_fold_of_nothing_is_empty_and_of_a_stray_frame_an_error() -> None:
    assert perf.fold("") == {}
    with pytest.raises(PerfError, match="outside any sample"):
        perf.fold("\tffffffff816dfba4 __d_lookup ([kernel.kallsyms])\n")
    with pytest.raises(PerfError, match="neither a sample's header"):
        perf.fold("not perf output at all\n")


def test_perf_error_is_a_layerbench_error() -> None:
    assert issubclass(PerfError, LayerbenchError)


def test_parse_stat_real_capture() -> None:
    counters = perf.parse_stat((DATA / "stat.csv").read_text())
    assert counters == {
        "context-switches": 34710.0,
        "raw_syscalls:sys_enter": 19085.0,
        "cpu-clock": 2538.55,
        "task-clock": 2538.55,
    }


def test_parse_stat_leaves_out_what_perf_could_not_count() -> None:
    text = (
        "# started\n\n"
        "<not counted>,,context-switches,0,0.00,,\n"
        "<not supported>,,cycles,0,100.00,,\n"
        "5,,cpu-clock,1,1,,\n"
    )
    assert perf.parse_stat(text) == {"cpu-clock": 5.0}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no counters"),
        ("# started on ...\n\n", "no counters"),
        ("12,,\n", "no event field"),
        ("twelve,,cpu-clock,1,100.00,,\n", "not a counter value"),
        ("1,,cpu-clock\n2,,cpu-clock\n", "counted twice"),
    ],
)
def test_parse_stat_refuses_what_it_cannot_read(text: str, message: str) -> None:
    with pytest.raises(PerfError, match=message):
        perf.parse_stat(text)


def test_preempted_follows_the_workload_from_switched_out_runnable_to_back_on_a_cpu() -> None:
    # IOzone's output piped through `cat` (tests/data/perf/README.md): its readers took the CPU from it.
    text = (DATA / "iozone-sched-switch.perf-script").read_text()
    p = perf.preempted(text, ["iozone"])
    assert p.count == 31  # switches with prev_state=R: runnable, not sleeping
    assert p.seconds == pytest.approx(264e-6, abs=1e-6)
    assert set(p.by) == {"sh", "cat", "memfd:sealed-91", "rcu_preempt"}
    assert p.by["sh"] == pytest.approx(114e-6, abs=1e-6)
    assert perf.preempted(text, ["fio"]).count == 0


def test_preempted_pairs_each_thread_with_its_own_return() -> None:
    def switch(comm: str, time: str, prev: str, state: str, next_: str) -> str:
        pid, next_pid = prev.split("/"), next_.split("/")
        return (
            f"{comm} {pid[1]} {time}: prev_comm={pid[0]} prev_pid={pid[1]} prev_prio=120 prev_state={state}"
            f" ==> next_comm={next_pid[0]} next_pid={next_pid[1]} next_prio=120"
        )

    lines = [
        switch("fio", "1.000000", "fio/10", "R+", "dockerd/3"),
        switch("fio", "1.000100", "fio/11", "S", "idle/0"),
        switch("dockerd", "1.000500", "dockerd/3", "S", "fio/11"),
        switch("x", "1.001000", "containerd-shim/4", "S", "fio/10"),
    ]
    p = perf.preempted("\n".join(lines), ["fio"])
    assert p.count == 1 and p.by == {"dockerd": pytest.approx(0.001)}  # thread 11 slept: not preempted
