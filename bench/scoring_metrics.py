"""The figures ``scoring_eval.py`` judges the engine by, in plain Python (no numpy needed).

Every figure is against the later calls: each later call is one Bernoulli outcome of the
number it was made to, for the contact that carries it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from scoring_worlds import SimContact, SimNumber

TIERS = ("p1", "p2", "p3", "na")
TARGETS: dict[str, tuple[str, Callable[[float], bool]]] = {
    "p1": (">= 20 %", lambda r: r >= 0.20),
    "p2": ("4-20 %", lambda r: 0.04 <= r < 0.20),
    "p3": ("< 4 %", lambda r: r < 0.04),
    "na": ("< 0.5 %", lambda r: r < 0.005),
}
# D29: the engine's AUC within this of the bound's (scoring_bound.py), its bestPhone share of
# the oracle's lift within this of the bound's pick's; and every tier in band (TARGETS).
AUC_MARGIN = 0.01
LIFT_MARGIN = 0.03
# The engine's ordering: na lowest, then p3, p2, p1; its probability within a tier.
TIER_RANK = {"na": 0, "p3": 1, "p2": 2, "p1": 3}
RELIABILITY_BINS = (0.0, 0.02, 0.04, 0.08, 0.12, 0.20, 0.30, 0.50, 1.0)
Key = tuple[float, ...]  # orders numbers for the AUC


def pct(value: float | None, width: int = 5) -> str:
    return "-".rjust(width + 2) if value is None else f"{value * 100:{width}.1f} %"


def mark(met: bool | None) -> str:
    return " " if met is None else "✓" if met else "✗"


def near(engine: float | None, bound: float | None, margin: float) -> bool | None:
    """D29: the engine's figure no further than ``margin`` below the bound's (above it is
    fine); None when either is missing."""
    return None if engine is None or bound is None else engine >= bound - margin


@dataclass(frozen=True)
class TierRow:
    tier: str
    numbers: int
    share: float
    calls: int
    connects: int
    mean_p: float

    @property
    def rate(self) -> float | None:
        return self.connects / self.calls if self.calls else None

    @property
    def met(self) -> bool | None:
        return None if self.rate is None else TARGETS[self.tier][1](self.rate)


def tier_rows(numbers: Sequence[SimNumber]) -> list[TierRow]:
    rows = []
    for tier in TIERS:
        group = [n for n in numbers if n.tier == tier]
        rows.append(
            TierRow(
                tier=tier,
                numbers=len(group),
                share=len(group) / len(numbers) if numbers else 0.0,
                calls=sum(len(n.later) for n in group),
                connects=sum(sum(n.later) for n in group),
                mean_p=sum(n.probability for n in group) / len(group) if group else 0.0,
            )
        )
    return rows


def auc(scored: Iterable[tuple[Key, int, int]]) -> float | None:
    """The Mann-Whitney statistic: the chance that a random connect was made to a number
    ranked above a random miss's, ties counting half. ``scored``: (key, connects, misses) per
    number; keys order the numbers, equal keys tie."""
    groups: dict[Key, list[int]] = {}
    for key, connects, misses in scored:
        group = groups.setdefault(key, [0, 0])
        group[0] += connects
        group[1] += misses
    total_pos = sum(g[0] for g in groups.values())
    total_neg = sum(g[1] for g in groups.values())
    if not total_pos or not total_neg:
        return None
    below = 0  # misses ranked strictly below the current key
    wins = 0.0
    for key in sorted(groups):
        connects, misses = groups[key]
        wins += connects * (below + misses / 2)
        below += misses
    return wins / (total_pos * total_neg)


def engine_key(number: SimNumber) -> Key:
    return TIER_RANK[number.tier], number.probability


def ranking(numbers: Sequence[SimNumber]) -> tuple[float | None, float | None]:
    """The AUC of the engine's ordering and of the true probabilities (the ceiling)."""

    def scored(key: Callable[[SimNumber], Key]) -> list[tuple[Key, int, int]]:
        return [(key(n), sum(n.later), len(n.later) - sum(n.later)) for n in numbers]

    return auc(scored(engine_key)), auc(scored(lambda n: (n.p,)))


@dataclass(frozen=True)
class Brier:
    engine: float
    base: float  # a constant predictor at the observed rate
    truth: float  # the true probabilities: the floor

    @property
    def skill_share(self) -> float | None:
        """The engine's gain over the base rate, as a share of what the truth gains."""
        attainable = self.base - self.truth
        return (self.base - self.engine) / attainable if attainable > 0 else None


def brier(numbers: Sequence[SimNumber]) -> Brier:
    calls = connects = 0
    ours = truth = 0.0
    for n in numbers:
        for y in n.later:
            calls += 1
            connects += y
            ours += (n.probability - y) ** 2
            truth += (n.p - y) ** 2
    if not calls:
        return Brier(0.0, 0.0, 0.0)
    base = connects / calls
    return Brier(ours / calls, base * (1 - base), truth / calls)


@dataclass(frozen=True)
class Lift:
    """Expected connects per contact of one dial each, from the true probabilities (not the
    later calls, whose noise would swamp differences of a point or two)."""

    contacts: int
    phone: float  # dialling ``phone``, the first number
    best: float  # dialling ``bestPhone``; a contact without one is not dialled (0)
    oracle: float  # dialling the truly best number
    without_best: int

    @property
    def share(self) -> float | None:
        gain = self.oracle - self.phone
        return (self.best - self.phone) / gain if gain > 1e-9 else None


def lift(contacts: Sequence[SimContact]) -> Lift:
    if not contacts:
        return Lift(0, 0.0, 0.0, 0.0, 0)
    count = len(contacts)
    return Lift(
        contacts=count,
        phone=sum(c.numbers[0].p for c in contacts) / count,
        best=sum(c.best.p for c in contacts if c.best is not None) / count,
        oracle=sum(max(n.p for n in c.numbers) for c in contacts) / count,
        without_best=sum(1 for c in contacts if c.best is None),
    )


@dataclass(frozen=True)
class Figures:
    """One world, one seed, one group of numbers: what the summary table shows."""

    numbers: int
    calls: int
    base_rate: float
    rows: list[TierRow]
    auc: float | None
    ceiling: float | None
    brier: Brier
    lift: Lift
    # The lowest observed rate na can have under D28, whatever the engine (``na_floor``).
    na_floor: float | None

    @property
    def tiers_met(self) -> bool:
        """Every tier in band (a tier without numbers has no rate to miss it by)."""
        return all(row.met is not False for row in self.rows)


def figures(contacts: Sequence[SimContact], numbers: Sequence[SimNumber]) -> Figures:
    calls = sum(len(n.later) for n in numbers)
    connects = sum(sum(n.later) for n in numbers)
    engine_auc, ceiling = ranking(numbers)
    return Figures(
        numbers=len(numbers),
        calls=calls,
        base_rate=connects / calls if calls else 0.0,
        rows=tier_rows(numbers),
        auc=engine_auc,
        ceiling=ceiling,
        brier=brier(numbers),
        lift=lift(contacts),
        na_floor=na_floor(numbers),
    )


def na_floor(numbers: Sequence[SimNumber]) -> float | None:
    """The lowest observed connect rate of na that an engine following D28 can reach: the
    later calls of the numbers D28 makes na, with those of every other number whose true
    probability is 0 (as if the engine put each of them, and nothing else, in na). None when
    D28 makes none na."""
    forced = [n for n in numbers if n.wrong_reported]
    if not forced:
        return None
    dead = [n for n in numbers if not n.wrong_reported and n.p == 0.0]
    calls = sum(len(n.later) for n in forced + dead)
    return sum(sum(n.later) for n in forced) / calls if calls else None


# -- reliability ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bin:
    low: float
    high: float
    numbers: int
    calls: int
    connects: int
    predicted: float  # the engine's mean probability over the later calls

    @property
    def observed(self) -> float | None:
        return self.connects / self.calls if self.calls else None

    def interval(self) -> tuple[float, float]:
        """The 95 % Wilson interval of the observed rate."""
        n, z = self.calls, 1.96
        if not n:
            return 0.0, 0.0
        p = self.connects / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return max(0.0, centre - half), min(1.0, centre + half)


def reliability(numbers: Iterable[SimNumber]) -> list[Bin]:
    edges = RELIABILITY_BINS
    sums = [[0, 0, 0, 0.0] for _ in edges[1:]]  # numbers, calls, connects, sum of p
    for n in numbers:
        index = next(
            (i for i in range(len(edges) - 1) if n.probability < edges[i + 1]), len(edges) - 2
        )
        row = sums[index]
        row[0] += 1
        row[1] += len(n.later)
        row[2] += sum(n.later)
        row[3] += n.probability * len(n.later)
    return [
        Bin(edges[i], edges[i + 1], int(s[0]), int(s[1]), int(s[2]), s[3] / s[1] if s[1] else 0.0)
        for i, s in enumerate(sums)
    ]


def reliability_lines(bins: Sequence[Bin]) -> list[str]:
    lines = ["  predicted bin  numbers  later calls  mean predicted  observed  95 % interval"]
    for b in bins:
        if not b.numbers:
            continue
        low, high = b.interval()
        lines.append(
            f"  {b.low * 100:3.0f}-{b.high * 100:3.0f} %    {b.numbers:>7}  {b.calls:>11}  "
            f"{pct(b.predicted):>14}  {pct(b.observed):>8}  {low * 100:.1f}-{high * 100:.1f} %"
        )
    return lines


def save_reliability(
    path: Path, world: str, note: str, bins: Sequence[Bin], floors: Sequence[float]
) -> None:
    """The reliability diagram as a PNG; ``floors``: the tier floors, drawn as guides.
    matplotlib is imported here only, so that the bench runs without it when no plot is
    asked for."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [b for b in bins if b.calls]
    xs = [b.predicted for b in shown]
    ys = [b.connects / b.calls for b in shown]
    spans = [b.interval() for b in shown]
    errors = [
        [y - low for (low, _), y in zip(spans, ys, strict=True)],
        [high - y for (_, high), y in zip(spans, ys, strict=True)],
    ]
    top = min(1.0, max([*xs, *ys, 0.05]) * 1.15)
    figure, axes = plt.subplots(figsize=(6.4, 5.6), dpi=110)
    axes.plot([0, top], [0, top], color="#999999", linestyle="--", linewidth=1, label="perfect")
    for floor in floors:
        axes.axvline(floor, color="#dddddd", linewidth=1, zorder=0)
        axes.text(
            floor,
            top * 0.98,
            f"tier floor {floor * 100:.0f} % ",
            fontsize=7,
            color="#888888",
            rotation=90,
            ha="right",
            va="top",
        )
    axes.errorbar(
        xs, ys, yerr=errors, marker="o", color="#1f5fa8", capsize=3, label="engine (95 % CI)"
    )
    for index, (b, x, y) in enumerate(zip(shown, xs, ys, strict=True)):
        # alternate sides, so that the crowded bins near 0 stay readable
        offset = (6, -16) if index % 2 == 0 else (-62, 6)
        if y < top * 0.06:
            offset = (6, 4)
        axes.annotate(
            f"{b.numbers} numbers\n{b.calls} calls",
            (x, y),
            textcoords="offset points",
            xytext=offset,
            fontsize=7,
            color="#444444",
        )
    axes.set_xlim(0, top)
    axes.set_ylim(0, top)
    axes.set_xlabel("predicted connect probability (mean of the bin)")
    axes.set_ylabel("observed connect rate of the later calls")
    axes.set_title(f"Scoring reliability, world {world}\n{note}", fontsize=10)
    axes.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
