"""Checks over a run's trials: noise, a cell not beneath its baseline, a result faster than physics allows.

Pure functions: numbers in, a Check (name, status, plain-language detail) out.
A flag never deletes a result; it tells the reader why not to trust it.
"""

from __future__ import annotations

from layerbench.records.checks import Check
from layerbench.spec.devices import device_traits
from layerbench.spec.models import StackSpec
from layerbench.spec.traits import traits

NOISY_CV = 0.10


def noisy(cv: float, n: int, threshold: float = NOISY_CV) -> Check:
    if n < 2:
        return Check("noisy", "skip", "one trial: no spread to judge; raise trials.repetitions")
    if cv <= threshold:
        return Check("noisy", "pass", f"CV {cv:.1%} over {n} trials")
    return Check(
        "noisy",
        "flag",
        f"CV {cv:.1%} over {n} trials: the host is noisy. Raise trials.repetitions or the runtime, "
        "use a steadier device (zram) for relationships, and keep other work off the machine.",
    )


def layers(stack: StackSpec) -> int:
    """How many layers sit between a workload and its device: each can only cost, never add, speed."""
    count = (stack.filesystem.type != "none") + traits(stack.engine.kind).layer
    count += stack.placement.kind == "writable-layer"  # the storage driver (overlay) over the filesystem
    # the host's page cache under a file-backed device (a loop's) without direct I/O
    count += device_traits(stack.device.kind).file_backed and not stack.device.direct_io
    return count


def not_beneath(cell: StackSpec, base: StackSpec) -> str | None:
    """Why ``base`` is no physical bound for ``cell``, or None when it is.

    A bound is the same storage (device and filesystem, or the raw device under the cell's
    filesystem) reached through fewer layers, by as many servers, under no limit the cell lacks:
    then the cell cannot beat it without a cache answering. Anything else may beat it honestly:
    four database instances together beat one, xfs may beat ext4, an unlimited cell a limited one.
    """
    device = ("kind", "size", "path")
    if any(getattr(cell.device, f) != getattr(base.device, f) for f in device):
        return f"another device ({base.device.label()} against {cell.device.label()})"
    if base.filesystem.type != "none" and base.filesystem != cell.filesystem:
        return f"another filesystem ({base.filesystem.label()} against {cell.filesystem.label()})"
    if (base.server, base.instances) != (cell.server, cell.instances):
        return f"{base.instances} instance(s) against {cell.instances}: more servers may add throughput"
    count = (base.clients.count if base.clients else 1, cell.clients.count if cell.clients else 1)
    if count[0] != count[1]:
        return f"{count[0]} client(s) against {count[1]}: more clients may add throughput"
    if not set(base.limits.model_dump(exclude_none=True).items()) <= set(
        cell.limits.model_dump(exclude_none=True).items()
    ):
        return "it runs under limits this cell does not have"
    if layers(base) >= layers(cell):
        return "it has as many layers as this cell or more, so nothing says it must be faster"
    return None


# With one trial there is no interval; this far above the baseline is suspect anyway.
SUSPECT_SINGLE_RATIO = 1.5
# A cell's mean this far above the best trial its baseline had in the run is suspect whatever its interval:
# a steady host's trials stay within NOISY_CV of each other, so a layer above the device that beats the
# device's best by more cannot be honest.
BEYOND_BEST = 1 + NOISY_CV


def faster_than_baseline(
    ratio: float,
    ci_low: float,
    n: tuple[int, int],
    baseline_label: str,
    touches_device: bool,
    not_a_bound: str | None = None,
    over_best: float = float("nan"),
) -> Check:
    """A cell faster than a baseline beneath it (``not_beneath``) is suspect when both hit the device.

    ``n``: the cell's and the baseline's trials; ``over_best``: the cell's mean over the best trial of its
    baseline in this run. Flagged when the interval lies above ×1, or when the point estimate beats the
    baseline's best trial by more than BEYOND_BEST (two to four trials give intervals wide enough to hide a
    ×2 from the first test). Without an interval (one trial, or a baseline whose own interval includes
    zero) and one baseline trial, the bare ratio is judged against ``SUSPECT_SINGLE_RATIO``.
    """
    name = "faster-than-physics"
    if not_a_bound is not None:
        return Check(name, "skip", f"{baseline_label} is no bound for this cell: {not_a_bound}")
    if ratio != ratio:  # NaN: one side has no results
        return Check(name, "skip", f"no ratio to {baseline_label}")
    if not touches_device:
        return Check(name, "pass", f"×{ratio:.2f} {baseline_label}: it never touches the device, so it may be faster")
    why = "a layer above the device cannot add speed, so a cache or an unwritten file probably answered"
    if ci_low == ci_low and ci_low > 1.0:
        return Check(name, "flag", f"faster than {baseline_label} beyond its 95% CI (ratio ≥ {ci_low:.2f}): {why}.")
    if n[1] >= 2 and over_best == over_best and over_best > BEYOND_BEST:
        return Check(
            name,
            "flag",
            f"its mean is ×{over_best:.2f} the best of {n[1]} trials {baseline_label} had in this run "
            f"(ratio ×{ratio:.2f}): {why}.",
        )
    beaten = f"nor its mean beyond the best of {n[1]} trials {baseline_label} had in this run"
    if ci_low == ci_low:
        best = f", {beaten}" if n[1] >= 2 and over_best == over_best else ""
        return Check(name, "pass", f"not faster than {baseline_label} beyond its 95% CI{best}")
    if n[1] >= 2 and over_best == over_best:
        return Check(name, "pass", f"no interval, {beaten}")
    if min(n) == 1:
        no_interval, remedy = "in a single trial", "Run 3+ repetitions to tell which."
    else:
        no_interval = f"over {n[0]} and {n[1]} trials, whose ratio has no interval"
        remedy = "Steady the host or raise trials.repetitions to tell which."
    if ratio < SUSPECT_SINGLE_RATIO:
        return Check(name, "skip", f"×{ratio:.2f} {baseline_label} {no_interval}: no interval to judge")
    return Check(name, "flag", f"×{ratio:.2f} {baseline_label} {no_interval}: {why}, or the host is noisy. {remedy}")
