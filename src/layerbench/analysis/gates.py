"""Regression gates: which comparisons of two runs are worse than a pipeline allows.

A gate adds no statistics: it reads the verdicts analysis/verdicts.py gave every comparison at once
(read off each one's interval, corrected over the family) and keeps those that moved the wrong way by at
least the allowed amount. Amounts are on the same log scale as the verdicts' material band,
so they are symmetric: "20% slower" is a throughput ratio B/A at or below 1/1.20 (each operation takes
at least 20% longer), "20% higher" a ratio at or above 1.20. A gate below ``MATERIAL`` would fail builds on
differences that do not survive a rerun here, so none is accepted (``check_amount``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from layerbench.analysis.compare import Comparison
from layerbench.analysis.verdicts import FASTER, MATERIAL, SLOWER


@dataclass(frozen=True)
class Gate:
    """How much worse B may be than A: ``slower`` for throughput (the ratio falls), ``faster`` for costs such
    as latency (the ratio rises); fractions (0.05 is 5%), None for no gate that way."""

    slower: float | None = None
    faster: float | None = None

    @property
    def active(self) -> bool:
        return self.slower is not None or self.faster is not None


@dataclass(frozen=True)
class Breach:
    comparison: Comparison
    why: str  # e.g. "iops ×0.180 (-82%), below ×0.667 (--fail-if-slower 50%)"


def check_amount(amount: float) -> str | None:
    """Why ``amount`` cannot be a gate, or None."""
    if not math.isfinite(amount) or amount <= 0:
        return "must be a positive percentage"
    if amount < MATERIAL - 1e-12:
        return (
            f"is below {MATERIAL:.0%}, the material band (smaller differences do not survive a rerun on a "
            "real host); use 5% or more"
        )
    return None


def breaches(rows: Sequence[Comparison], gate: Gate) -> list[Breach]:
    """The comparisons judged different the wrong way, by at least the gate's amount."""
    out = []
    for c in rows:
        r = c.ratio.ratio
        if gate.slower is not None and c.verdict == SLOWER and math.log(r) <= -math.log1p(gate.slower) + 1e-12:
            limit = f"below ×{1 / (1 + gate.slower):.3f} (--fail-if-slower {gate.slower:.0%})"
            out.append(Breach(c, f"{c.metric} ×{r:.3f} ({r - 1:+.0%}), {limit}"))
        elif gate.faster is not None and c.verdict == FASTER and math.log(r) >= math.log1p(gate.faster) - 1e-12:
            limit = f"above ×{1 + gate.faster:.3f} (--fail-if-faster {gate.faster:.0%})"
            out.append(Breach(c, f"{c.metric} ×{r:.3f} ({r - 1:+.0%}), {limit}"))
    return out
