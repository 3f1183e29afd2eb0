"""What a run found, a line per layer: each layer against the one beneath it, in plain words.

The results table gives every cell against the run's baseline. A reader wants
what each layer costs: a container placement against native on the same
filesystem and device, a filesystem against the raw device under it. Each such
pair is one of the run's comparisons (analysis/comparisons.py: paired by round,
judged with all the others at once), and gets one of three verdicts, read off
its interval corrected over the run's comparisons (analysis/verdicts.py): ≈ when
the whole interval lies inside the material band, a difference when otherwise it
lies wholly below or above ×1, undecided else, always with that interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from layerbench.analysis import comparisons
from layerbench.analysis.comparisons import IOZONE_OP, Family, reference
from layerbench.analysis.overhead import CellResult
from layerbench.analysis.stats import Ratio
from layerbench.analysis.verdicts import DIFFERENT, EQUIVALENT, MATERIAL, UNDECIDED, bounds_text, level_text, shown
from layerbench.store.read import RunData

__all__ = ["DOUBTS", "IOZONE_OP", "MATERIAL", "Finding", "of_run", "reference", "summary_lines"]

# Flags that say a number may not be the layer's (a cache answered, the host was busy, the baseline failed):
# they mark a finding. "noisy" describes the measurement, not its truth: the interval already holds it.
DOUBTS = frozenset({"faster-than-physics", "device-accounting", "contended", "not-comparable", "volatile-mount"})
# The CPU ran out while the device idled: the number is the CPU's, so a claim about storage from it is at
# most of medium confidence and says so (analysis/advice.py).
CPU_BOUND = "bottleneck"


@dataclass(frozen=True)
class Finding:
    subject: str  # the layer judged, as its stack's label
    reference: str  # the stack beneath it that it is judged against
    workload: str
    ratio: Ratio  # subject / reference, paired by round
    verdict: str  # "slower" | "faster" | "equivalent" (≈: its interval inside the band) | "undecided"
    flagged: bool  # a doubt (DOUBTS) was flagged on the subject or its reference
    note: str = ""  # why it has no interval (one round, a value not above zero, no spread), or that it is unpaired
    cpu_bound: tuple[str, ...] = ()  # the subject's or reference's stack, where `bottleneck` flagged it
    confidence: float = 0.95  # of its interval: the run's (a precision run's is wider)
    q_value: float = float("nan")  # p times K/|S| over the run's comparisons: below α where the interval excludes ×1

    @property
    def change_pct(self) -> float:
        return 100 * (self.ratio.ratio - 1)


def of_run(data: RunData, results: Sequence[CellResult], family: Family | None = None) -> list[Finding]:
    """Every cell that has a layer beneath it in this run, judged against that layer's cell; ``family``:
    the run's comparisons judged once (``comparisons.of_run``), computed here unless given."""
    family = family or comparisons.of_run(data)
    labels = {c.cell_id: c.stack_label for c in data.cells}
    flagged = {r.cell_id for r in results if any(f.name in DOUBTS for f in r.flags)}
    bound = {r.cell_id for r in results if any(f.name == CPU_BOUND for f in r.flags)}
    found = []
    for p in family.layers:
        j = family.judged[(p.subject, p.reference, p.metric)]
        if j.ratio.ratio != j.ratio.ratio:
            continue
        doubted = bool({p.subject, p.reference} & flagged)
        cpu = tuple(labels[c] for c in (p.subject, p.reference) if c in bound)
        note = j.note or ("" if j.paired else "unpaired: the rounds do not pair")
        found.append(
            Finding(
                labels[p.subject], labels[p.reference], p.name, j.ratio, j.verdict, doubted, note, cpu,
                family.confidence, j.q_value,
            )
        )  # fmt: skip
    return found


def summary_lines(findings: Sequence[Finding]) -> list[str]:
    """One line per layer: its material differences, then where it is shown ≈, then what is undecided,
    each with its interval."""
    by_subject: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        by_subject.setdefault((f.subject, f.reference), []).append(f)
    return [_line(subject, ref, fs) for (subject, ref), fs in by_subject.items()]


def _line(subject: str, ref: str, fs: list[Finding]) -> str:
    ordered = [f for v in (*DIFFERENT, EQUIVALENT, UNDECIDED) for f in fs if f.verdict == v]
    return f"{subject} vs {ref}: " + "; ".join(_part(f) for f in ordered)


def _part(f: Finding) -> str:
    """``-12% on RR (×0.88, 95% CI 0.78-0.99)``, ``≈ on RW (×1.01, 95% CI 0.98-1.03)``, ``undecided on SW
    (×1.00, 95% CI 0.46-2.15)``, ``undecided on SW (×0.91, one round)``, and the finding's doubts."""
    said = shown(f.verdict, f.ratio, f.confidence, f.note)
    word, _, rest = said.partition(" (")
    text = f"{word} on {f.workload} ({rest}" if rest else f"{word} on {f.workload}"
    if f.note and f.ratio.ci_low == f.ratio.ci_low:
        text += f" [{f.note}]"
    if f.cpu_bound:
        text += " [CPU-bound]"
    return text + (" [flagged]" if f.flagged else "")


def interval_text(f: Finding) -> str:
    """The finding's interval as evidence shows it: ``95% CI 0.78-0.99``, or why there is none."""
    r = f.ratio
    return f"{level_text(f.confidence)} {bounds_text(r.ci_low, r.ci_high)}" if r.ci_low == r.ci_low else f.note
