"""The score report worked out from scores and calls: which score each call answers, and the
figures per tier and per band of connect rate. Pure: no database, no clock."""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, NamedTuple

from dialscore.accuracy.statistics import area_under_curve, wilson_interval
from dialscore.scoring.engine import NA_FLOOR, P1_FLOOR, P2_FLOOR
from dialscore.scoring.lines import CONNECTS

TIERS = ("p1", "p2", "p3", "na")
# Bands of connect rate: 0-0.1, 0.1-0.2 … 0.9-1.0, the last one with 1.0.
BUCKETS = 10
# Fewer calls than this say too little to rank anything: no area under the curve.
MIN_CALLS = 20
# What each tier promises: the connect rates its numbers were scored within (docs/scoring.md).
BANDS: Mapping[str, tuple[float, float]] = {
    "p1": (P1_FLOOR, 1.0),
    "p2": (P2_FLOOR, P1_FLOOR),
    "p3": (0.0, P2_FLOOR),
    "na": (0.0, NA_FLOOR),
}

Standing = Literal["below", "within", "above"]


# Scores and calls come by the hundred thousand: named tuples, made in about two thirds of
# the time of frozen dataclasses.


class Score(NamedTuple):
    """One number as one contact's scoring left it: its tier and its connect rate (0 for an
    ``na`` number, whose ``connectRate`` is null)."""

    number: str
    scored_at: datetime
    tier: str
    rate: float


class ReportedCall(NamedTuple):
    number: str
    called_at: datetime
    connected: bool


class CountedCall(NamedTuple):
    """A call matched with the score in force when it was made."""

    number: str
    tier: str
    rate: float
    connected: bool


@dataclass(frozen=True)
class TierFigures:
    tier: str
    phones: int
    calls: int
    connects: int
    # Mean connect rate at scoring time over the calls, connects / calls, and that rate's 95 %
    # Wilson interval; None without calls.
    predicted: float | None
    observed: float | None
    interval: tuple[float, float] | None

    @property
    def band(self) -> tuple[float, float]:
        return BANDS[self.tier]

    def standing(self) -> Standing | None:
        """Where the observed rate is against the tier's band; None without calls."""
        if self.observed is None:
            return None
        low, high = self.band
        if self.observed < low:
            return "below"
        if self.observed > high:
            return "above"
        return "within"

    def beyond_chance(self) -> bool:
        """Whether the whole 95 % interval lies off the band: the calls say the tier is off,
        not just these calls' luck."""
        if self.interval is None:
            return False
        low, high = self.band
        return self.interval[1] < low or self.interval[0] > high


@dataclass(frozen=True)
class BucketFigures:
    low: float
    high: float
    calls: int
    connects: int
    predicted: float | None
    observed: float | None


@dataclass(frozen=True)
class ScoreReport:
    since: datetime
    calls: int
    connects: int
    tiers: tuple[TierFigures, ...]
    buckets: tuple[BucketFigures, ...]
    # None under MIN_CALLS calls, or when every call or none was a connect.
    auc: float | None

    def tier(self, code: str) -> TierFigures:
        return next(figures for figures in self.tiers if figures.tier == code)


# -- reading stored scores and calls ------------------------------------------------------------


def tier_of(status: str) -> str | None:
    """The tier of a phone status: ``p1 - sf`` is ``p1``, every ``na…`` is ``na``."""
    tier = status.partition(" - ")[0].strip()
    if tier.startswith("na"):
        return "na"
    return tier if tier in TIERS else None


def scores_of(scored_at: datetime, phones: Iterable[Any]) -> Iterator[Score]:
    """The scores of one scored contact's phone entries; an entry with no number or no
    status (not scored) gives none."""
    for entry in phones:
        if not isinstance(entry, dict):
            continue
        number, status = entry.get("number"), entry.get("status")
        if not isinstance(number, str) or not isinstance(status, str):
            continue
        tier = tier_of(status)
        if tier is None:
            continue
        rate = entry.get("connectRate")
        if not isinstance(rate, int | float) or isinstance(rate, bool):
            rate = 0.0
        yield Score(number, scored_at, tier, float(rate))


def reported_call(number: str, outcome: str, called_at: datetime) -> ReportedCall:
    return ReportedCall(number, called_at, outcome in CONNECTS)


# -- matching ----------------------------------------------------------------------------------


class _Timeline:
    """A number's scores in time order, one per instant."""

    def __init__(self) -> None:
        self.times: list[datetime] = []
        self.scores: list[Score] = []

    def add(self, score: Score) -> None:
        self.times.append(score.scored_at)
        self.scores.append(score)

    def settle(self) -> None:
        # Stable: of the scores of one instant (one number twice in a batch), the last given
        # is the one in force.
        ordered = sorted(self.scores, key=lambda s: s.scored_at)
        self.times, self.scores = [], []
        for score in ordered:
            if self.times and self.times[-1] == score.scored_at:
                self.scores[-1] = score
            else:
                self.add(score)

    def in_force(self, at: datetime) -> Score | None:
        """The most recent score before ``at``."""
        index = bisect_left(self.times, at)
        return self.scores[index - 1] if index else None


def count_calls(
    scores: Iterable[Score], calls: Iterable[ReportedCall], since: datetime
) -> list[CountedCall]:
    """The calls made at or after ``since`` to a number scored before them, each with the
    most recent score of its number before it. A score made before ``since`` still counts
    for the calls after it; a call before its number's first score counts nowhere."""
    timelines: dict[str, _Timeline] = {}
    for score in scores:
        timeline = timelines.get(score.number)
        if timeline is None:
            timeline = timelines[score.number] = _Timeline()
        timeline.add(score)
    for timeline in timelines.values():
        timeline.settle()
    counted = []
    for call in calls:
        scored = timelines.get(call.number)
        in_force = scored.in_force(call.called_at) if scored is not None else None
        if in_force is not None and call.called_at >= since:
            counted.append(CountedCall(call.number, in_force.tier, in_force.rate, call.connected))
    return counted


# -- figures -----------------------------------------------------------------------------------


def bucket_of(rate: float) -> int:
    """The band of a connect rate: 0 for 0-0.1 … 9 for 0.9-1.0 (1.0 included)."""
    # A rate a hair under a band's edge from float arithmetic (0.7 - 0.4 is
    # 0.29999999999999993) stays in the band its decimals name.
    return min(BUCKETS - 1, max(0, math.floor(rate * BUCKETS + 1e-9)))


@dataclass
class _Tally:
    calls: int = 0
    connects: int = 0
    rates: float = 0.0

    def add(self, call: CountedCall) -> None:
        self.calls += 1
        self.connects += call.connected
        self.rates += call.rate

    @property
    def predicted(self) -> float | None:
        return self.rates / self.calls if self.calls else None

    @property
    def observed(self) -> float | None:
        return self.connects / self.calls if self.calls else None


def build_report(
    scores: Iterable[Score], calls: Iterable[ReportedCall], since: datetime
) -> ScoreReport:
    """The report of the calls since ``since`` against the scores in force when they were
    made. Every tier and every band is listed, empty ones with zeros."""
    counted = count_calls(scores, calls, since)
    tiers = {tier: _Tally() for tier in TIERS}
    numbers: dict[str, set[str]] = {tier: set() for tier in TIERS}
    buckets = [_Tally() for _ in range(BUCKETS)]
    for call in counted:
        tiers[call.tier].add(call)
        numbers[call.tier].add(call.number)
        buckets[bucket_of(call.rate)].add(call)
    auc = None
    if len(counted) >= MIN_CALLS:
        auc = area_under_curve((call.rate, call.connected) for call in counted)
    return ScoreReport(
        since=since,
        calls=len(counted),
        connects=sum(call.connected for call in counted),
        tiers=tuple(
            TierFigures(
                tier=tier,
                phones=len(numbers[tier]),
                calls=tally.calls,
                connects=tally.connects,
                predicted=tally.predicted,
                observed=tally.observed,
                interval=wilson_interval(tally.connects, tally.calls),
            )
            for tier, tally in tiers.items()
        ),
        buckets=tuple(
            BucketFigures(
                low=round(index / BUCKETS, 1),
                high=round((index + 1) / BUCKETS, 1),
                calls=tally.calls,
                connects=tally.connects,
                predicted=tally.predicted,
                observed=tally.observed,
            )
            for index, tally in enumerate(buckets)
        ),
        auc=auc,
    )
