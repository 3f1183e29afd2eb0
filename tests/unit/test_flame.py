"""Analysis of folded stacks: idle, shares, categories, differences and their plain-words explanation.

The real profiles are tests/data/perf's captures, folded; the edge cases are small folded dicts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from layerbench.analysis import flame
from layerbench.analysis.flame import Profile, from_folded
from layerbench.profiling.perf import fold

DATA = Path(__file__).parent.parent / "data" / "perf"
SOFTIRQ_ON_IDLE = (
    "swapper;common_startup_64_[k];x86_64_start_kernel_[k];__pfx_clear_bss_[k];start_kernel_[k];rest_init_[k];"
    "cpu_startup_entry_[k];do_idle_[k];cpuidle_enter_[k];cpuidle_enter_state_[k];default_enter_idle_[k];"
    "default_idle_[k];pv_native_safe_halt_[k];asm_sysvec_call_function_single_[k];sysvec_call_function_single_[k];"
    "__irq_exit_rcu_[k];handle_softirqs_[k]"
)


def real(name: str) -> Profile:
    return from_folded(fold((DATA / name).read_text()))


@pytest.fixture(scope="module")
def fio() -> Profile:
    return real("fio-native-1s.perf-script")


@pytest.fixture(scope="module")
def find() -> Profile:
    return real("find-1s-default.perf-script")


def test_from_folded_totals_and_drops_empty_stacks() -> None:
    profile = from_folded({"a;b": 3, "a;c": 0, "d": 2})
    assert profile == Profile({"a;b": 3, "d": 2}, 5)


@pytest.mark.parametrize("count", [-1, 1.5, True])
def test_from_folded_refuses_what_is_not_a_count(count: object) -> None:
    with pytest.raises(ValueError, match="non-negative integer"):
        from_folded({"a;b": count})  # type: ignore[dict-item]


def test_busy_drops_the_idle_loop_but_keeps_interrupts_taken_while_idle(fio: Profile) -> None:
    busy = flame.busy(fio)
    assert (fio.total, busy.total) == (154, 45)  # 109 halted samples out
    assert busy.stacks[SOFTIRQ_ON_IDLE] == 1
    assert {flame.comm_of(s) for s in busy.stacks} == {"fio", "kdamond.0", "swapper"}


@pytest.mark.parametrize(
    ("stack", "idle"),
    [
        ("swapper", True),  # the idle task with no call chain
        ("swapper;secondary_startup_64_[k];do_idle_[k];tick_nohz_idle_enter_[k]", True),  # idle bookkeeping
        ("swapper;do_idle_[k];default_idle_[k];asm_common_interrupt_[k];blk_mq_complete_request_[k]", False),
        ("fio;__libc_pread;vfs_read_[k]", False),
        ("swapper;secondary_startup_64_[k];some_work_[k]", False),
    ],
)
def test_is_idle(stack: str, idle: bool) -> None:
    assert flame.is_idle(stack) is idle


def test_only_keeps_the_workload_and_cuts_long_names_as_the_kernel_does(fio: Profile) -> None:
    assert flame.only(fio, ["fio"]).total == 43
    assert flame.only(fio, ["kdamond.0", "fio"]).total == 44
    profile = from_folded({"postgres: walwr;x": 2, "postgres;y": 1})
    assert flame.only(profile, ["postgres: walwriter"]).total == 2


def test_inclusive_shares_on_fio(fio: Profile) -> None:
    shares = flame.inclusive_shares(flame.only(fio, ["fio"]))
    assert shares["__libc_pread"] == pytest.approx(26 / 43)
    assert shares["filemap_read_[k]"] == pytest.approx(25 / 43)
    assert shares["blk_finish_plug_[k]"] == pytest.approx(18 / 43)
    assert shares["clock_gettime@@GLIBC_2.17"] == pytest.approx(10 / 43)
    assert "fio" not in shares  # the comm is the process, not a frame


def test_self_shares_on_fio(fio: Profile) -> None:
    shares = flame.self_shares(flame.only(fio, ["fio"]))
    assert shares["iowrite16_[k]"] == pytest.approx(15 / 43)  # virtio's doorbell: the VM's disk is slow to kick
    assert shares["__vdso_clock_gettime"] == pytest.approx(10 / 43)
    assert shares["[fio]"] == pytest.approx(3 / 43)


def test_a_recursive_frame_counts_once_per_stack() -> None:
    profile = from_folded({"a;f;g;f;f": 2, "a;h": 2, "a": 1})
    assert flame.inclusive_shares(profile) == {"f": 0.4, "g": 0.4, "h": 0.4}
    assert flame.self_shares(profile) == {"f": 0.4, "h": 0.4}  # "a" alone counts in no frame


def test_shares_of_an_empty_profile_are_empty() -> None:
    empty = from_folded({})
    assert flame.inclusive_shares(empty) == flame.self_shares(empty) == flame.by_category(empty) == {}


@pytest.mark.parametrize(
    ("frame", "category"),
    [
        ("__seccomp_filter_[k]", "seccomp"),
        ("ovl_copy_up_one_[k]", "overlayfs copy-up"),  # before overlayfs: the specific first
        ("ovl_read_iter_[k]", "overlayfs"),
        ("fuse_file_read_iter_[k]", "FUSE"),
        ("br_handle_frame_[k]", "container networking"),
        ("nf_hook_slow_[k]", "container networking"),
        ("__mem_cgroup_charge_[k]", "cgroup accounting"),
        ("blk_cgroup_bio_start_[k]", "cgroup accounting"),  # not the block layer
        ("btrfs_cow_block_[k]", "btrfs copy-on-write"),
        ("btrfs_csum_one_bio_[k]", "btrfs copy-on-write"),
        ("btrfs_search_slot_[k]", "filesystem"),
        ("filemap_get_pages_[k]", "page cache and readahead"),
        ("dm_submit_bio_[k]", "device-mapper"),
        ("zram_submit_bio_[k]", "zram"),
        ("lz4_compress_[k]", "zram"),
        ("lo_rw_aio_[k]", "loop device"),
        ("blk_mq_flush_plug_list_[k]", "block layer"),
        ("copy_page_to_iter.part.0_[k]", "data copies"),  # GCC's clone suffix ignored
        ("entry_SYSCALL_64_after_hwframe_[k]", "system calls"),
        ("__schedule_[k]", "scheduler"),
        ("handle_softirqs_[k]", "interrupts"),
        ("lz4_compress", None),  # user space: no kernel category
        ("pfn_to_online_page_[k]", None),
    ],
)
def test_categorize(frame: str, category: str | None) -> None:
    assert flame.categorize(frame) == category


def test_every_category_has_patterns_and_a_sentence() -> None:
    names = [c.name for c in flame.CATEGORIES]
    assert len(names) == len(set(names))
    for category in flame.CATEGORIES:
        assert category.patterns
        assert category.explanation and not category.explanation.endswith(".")


def test_by_category_on_fio_counts_each_sample_in_its_innermost_category(fio: Profile) -> None:
    busy = flame.busy(fio)
    samples = {name: round(share * busy.total) for name, share in flame.by_category(busy).items()}
    assert busy.total == 45
    assert samples == {
        "device driver": 15,  # virtio's notify: where the time went, under the block layer's calls
        "page cache and readahead": 5,
        "block layer": 4,
        "system calls": 1,  # only what the entry code itself took: the rest is in what it called
        "cgroup accounting": 1,  # the page cache's charge to the memory cgroup (natively too)
        "interrupts": 1,
    }  # the other 18 samples are in fio itself or uncategorized kernel code


def test_a_wrapper_owns_only_its_own_time() -> None:
    # overlayfs calling ext4 that copies data: the copy is the copy's, overlay's own frames are overlay's.
    profile = from_folded(
        {"fio;ovl_read_iter_[k];ext4_file_read_iter_[k];copy_page_to_iter_[k]": 9, "fio;ovl_read_iter_[k]": 1}
    )
    assert flame.by_category(profile) == {"data copies": 0.9, "overlayfs": 0.1}


def test_diff_ranks_by_growth_in_points() -> None:
    base = from_folded({"fio;x;ovl_read_[k]": 10, "fio;x;y": 90})
    other = from_folded({"fio;x;ovl_read_[k]": 40, "fio;x;y": 60})
    growths = flame.diff(base, other)
    assert [g.name for g in growths] == ["ovl_read_[k]", "x", "y"]
    first = growths[0]
    assert (first.base_samples, first.other_samples) == (10, 40)
    assert first.points == pytest.approx(30.0)
    assert first.significant
    assert growths[1].points == 0 and not growths[1].significant
    assert growths[2].points == pytest.approx(-30.0) and growths[2].significant
    assert first.base_per_mio is None and not first.per_io_significant


def test_a_frame_only_one_profile_has_grows_from_zero() -> None:
    growths = flame.diff(from_folded({"a;x": 50}), from_folded({"a;x": 50, "a;x;__seccomp_filter_[k]": 50}))
    seccomp = next(g for g in growths if g.name == "__seccomp_filter_[k]")
    assert (seccomp.base_share, seccomp.other_share, seccomp.base_samples) == (0.0, 0.5, 0)


def test_few_samples_are_not_enough_to_name_a_growth() -> None:
    # 0 of 40 against 2 of 40: five points, but Fisher's p is 0.49.
    growths = flame.diff(from_folded({"a;x": 40}), from_folded({"a;x": 38, "a;x;ovl_read_[k]": 2}))
    ovl = next(g for g in growths if g.name == "ovl_read_[k]")
    assert ovl.points == pytest.approx(5.0)
    assert ovl.q_value > 0.4
    assert not ovl.significant


def test_a_significant_but_tiny_growth_is_not_named() -> None:
    base = from_folded({"a;x": 99_000, "a;x;f_[k]": 1_000})
    other = from_folded({"a;x": 98_500, "a;x;f_[k]": 1_500})
    f = next(g for g in flame.diff(base, other) if g.name == "f_[k]")
    assert f.q_value < 1e-6
    assert f.points == pytest.approx(0.5)
    assert not f.significant  # under MIN_POINTS
    assert flame.explain([f]) == []


def test_per_io_view_finds_growth_that_shares_hide() -> None:
    # Everything doubled per I/O: shares unchanged, samples per million I/Os twice as many.
    base = from_folded({"fio;x_[k]": 50, "fio;y": 50})
    other = from_folded({"fio;x_[k]": 100, "fio;y": 100})
    growths = flame.diff(base, other, ios_base=1_000_000, ios_other=1_000_000)
    x = next(g for g in growths if g.name == "x_[k]")
    assert x.points == 0 and not x.significant
    assert (x.base_per_mio, x.other_per_mio) == (50.0, 100.0)
    assert x.q_per_io is not None and x.q_per_io < 0.001
    assert x.per_io_significant


def test_per_io_view_with_the_same_cost_per_io_names_nothing() -> None:
    base = from_folded({"fio;x_[k]": 50, "fio;y": 50})
    other = from_folded({"fio;x_[k]": 100, "fio;y": 100})
    growths = flame.diff(base, other, ios_base=1_000_000, ios_other=2_000_000)
    assert not any(g.significant or g.per_io_significant for g in growths)


@pytest.mark.parametrize(("ios_base", "ios_other"), [(1, None), (None, 5), (0, 5)])
def test_per_io_view_needs_both_counts(ios_base: int | None, ios_other: int | None) -> None:
    with pytest.raises(ValueError, match="both I/O counts"):
        flame.diff(from_folded({"a;x": 1}), from_folded({"a;x": 1}), ios_base, ios_other)


def test_diff_of_an_empty_profile_is_empty() -> None:
    assert flame.diff(from_folded({}), from_folded({"a;x": 1})) == []


def seccomp_pair() -> tuple[Profile, Profile]:
    base = from_folded(
        {"fio;entry_SYSCALL_64_[k];vfs_read_[k]": 995, "fio;entry_SYSCALL_64_[k];__seccomp_filter_[k]": 5}
    )
    other = from_folded(
        {"fio;entry_SYSCALL_64_[k];vfs_read_[k]": 940, "fio;entry_SYSCALL_64_[k];__seccomp_filter_[k]": 60}
    )
    return base, other


def test_explain_a_category_in_plain_words() -> None:
    growths = flame.diff_categories(*seccomp_pair())
    assert [g.name for g in growths] == ["seccomp", "system calls"]
    assert flame.explain(growths) == [
        "seccomp: 0.5% of the CPU samples natively, 6.0% in the container (+5.5 points): "
        "every system call is checked against the container's seccomp filter (a BPF program) first",
        "system calls: 99.5% of the CPU samples natively, 94.0% in the container (-5.5 points): "
        "the system call entry and exit code itself: more calls, or dearer ones (tracing, mitigations)",
    ]


def test_explain_a_frame_with_its_category_and_the_per_io_view() -> None:
    base, other = seccomp_pair()
    growths = flame.diff(base, other, ios_base=100_000, ios_other=100_000)
    assert flame.explain(growths, labels=("on the host", "under podman")) == [
        "__seccomp_filter_[k] (seccomp): 0.5% of the CPU samples on the host, 6.0% under podman (+5.5 points; "
        "50 → 600 samples per million I/Os): every system call is checked against the container's seccomp "
        "filter (a BPF program) first",
        "vfs_read_[k]: 99.5% of the CPU samples on the host, 94.0% under podman (-5.5 points; "
        "9950 → 9400 samples per million I/Os)",
    ]


def test_explain_stops_at_top() -> None:
    base = from_folded({f"a;f{i}": 1 for i in range(20)} | {"a;z": 980})
    other = from_folded({f"a;f{i}": 100 for i in range(20)} | {"a;z": 1000})
    assert len(flame.explain(flame.diff(base, other), top=3)) == 3
    assert len(flame.explain(flame.diff(base, other))) == 10


def test_real_profiles_compared(fio: Profile, find: Profile) -> None:
    # Not a container against its host, but two real profiles: find reads directories
    # (ext4), fio reads a file through the page cache.
    lines = flame.explain(flame.diff_categories(flame.busy(fio), flame.busy(find)), labels=("in fio", "in find"))
    assert [line.split(":")[0] for line in lines] == ["filesystem", "system calls"]
    assert lines[0].startswith("filesystem: 0.0% of the CPU samples in fio, 20.2% in find (+20.2 points)")
