"""Where the CPU went: pure functions over folded stacks (``comm;root;...;leaf`` → samples).

A ``Profile`` is what ``layerbench.profiling.perf.fold`` returns, kernel frames ending in
``_[k]``. ``busy`` and ``only`` narrow it to the work that matters; shares are fractions of
what is left. ``diff`` compares a baseline (natively) with another profile (in a container),
frame by frame or category by category, and ``explain`` puts the differences that mean
something into plain words.

A frame's share is inclusive (the samples of every stack it is on, once per stack even when
it recurses) unless ``self_shares`` says otherwise. Categories are not: a sample is in the
category of its innermost categorized frame (``category_of``), so they do not overlap and
say where the time was spent, not what it passed through.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

KERNEL_SUFFIX = "_[k]"
IDLE_COMMS = ("swapper",)  # perf's name for the idle task (pid 0) on every CPU
# The idle loop, as far down as the halt: a sample whose innermost frames are these is idle.
IDLE_FRAMES = frozenset(
    {
        "do_idle", "cpu_startup_entry", "cpuidle_idle_call", "cpuidle_enter", "cpuidle_enter_state",
        "default_enter_idle", "default_idle", "default_idle_call", "arch_cpu_idle", "cpu_do_idle",
        "pv_native_safe_halt", "native_safe_halt", "safe_halt", "cpu_idle_poll", "poll_idle",
        "intel_idle", "intel_idle_irq", "intel_idle_ibrs", "acpi_idle_enter", "acpi_idle_do_entry",
        "acpi_safe_halt", "mwait_idle", "mwait_idle_with_hints",
    }
)  # fmt: skip
# An interrupt taken while idle is work (an I/O's completion, say) even though perf charges it to
# the idle task: these frames, above the idle loop, make the sample busy.
INTERRUPT_PREFIXES = (
    "asm_sysvec_", "sysvec_", "asm_common_interrupt", "common_interrupt", "handle_softirqs",
    "__do_softirq", "do_softirq", "__irq_exit_rcu", "irq_exit", "handle_irq", "__handle_irq",
    "el1_interrupt", "gic_handle_irq",
)  # fmt: skip

ALPHA = 0.05  # false discovery rate over the frames (or categories) compared at once
MIN_POINTS = 1.0  # a share must move by at least this many percentage points to be named
MIN_PER_IO_CHANGE = 1.25  # or the samples per I/O by at least this factor, either way


@dataclass(frozen=True)
class Profile:
    """Folded stacks and their total; shares are against ``total``. Treat ``stacks`` as read-only."""

    stacks: dict[str, int]
    total: int


def from_folded(stacks: Mapping[str, int]) -> Profile:
    """A profile of folded stacks (as ``fold`` returns them); stacks with no samples are left out."""
    kept: dict[str, int] = {}
    for stack, count in stacks.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise ValueError(f"a folded stack's sample count must be a non-negative integer, not {count!r}")
        if count:
            kept[stack] = count
    return Profile(kept, sum(kept.values()))


def _where(profile: Profile, keep: Callable[[str], bool]) -> Profile:
    return from_folded({stack: n for stack, n in profile.stacks.items() if keep(stack)})


def comm_of(stack: str) -> str:
    return stack.partition(";")[0]


def frames_of(stack: str) -> list[str]:
    """The stack's frames root first, without its comm."""
    return stack.split(";")[1:]


def bare(frame: str) -> str:
    """A frame's name without the kernel marker."""
    return frame[: -len(KERNEL_SUFFIX)] if frame.endswith(KERNEL_SUFFIX) else frame


def is_idle(stack: str) -> bool:
    """The CPU had nothing to run: the idle loop, with no interrupt taken on top of it."""
    frames = [bare(f) for f in frames_of(stack)]
    inner = max((i for i, f in enumerate(frames) if f in IDLE_FRAMES), default=None)
    if inner is None:
        # No idle loop in the stack: idle only when it is the idle task with nothing else known.
        return comm_of(stack) in IDLE_COMMS and not frames
    return not any(f.startswith(INTERRUPT_PREFIXES) for f in frames[inner + 1 :])


def busy(profile: Profile) -> Profile:
    """Without idle time; the idle task's interrupts (I/O completions among them) are kept."""
    return _where(profile, lambda stack: not is_idle(stack))


def only(profile: Profile, comms: Iterable[str]) -> Profile:
    """Only the stacks of processes named ``comms`` (the workload's: fio, iozone, postgres).

    The kernel keeps 15 characters of a name, so longer names are cut as perf shows them.
    """
    wanted = {c[:15] for c in comms}
    return _where(profile, lambda stack: comm_of(stack) in wanted)


def _inclusive_counts(profile: Profile, key: Callable[[str], str | None]) -> dict[str, int]:
    """Samples per key over each stack's frames, a stack counted once per key it has."""
    counts: dict[str, int] = {}
    for stack, n in profile.stacks.items():
        for name in {key(frame) for frame in frames_of(stack)}:
            if name is not None:
                counts[name] = counts.get(name, 0) + n
    return counts


def _shares(counts: Mapping[str, int], total: int) -> dict[str, float]:
    return {name: n / total for name, n in counts.items()} if total else {}


def inclusive_shares(profile: Profile) -> dict[str, float]:
    """Each frame's share of the samples: the stacks it is on, once each even if it recurses."""
    return _shares(_inclusive_counts(profile, lambda frame: frame), profile.total)


def self_shares(profile: Profile) -> dict[str, float]:
    """Each frame's share of the samples taken in it (the leaf). A stack with no frame but its
    comm (every frame unresolvable) counts in the total and in no frame."""
    counts: dict[str, int] = {}
    for stack, n in profile.stacks.items():
        frames = frames_of(stack)
        if frames:
            counts[frames[-1]] = counts.get(frames[-1], 0) + n
    return _shares(counts, profile.total)


@dataclass(frozen=True)
class Category:
    name: str
    patterns: tuple[str, ...]  # a kernel function's name, or a prefix ending in "*"
    explanation: str


def _category(name: str, patterns: str, explanation: str) -> Category:
    return Category(name, tuple(patterns.split()), explanation)


# Ordered: a frame is in the first category that matches it, so the specific come before the general.
# seccomp's BPF program (bpf_prog_*) needs no pattern: it runs under __seccomp_filter, and a sample
# counts in the category of its innermost categorized frame (category_of).
CATEGORIES: tuple[Category, ...] = (
    _category(
        "seccomp",
        "__seccomp_filter seccomp_run_filters __secure_computing seccomp_* __seccomp*",
        "every system call is checked against the container's seccomp filter (a BPF program) first",
    ),
    _category(
        "overlayfs copy-up",
        "ovl_copy_up* ovl_copy_*",
        "the first write to a file of an image layer copies the whole file up into the container's layer",
    ),
    _category(
        "overlayfs",
        "ovl_*",
        "file operations pass through the overlay filesystem, which looks names up in each image layer",
    ),
    _category(
        "FUSE",
        "fuse_* virtio_fs_*",
        "file operations go to a filesystem in user space (fuse-overlayfs, rootless containers) and back",
    ),
    _category(
        "container networking",
        "veth_* br_* nf_* __nf_* ipt_* ip6t_* nft_* iptable_* ipv4_conntrack*",
        "packets cross a virtual ethernet pair, a bridge and netfilter's NAT and connection tracking",
    ),
    _category(
        "cgroup accounting",
        "mem_cgroup_* __mem_cgroup_* memcg_* __memcg_* obj_cgroup_* css_* cgroup_*"
        " blkcg* __blkcg* blk_cgroup* throtl* blk_throtl*",
        "the kernel charges memory and I/O to the container's control group and enforces its limits",
    ),
    _category(
        "btrfs copy-on-write",
        "btrfs_cow_block __btrfs_cow_block btrfs_force_cow_block btrfs_csum* btrfs_lookup_csum*"
        " btrfs_alloc_tree_block btrfs_reserve_extent btrfs_cross_ref_exist btrfs_copy_root",
        "btrfs writes every changed block to a new place, and checksums what it reads and writes",
    ),
    _category(
        "filesystem",
        "btrfs_* ext4_* __ext4_* jbd2_* xfs_* f2fs_*",
        "the filesystem's own work: lookups, mapping file offsets to blocks, journaling",
    ),
    _category(
        "loop device",
        "loop_* lo_*",
        "a loop device turns each block I/O into a file I/O on the filesystem beneath it",
    ),
    _category(
        "device-mapper",
        "dm_* __dm_*",
        "device-mapper remaps each I/O (LVM, a thin pool such as the devicemapper storage driver's)",
    ),
    _category(
        "zram",
        "zram_* zs_* lz4* LZ4* lzo* zstd* ZSTD*",
        "a zram device compresses every page written to it and decompresses every page read, on the CPU",
    ),
    _category(
        "page cache and readahead",
        "filemap_* __filemap_* page_cache_* page_cache_ra_* ondemand_readahead force_page_cache_ra"
        " read_pages readahead_* folio_* __folio_*",
        "reads and writes go through the page cache, and readahead reads ahead of the application",
    ),
    _category(
        "data copies",
        "copy_page_to_iter copy_page_from_iter* _copy_to_iter _copy_from_iter* copy_user_* __copy_user*"
        " rep_movs_alternative copy_to_user* copy_from_user*",
        "data is copied between the kernel's buffers and the application's",
    ),
    _category(
        "block layer",
        "blk_* __blk_* bio_* __bio_* submit_bio* __submit_bio* dd_* bfq_* kyber_* elv_*",
        "requests are built, merged, scheduled and completed by the kernel's block layer",
    ),
    _category(
        "device driver",
        "nvme_* virtblk_* virtqueue_* vring_* vp_* scsi_* ata_* ahci_*",
        "the device's driver hands requests to the hardware (or the hypervisor) and takes completions",
    ),
    _category(
        "page faults",
        "asm_exc_page_fault exc_page_fault do_user_addr_fault handle_mm_fault __handle_mm_fault",
        "memory is mapped in on first touch (page faults)",
    ),
    _category(
        "scheduler",
        "schedule __schedule schedule_* try_to_wake_up ttwu_* pick_next_task* finish_task_switch*"
        " context_switch enqueue_task* dequeue_task* __wake_up*",
        "threads block, are woken and switched: more context switches",
    ),
    _category(
        "interrupts",
        " ".join(f"{prefix}*" for prefix in INTERRUPT_PREFIXES),
        "interrupts and softirqs: I/O completions, timers, packets",
    ),
    _category(
        "system calls",
        "entry_SYSCALL* do_syscall_64 x64_sys_call syscall_exit_to_user_mode*",
        "the system call entry and exit code itself: more calls, or dearer ones (tracing, mitigations)",
    ),
)
_EXPLANATIONS = {c.name: c.explanation for c in CATEGORIES}


def _matcher(patterns: Sequence[str]) -> Callable[[str], bool]:
    exact = frozenset(p for p in patterns if not p.endswith("*"))
    prefixes = tuple(p[:-1] for p in patterns if p.endswith("*"))
    return lambda name: name in exact or name.startswith(prefixes)


_MATCHERS = tuple((c.name, _matcher(c.patterns)) for c in CATEGORIES)


@lru_cache(maxsize=65536)
def categorize(frame: str) -> str | None:
    """The category of a kernel frame (``name_[k]``), or None: user-space frames have none."""
    if not frame.endswith(KERNEL_SUFFIX):
        return None
    # GCC's clones (.isra.0, .constprop.0, .part.0, .cold) are the same function.
    name = bare(frame).split(".", 1)[0]
    return next((category for category, matches in _MATCHERS if matches(name)), None)


def category_of(stack: str) -> str | None:
    """The category of the stack's innermost categorized frame: where the sample's time was spent.

    Not every category its frames touch: overlayfs calls ext4, which copies data, so counted inclusively
    overlayfs would own every file operation of a writable layer and say nothing of what it adds itself.
    seccomp's BPF program (``bpf_prog_*``, uncategorized) counts as seccomp, the frame that called it."""
    for frame in reversed(frames_of(stack)):
        name = categorize(frame)
        if name is not None:
            return name
    return None


def _category_counts(profile: Profile) -> dict[str, int]:
    counts: dict[str, int] = {}
    for stack, n in profile.stacks.items():
        name = category_of(stack)
        if name is not None:
            counts[name] = counts.get(name, 0) + n
    return counts


def by_category(profile: Profile) -> dict[str, float]:
    """Each category's share of the samples, a sample counted in its innermost category (``category_of``)."""
    return _shares(_category_counts(profile), profile.total)


@dataclass(frozen=True)
class FrameGrowth:
    """One frame's (or category's) share in a baseline and in another profile.

    ``q_value`` is the false-discovery-adjusted p-value of the change in share (Fisher's exact
    test on the samples in and out of the frame); with I/O counts, ``*_per_mio`` are samples per
    million I/Os and ``q_per_io`` tests their ratio (the exact conditional test of two Poisson
    rates). Samples taken close together are not independent, so both are somewhat optimistic:
    the thresholds below ask for a material change as well.
    """

    name: str
    base_samples: int
    other_samples: int
    base_share: float
    other_share: float
    q_value: float
    base_per_mio: float | None = None
    other_per_mio: float | None = None
    q_per_io: float | None = None

    @property
    def points(self) -> float:
        """Growth of the share in percentage points (other minus base)."""
        return 100 * (self.other_share - self.base_share)

    @property
    def significant(self) -> bool:
        return self.q_value < ALPHA and abs(self.points) >= MIN_POINTS

    @property
    def per_io_significant(self) -> bool:
        if self.q_per_io is None or self.base_per_mio is None or self.other_per_mio is None:
            return False
        low, high = sorted((self.base_per_mio, self.other_per_mio))
        return self.q_per_io < ALPHA and (low == 0 or high / low >= MIN_PER_IO_CHANGE)


def diff(base: Profile, other: Profile, ios_base: int | None = None, ios_other: int | None = None) -> list[FrameGrowth]:
    """Every frame of either profile, by growth of its inclusive share (points), largest first.

    Pass both I/O counts for the per-I/O view: shares alone hide a frame that grew while
    everything else grew too, samples per I/O do not.
    """
    counts = (_inclusive_counts(base, lambda f: f), _inclusive_counts(other, lambda f: f))
    return _growths(counts, (base.total, other.total), _ios(ios_base, ios_other))


def diff_categories(
    base: Profile, other: Profile, ios_base: int | None = None, ios_other: int | None = None
) -> list[FrameGrowth]:
    """As ``diff``, per category of ``CATEGORIES``, each sample in its innermost (``category_of``)."""
    counts = (_category_counts(base), _category_counts(other))
    return _growths(counts, (base.total, other.total), _ios(ios_base, ios_other))


def _ios(ios_base: int | None, ios_other: int | None) -> tuple[int, int] | None:
    if ios_base is None and ios_other is None:
        return None
    if ios_base is None or ios_other is None or ios_base <= 0 or ios_other <= 0:
        raise ValueError(f"the per-I/O view needs both I/O counts, positive: got {ios_base} and {ios_other}")
    return ios_base, ios_other


def _growths(
    counts: tuple[Mapping[str, int], Mapping[str, int]], totals: tuple[int, int], ios: tuple[int, int] | None
) -> list[FrameGrowth]:
    names = sorted(set(counts[0]) | set(counts[1]))
    if not names or 0 in totals:
        return []
    pairs = [(counts[0].get(n, 0), counts[1].get(n, 0)) for n in names]
    q_share = _adjusted([_share_p(b, o, totals) for b, o in pairs])
    q_io = _adjusted([_per_io_p(b, o, ios) for b, o in pairs]) if ios else [None] * len(names)
    growths = [
        FrameGrowth(
            name=name,
            base_samples=b,
            other_samples=o,
            base_share=b / totals[0],
            other_share=o / totals[1],
            q_value=q,
            base_per_mio=1e6 * b / ios[0] if ios else None,
            other_per_mio=1e6 * o / ios[1] if ios else None,
            q_per_io=qi,
        )
        for name, (b, o), q, qi in zip(names, pairs, q_share, q_io, strict=True)
    ]
    return sorted(growths, key=lambda g: (-g.points, g.name))


def _share_p(base: int, other: int, totals: tuple[int, int]) -> float:
    table = [[base, totals[0] - base], [other, totals[1] - other]]
    from scipy import stats  # here: scipy.stats takes 0.5-1 s to import, and only profiled runs test

    return float(stats.fisher_exact(table).pvalue)


def _per_io_p(base: int, other: int, ios: tuple[int, int]) -> float:
    # Under "the same samples per I/O", the other's samples among both are binomial with the
    # other's share of the I/Os as their probability.
    from scipy import stats

    return float(stats.binomtest(other, base + other, ios[1] / (ios[0] + ios[1])).pvalue)


def _adjusted(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg: hundreds of frames are tested at once, so 5% of them would pass by chance."""
    from scipy import stats

    return [float(q) for q in stats.false_discovery_control(np.asarray(p_values), method="bh")]


def explain(
    growths: Sequence[FrameGrowth],
    top: int = 10,
    labels: tuple[str, str] = ("natively", "in the container"),
    per_io: str = "samples per million I/Os",
) -> list[str]:
    """Plain-words lines for the changes that mean something (``significant`` or
    ``per_io_significant``), in the order given (``diff``'s: largest growth first), at most ``top``.
    ``per_io`` names the per-I/O unit: samples per million I/Os, or what the caller scaled the I/Os to mean."""
    named = [g for g in growths if g.significant or g.per_io_significant]
    return [_line(g, labels, per_io) for g in named[:top]]


def _amount(x: float) -> str:
    """Three significant digits, never in exponent form: 9950, 6.69, 0.0417."""
    return f"{x:.0f}" if x >= 100 else f"{x:.3g}"


def _line(growth: FrameGrowth, labels: tuple[str, str], per_io: str) -> str:
    base, other = labels
    # A frame is named with its category, whose explanation then ends the line.
    category = growth.name if growth.name in _EXPLANATIONS else categorize(growth.name)
    name = growth.name if category in (None, growth.name) else f"{growth.name} ({category})"
    text = (
        f"{name}: {100 * growth.base_share:.1f}% of the CPU samples {base}, "
        f"{100 * growth.other_share:.1f}% {other} ({growth.points:+.1f} points"
    )
    if growth.base_per_mio is not None and growth.other_per_mio is not None:
        text += f"; {_amount(growth.base_per_mio)} → {_amount(growth.other_per_mio)} {per_io}"
    text += ")"
    return f"{text}: {_EXPLANATIONS[category]}" if category else text
