"""What to do about what a run found: recommendations, each with the cells and numbers behind it.

Advice is drawn only from findings (analysis/findings.py: a layer against the
one beneath it, paired by round) whose verdict names a difference, as the run
printed it (corrected over all its comparisons: no rule here judges a finding
again, so none brings back a difference the correction demoted), from checks
that flagged a trial, and from profiles where a run has them. Each
recommendation carries its evidence lines and a confidence: high when every
interval behind it lies beyond the material band and nothing flagged it,
medium when an interval reaches into that band or a cell behind it was
CPU-bound (`bottleneck`: the number is the CPU's, and the advice says so),
low when a doubt was flagged. Advice that needs a comparison the run lacks is
a suggestion to measure it, not a recommendation. What the data cannot decide
is said apart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from layerbench.analysis.explain import Pair
from layerbench.analysis.findings import Finding, interval_text
from layerbench.analysis.overhead import CellResult
from layerbench.analysis.verdicts import DIFFERENT, EQUIVALENT, MATERIAL, UNDECIDED
from layerbench.spec.models import StackSpec, Workload
from layerbench.spec.traits import traits
from layerbench.workloads import registry
from layerbench.workloads.fio_kind import WRITES


@dataclass(frozen=True)
class Advice:
    topic: str  # placement, filesystem, tuning, trap, host, layer, explanation
    text: str
    evidence: tuple[str, ...]
    confidence: str  # "high" | "medium" | "low"
    measure: bool = False  # a suggestion to measure what the run lacks, not a recommendation


@dataclass(frozen=True)
class Advised:
    advice: list[Advice]
    undecided: list[str] = field(default_factory=list)  # what the data cannot decide, and why
    chance: list[str] = field(default_factory=list)  # material differences as many as chance would give: not acted on


@dataclass(frozen=True)
class Evidence:
    """What the rules read: the run's findings by their stacks, and its per-cell results."""

    findings: Sequence[Finding]
    stacks: dict[str, StackSpec]  # a stack's label → its spec
    results: Sequence[CellResult]
    profiled: Sequence[Pair] = ()  # findings whose two cells were profiled (analysis/explain.py)
    workloads: dict[str, Workload] = field(default_factory=dict)  # a cell's workload name → the workload
    # What would decide each open comparison (analysis/decisions.py), by (subject, reference, workload) labels
    deciding: dict[tuple[str, str, str], str] = field(default_factory=dict)


Rule = Callable[[Evidence], list[Advice]]


def advise(evidence: Evidence) -> Advised:
    kept, chance = discoveries(evidence.findings)
    advice = [a for rule in RULES for a in rule(evidence)]
    rank = {"high": 0, "medium": 1, "low": 2}
    # What to do first, most certain first; then suggestions to measure; then the explanations, which say why.
    ordered = sorted(advice, key=lambda a: (a.topic == "explanation", a.measure, rank[a.confidence]))
    why = {id(p.finding): f"; its profile: {p.why[0]}" for p in evidence.profiled if p.why}
    said = [f"{line(f)}: p={f.ratio.p_value:.3f}, q={f.q_value:.3f}{why.get(id(f), '')}" for f in chance]
    apart = {id(f) for f in chance}  # said once, as chance, not again as undecided
    return Advised(ordered, undecided([f for f in kept if id(f) not in apart], evidence.deciding), said)


def discoveries(findings: Sequence[Finding]) -> tuple[list[Finding], list[Finding]]:
    """The findings as the run judged them, and the material ones significant on their own but whose interval,
    corrected over all of the run's comparisons, holds ×1: a run that compares 160 pairs names about eight by
    chance alone, so those are not acted on. Nothing is judged again here."""
    chance = [
        f for f in findings if f.verdict not in DIFFERENT and f.ratio.p_value < 1 - f.confidence and _material_size(f)
    ]
    return list(findings), chance


def _material_size(f: Finding) -> bool:
    r = f.ratio.ratio
    return r == r and (r <= 1 / (1 + MATERIAL) or r >= 1 + MATERIAL)


def line(f: Finding) -> str:
    """A finding as evidence: the pair, the ratio, its interval (or why none), what marks it."""
    r = f.ratio
    text = f"{f.subject} vs {f.reference} on {f.workload}: ×{r.ratio:.2f} ({interval_text(f)})"
    if f.cpu_bound:
        text += " [CPU-bound]"
    return text + (" [flagged]" if f.flagged else "")


def confidence(fs: Sequence[Finding]) -> str:
    """high: every interval lies wholly beyond the material band, nothing flagged, no cell CPU-bound;
    low: a doubt flagged."""
    if any(f.flagged for f in fs):
        return "low"
    band = 1 + MATERIAL
    clear = all(f.ratio.ci_high <= 1 / band or f.ratio.ci_low >= band for f in fs)
    return "high" if clear and not any(f.cpu_bound for f in fs) else "medium"


def cpu_said(fs: Sequence[Finding]) -> str:
    """What a claim from CPU-bound cells must say: the CPU, not storage, was the limit."""
    stacks = list(dict.fromkeys(s for f in fs for s in f.cpu_bound))
    if not stacks:
        return ""
    where = stacks[0] if len(stacks) == 1 else f"{len(stacks)} of its stacks"
    return f" (the CPU, not storage, was the limit in {where}: `bottleneck`; this is what the layer costs the CPU)"


def _within_band(f: Finding) -> bool:
    """Shown ≈: the whole interval inside ±MATERIAL, under the run's correction (analysis/verdicts.py)."""
    return f.verdict == EQUIVALENT


def material(f: Finding) -> bool:
    """Named, and at least MATERIAL: a smaller difference may be named where its interval excludes ×1, but it
    does not survive a rerun here (issue 17), so no advice acts on it."""
    return f.verdict in DIFFERENT and _material_size(f)


def _is_write(ev: Evidence, workload: str) -> bool:
    """Whether a finding's workload writes: fio's rw, IOzone's operation ("iozone randwrite"); by name
    where the run did not say (a job file, a personality)."""
    name, _, operation = workload.partition(" ")
    w = ev.workloads.get(name)
    said = registry.of(w).writes(w, operation) if w is not None else None
    return said if said is not None else any(part in workload.lower() for part in WRITES)


def writable_layer(ev: Evidence) -> list[Advice]:
    """A writable layer slower than native; beside it, a volume (or bind mount) on the same filesystem."""
    by_stack: dict[str, list[Finding]] = {}
    beside: dict[tuple[object, ...], list[Finding]] = {}  # a volume's or bind mount's findings, by what it shares
    for f in ev.findings:
        s = ev.stacks.get(f.subject)
        if s is not None and s.placement.kind == "writable-layer" and f.verdict == "slower":
            by_stack.setdefault(f.subject, []).append(f)
        elif s is not None and s.placement.kind in ("volume", "bind"):
            beside.setdefault(_sharing(s, f), []).append(f)
    out = []
    for subject, fs in by_stack.items():
        s = ev.stacks[subject]
        twins = [g for f in fs for g in beside.get(_sharing(s, f), [])]
        costs = ", ".join(f"{-100 * (f.ratio.ratio - 1):.0f}% on {f.workload}" for f in fs)
        what = "write-heavy data" if all(_is_write(ev, f.workload) for f in fs) else "data"
        layer = f"{s.engine.driver or s.engine.kind}'s writable layer on {s.filesystem.type} costs {costs}"
        evidence = tuple(line(f) for f in fs) + tuple(line(g) for g in twins)
        if not twins:
            # Whether a volume avoids the cost here is a comparison this run did not make: measure it.
            text = (
                f"Measure a volume beside the writable layer: {layer}{cpu_said(fs)}, and this run has no volume on "
                f"that filesystem to say whether one avoids it (add placement: volume to the spec)"
            )
            out.append(Advice("placement", text, evidence, "low", measure=True))
            continue
        text = f"Put {what} on a volume, not the container's writable layer: {layer}{cpu_said(fs)}"
        out.append(Advice("placement", text, evidence, _strongest(fs)))
    return out


def _sharing(s: StackSpec, f: Finding) -> tuple[object, ...]:
    """What a writable layer and a volume beside it share: engine, filesystem, device, the native cell they
    are judged against, the workload."""
    return (s.engine, s.filesystem, s.device, f.reference, f.workload)


def _strongest(fs: Sequence[Finding]) -> str:
    """A claim that a layer costs something is as strong as its strongest finding."""
    levels = [confidence([f]) for f in fs]
    return next(level for level in ("high", "medium", "low") if level in levels)


def filesystems(ev: Evidence) -> list[Advice]:
    """Native filesystems against the raw device: where one costs materially more than another."""
    by_workload: dict[str, list[tuple[Finding, StackSpec]]] = {}
    for f in ev.findings:
        s = ev.stacks.get(f.subject)
        if s is not None and not traits(s.engine.kind).layer and s.placement.kind == "host-dir" and s.server is None:
            by_workload.setdefault(f.workload, []).append((f, s))
    out = []
    for workload, fs in by_workload.items():
        # Only verdicts the run printed as decided: a difference the correction demoted stays undecided here.
        decided = [(f, s) for f, s in fs if f.verdict in (*DIFFERENT, EQUIVALENT)]
        if len(decided) < 2:
            continue
        best, worst = max(decided, key=lambda p: p[0].ratio.ratio), min(decided, key=lambda p: p[0].ratio.ratio)
        apart = best[0].ratio.ci_low > worst[0].ratio.ci_high  # the intervals do not overlap
        named = material(best[0]) or material(worst[0])
        if not apart or not named or best[0].ratio.ratio / worst[0].ratio.ratio < 1 + MATERIAL:
            continue
        b, w = best[1].filesystem.type, worst[1].filesystem.type
        text = (
            f"For {workload}, {b} keeps ×{best[0].ratio.ratio:.2f} of the raw device and {w} ×"
            f"{worst[0].ratio.ratio:.2f}: prefer {b} here{cpu_said([best[0], worst[0]])}"
        )
        if w == "btrfs" and _is_write(ev, workload):
            text += (
                "; if you keep btrfs, turn copy-on-write off for database and image files (chattr +C on their empty"
                " directory, or mount -o nodatacow): each small write otherwise rewrites a path of the tree"
            )
        out.append(Advice("filesystem", text, (line(best[0]), line(worst[0])), confidence([best[0], worst[0]])))
    return out


def tunings(ev: Evidence) -> list[Advice]:
    """Seed 001's tunings against Docker's defaults."""
    out = []
    for f in ev.findings:
        s = ev.stacks.get(f.subject)
        if s is None or s.tuning == "default" or not material(f):
            continue
        gain = 100 * (f.ratio.ratio - 1)
        if s.tuning == "seccomp-unconfined" and f.verdict == "faster":
            text = (
                f"seccomp costs {100 * (1 - 1 / f.ratio.ratio):.0f}% of {f.workload} here (Docker's default profile"
                f" against none): give this workload a narrower profile that allows its syscalls without filtering,"
                f" rather than `unconfined`, which drops a security boundary"
            )
        elif f.verdict == "faster":
            text = f"Tuning {s.tuning} gains {gain:+.0f}% on {f.workload} over Docker's defaults: worth setting"
        else:
            text = f"Tuning {s.tuning} costs {gain:+.0f}% on {f.workload} against Docker's defaults: leave it off"
        out.append(Advice("tuning", text + cpu_said([f]), (line(f),), confidence([f])))
    return out


def other_layers(ev: Evidence) -> list[Advice]:
    """A container or VM slower than native where no rule above says more (a volume, a database server)."""
    by_stack: dict[tuple[str, str], list[Finding]] = {}
    for f in ev.findings:
        s = ev.stacks.get(f.subject)
        if s is None or not traits(s.engine.kind).layer or s.tuning != "default" or f.verdict != "slower":
            continue
        if s.placement.kind != "writable-layer":  # the placement rule speaks for writable layers
            by_stack.setdefault((f.subject, f.reference), []).append(f)
    out = []
    for (subject, reference), fs in by_stack.items():
        costs = ", ".join(f"{-100 * (f.ratio.ratio - 1):.0f}% on {f.workload}" for f in fs)
        text = f"{subject} costs {costs} against {reference}{cpu_said(fs)}: " + _remedy(ev, subject, reference)
        out.append(Advice("layer", text, tuple(line(f) for f in fs), _strongest(fs)))
    return out


# What to try when a profile names the kind of work a container added (analysis/flame.py's categories).
REMEDIES = {
    "container networking": "the bridge and NAT took the CPU: `--network host` (tuning: host-network) takes them out",
    "seccomp": "seccomp's filter took the CPU: a narrower profile for this workload, not `unconfined`",
    "cgroup accounting": "the cgroup's accounting took the CPU: check the container's limits before the storage",
}


def _remedy(ev: Evidence, subject: str, reference: str) -> str:
    grown = {
        g.name
        for p in ev.profiled
        if (p.finding.subject, p.finding.reference) == (subject, reference)
        for g in p.growths
        if g.points > 0 and (g.significant or g.per_io_significant)
    }
    said = [text for name, text in REMEDIES.items() if name in grown]
    return "; ".join(said) if said else "where that matters, run it there"


TRAPS = {
    "faster-than-physics": "its numbers are a cache's, not the device's",
    "volatile-mount": "its fsync is a no-op: writes it calls durable are not",
    "device-accounting": "the device did not see the bytes the tool says it moved",
}


def traps(ev: Evidence) -> list[Advice]:
    """Cells whose numbers are not the storage's: say so before anyone acts on them, once per trap and
    workload (a personality that reads through the page cache does so on every stack)."""
    found: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for r in ev.results:
        for check in r.flags:
            if check.name in TRAPS:
                found.setdefault((check.name, r.workload), []).append((r.stack_label, check.detail))
    out = []
    for (name, workload), cells in found.items():
        what = TRAPS[name]
        if name == "faster-than-physics" and any("fuse-overlayfs" in stack for stack, _ in cells):
            what = "fuse-overlayfs ignores O_DIRECT here: " + what
        where = cells[0][0] if len(cells) == 1 else f"{len(cells)} stacks"
        evidence = tuple(f"{stack}: {name}: {detail}" for stack, detail in cells)
        out.append(Advice("trap", f"Do not act on {workload} on {where}: {what}", evidence, "high"))
    return out


def host(ev: Evidence) -> list[Advice]:
    """A busy host, or a container's own CPU limit, decided the number rather than storage."""
    busy = [(r, c) for r in ev.results for c in r.flags if c.name == "contended"]
    out = []
    if busy:
        text = f"Rerun {len(busy)} cell(s) on a quiet host: other processes used the CPU during their trials"
        evidence = tuple(f"{r.stack_label} {r.workload}: {c.detail.split(': the host')[0]}" for r, c in busy)
        out.append(Advice("host", text, evidence, "medium"))
    for r in ev.results:
        for check in r.flags:
            if check.name == "bottleneck" and "of its" in check.detail:
                text = (
                    f"The container's CPU limit, not storage, limited {r.stack_label} {r.workload}: raise its CPU"
                    " share before blaming the disk"
                )
                out.append(Advice("host", text, (f"bottleneck: {check.detail}",), "medium"))
    return out


def explanations(ev: Evidence) -> list[Advice]:
    """Why a layer is slower or faster where both cells were profiled: what took more of the CPU, or of
    the time waiting for one. One piece of advice per pair of cells, citing its material findings."""
    by_cells: dict[tuple[str, str], list[Pair]] = {}
    for p in ev.profiled:
        if p.why and material(p.finding):
            by_cells.setdefault((p.subject, p.reference), []).append(p)
    out = []
    for ps in by_cells.values():
        f, fs = ps[0].finding, [p.finding for p in ps]
        verdicts = " and ".join(dict.fromkeys(g.verdict for g in fs))
        workload = f.workload.split(" ")[0]
        text = f"Why {f.subject} is {verdicts} than {f.reference} on {workload}: " + "; ".join(ps[0].why)
        out.append(Advice("explanation", text, tuple(line(g) for g in fs), _strongest(fs)))
    return out


def seccomp_profile(ev: Evidence) -> list[Advice]:
    """Seed 001's question, asked of the profile: what the container's seccomp filter costs here."""
    out, seen = [], set()
    for p in ev.profiled:
        g = next((g for g in p.growths if g.name == "seccomp"), None)
        if g is None or not (g.significant or g.per_io_significant) or g.points <= 0 or p.subject in seen:
            continue
        seen.add(p.subject)  # IOzone's operations share their cells' profiles
        f, share = p.finding, 100 * g.other_share
        said = f"seccomp: {g.base_samples} CPU samples beneath, {g.other_samples} in {f.subject} ({share:.1f}%)"
        where = f"seccomp filtering takes {share:.1f}% of the CPU in {f.subject} on {f.workload}"
        if share < 100 * MATERIAL:
            text = f"{where}: too little to act on, keep Docker's default profile"
        elif f.verdict == "slower":
            text = f"{where}, part of its {-100 * (f.ratio.ratio - 1):.0f}% cost: a narrower profile, not `unconfined`"
        elif _within_band(f):
            text = f"{where}, and throughput shows no material cost: keep Docker's default profile"
        else:
            text = f"{where}; whether throughput pays for it, this run cannot tell"
        out.append(Advice("tuning", text, (said, line(f)), "medium"))  # one profiled trial a side
    return out


RULES: tuple[Rule, ...] = (
    traps,
    writable_layer,
    filesystems,
    tunings,
    other_layers,
    host,
    explanations,
    seccomp_profile,
)


def undecided(findings: Sequence[Finding], deciding: Mapping[tuple[str, str, str], str] | None = None) -> list[str]:
    """Pairs the data cannot decide, each with its interval (or why it has none) and what would decide it
    (``deciding``: analysis/decisions.py's advice, where it has some)."""
    said = deciding or {}
    return [
        f"{line(f)}: {said.get((f.subject, f.reference, f.workload)) or _why_undecided(f)}"
        for f in findings
        if f.verdict == UNDECIDED
    ]


def _why_undecided(f: Finding) -> str:
    """An undecided interval holds ×1 and reaches out of the band (analysis/verdicts.py reads the verdict off
    it: inside the band would be ≈, wholly off ×1 a difference), so only whether it has one is left to say."""
    if f.ratio.ci_low != f.ratio.ci_low:
        return "no interval, so nothing decided (more repetitions)"
    return "holds both no difference and a material one (more repetitions)"
