"""Where a budget run looks at each comparison: a fixed schedule of round counts, and the share of the error
rate each look spends.

A comparison of a budget run is judged only at the round counts in ``LOOKS``, each at its own share of α
(``weight``), the shares summing to one. Whatever made the run stop (everything decided, the budget spent,
Ctrl-C, a resume that ran more rounds) and however its rounds were given out, the interval reported for a
comparison is one of its looks' intervals, and by the union bound the chance that any of them misses is at
most the sum of the shares: α. That is the group-sequential idea (Pocock; Lan and DeMets' spending of α over
looks), with the looks fixed in advance by round count rather than by calendar, so a run that gives one
comparison more rounds than another keeps each one's guarantee. Rounds past the last look are kept and used
at the next look.

Why not a confidence sequence, valid at every round (analysis/anytime.py, this module's predecessor for
verdicts)? At the few rounds a quick run has, its boundary is far wider than a t quantile at the same α
(26.6 standard errors against 5.0 at four rounds for one of 24 comparisons: t at that look's share of α, on
the degrees of freedom the run's variances lend each other, analysis/verdicts.py), because it pays for every
round it might stop at and for not knowing the variance. A schedule that looks about every 25% more rounds
pays for some twenty looks instead, and the decreasing shares put more of α where most comparisons are
decided: the first looks.
"""

from __future__ import annotations

import math
from bisect import bisect_right

import numpy as np

# Round counts at which a comparison is judged: every one while rounds are few, then about 25% apart.
LOOKS = (2, 3, 4, 5, 6, 8, 10, 12, 15, 19, 24, 30, 38, 48, 60, 76, 96, 120, 150, 190, 240, 300, 380, 480, 600, 760)
LOOKS += (1000,)  # the cap on rounds (Trials.repetitions)
# The i-th look's share of α: falling as 1/√(i+1), summing to one over the schedule.
_RAW = tuple(1 / math.sqrt(i + 1) for i in range(len(LOOKS)))
SHARES = tuple(w / sum(_RAW) for w in _RAW)


def last(rounds: int) -> int:
    """The last look at or before ``rounds`` paired rounds: how many of them a verdict is read from (0: none)."""
    i = bisect_right(LOOKS, rounds)
    return LOOKS[i - 1] if i else 0


def shares(looks: np.ndarray) -> np.ndarray:
    """The share of α each round count's look spends (NaN where it is not a look)."""
    index = np.searchsorted(LOOKS, np.nan_to_num(looks, nan=-1.0))
    on = (index < len(LOOKS)) & (np.take(LOOKS, np.minimum(index, len(LOOKS) - 1)) == looks)
    return np.where(on, np.take(SHARES, np.minimum(index, len(LOOKS) - 1)), np.nan)
