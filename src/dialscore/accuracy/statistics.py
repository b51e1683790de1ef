"""The two statistics of the score report: the Wilson score interval of an observed rate and
the area under the ROC curve of a score against what happened. Pure functions."""

from __future__ import annotations

import math
from collections.abc import Iterable
from itertools import groupby
from operator import itemgetter

# The standard normal's 97.5th percentile: two-sided 95 % intervals.
Z_95 = 1.959963984540054


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval of ``successes / trials`` (E. B. Wilson, 1927); None for no
    trials. Unlike the normal approximation it stays within 0 and 1 and is not empty at 0 or
    at every trial a success, which is where small samples of connects often are."""
    if trials <= 0:
        return None
    if not 0 <= successes <= trials:
        raise ValueError(f"{successes} successes of {trials} trials")
    share = successes / trials
    z2 = z * z
    scale = 1 + z2 / trials
    centre = (share + z2 / (2 * trials)) / scale
    half = z * math.sqrt(share * (1 - share) / trials + z2 / (4 * trials * trials)) / scale
    # At 0 and at all successes one end is exactly the edge; rounding must not move it.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return low, high


def area_under_curve(outcomes: Iterable[tuple[float, bool]]) -> float | None:
    """The area under the ROC curve of a score against a yes/no outcome, as the Mann-Whitney
    statistic: the share of (yes, no) pairs in which the yes has the higher score, a tie
    counting half. None when there is no pair (every outcome the same, or none)."""
    ordered = sorted(outcomes, key=itemgetter(0))
    positives = sum(1 for _, happened in ordered if happened)
    negatives = len(ordered) - positives
    if positives == 0 or negatives == 0:
        return None
    # In halves, to stay in integers: 2 per pair won, 1 per pair tied.
    halves = 0
    negatives_below = 0
    for _, group in groupby(ordered, key=itemgetter(0)):
        flags = [happened for _, happened in group]
        yes = sum(flags)
        no = len(flags) - yes
        halves += 2 * yes * negatives_below + yes * no
        negatives_below += no
    return halves / (2 * positives * negatives)
