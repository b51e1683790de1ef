"""The best hours to call a number: a prior by line type, and the hours learnt from the
client's reported calls once there are enough, both inside the legal window."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final
from zoneinfo import ZoneInfo

from dialscore.compliance.rules import CallWindow

DAY_NAMES: Final = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
WORKDAYS: Final = (0, 1, 2, 3, 4)
# The client's calls needed before the hours are learnt from them (P175), and how many
# calls' weight the prior keeps in each hour (a beta prior: the rate of an hour is
# (connects + PRIOR_WEIGHT * prior rate) / (calls + PRIOR_WEIGHT)).
MIN_CALLS: Final = 30
PRIOR_WEIGHT: Final = 10
# How many one-hour cells learnt best hours keep.
BEST_CELLS: Final = 6
# How far back the client's calls teach the best hours (P177, P194).
LEARNING_PERIOD: Final = timedelta(days=90)
# A line type as the client's call counts keep it holds at most this many characters (P194).
LINE_TYPE_LENGTH: Final = 32

# (weekday, local hour) -> (calls, connects)
CallCounts = Mapping[tuple[int, int], tuple[int, int]]
# A weekday's legal window (0 is Monday); None when no rule applies.
LegalWindow = Callable[[int], CallWindow | None]


@dataclass(frozen=True, slots=True)
class PriorRange:
    days: tuple[int, ...]
    start_hour: int
    end_hour: int
    connect_rate: float


@dataclass(frozen=True, slots=True)
class LinePrior:
    ranges: tuple[PriorRange, ...]
    # The rate assumed for every hour outside ``ranges``.
    elsewhere: float


# Assumed figures, not measurements (P174): when people of each kind of line tend to pick up.
# Mobiles at lunch and after work, direct lines mid-morning and late afternoon, switchboards
# through office hours.
PRIORS: Final[Mapping[str, LinePrior]] = {
    "mobile": LinePrior(
        (
            PriorRange(WORKDAYS, 12, 13, 0.30),
            PriorRange(WORKDAYS, 17, 19, 0.33),
            PriorRange((5,), 10, 12, 0.25),
        ),
        0.18,
    ),
    "direct": LinePrior(
        (PriorRange(WORKDAYS, 9, 11, 0.28), PriorRange(WORKDAYS, 16, 17, 0.22)),
        0.12,
    ),
    "hq": LinePrior(
        (PriorRange(WORKDAYS, 9, 12, 0.45), PriorRange(WORKDAYS, 13, 16, 0.40)),
        0.15,
    ),
    "other": LinePrior(
        (PriorRange(WORKDAYS, 10, 12, 0.22), PriorRange(WORKDAYS, 16, 18, 0.22)),
        0.12,
    ),
}
# Line types as a contact gives them (P8) or libphonenumber names them, to a prior.
_PRIOR_OF: Final = {
    "mobile": "mobile",
    "direct": "direct",
    "fixed_line": "direct",
    "hq": "hq",
    "toll_free": "hq",
}


def prior_for(line_type: str | None) -> LinePrior:
    """The prior of a line type; the ``other`` one for a type it does not know."""
    return PRIORS[_PRIOR_OF.get(line_type or "", "other")]


@dataclass(frozen=True, slots=True)
class BestHours:
    """Local hours on some weekdays (0 is Monday) when a call is likely to connect."""

    days: tuple[int, ...]
    start_hour: int
    end_hour: int
    expected_connect_rate: float
    based_on_calls: int


def legal_hours(window: CallWindow | None) -> tuple[int, int] | None:
    """The whole hours inside a day's window: (first hour, hour after the last)."""
    if window is None:
        return (0, 24)
    if window.start is None:
        return None
    first = window.start.hour + (1 if window.start.minute or window.start.second else 0)
    last = 24 if window.end is None else window.end.hour
    return (first, last) if first < last else None


def prior_best_hours(line_type: str | None, legal: LegalWindow) -> tuple[BestHours, ...]:
    """The prior's hours of a line type, cut to each weekday's legal window."""
    found: dict[tuple[int, int, float], list[int]] = {}
    for part in prior_for(line_type).ranges:
        for day in part.days:
            hours = legal_hours(legal(day))
            if hours is None:
                continue
            start, end = max(part.start_hour, hours[0]), min(part.end_hour, hours[1])
            if start < end:
                found.setdefault((start, end, part.connect_rate), []).append(day)
    return tuple(
        BestHours(tuple(days), start, end, rate, 0)
        for (start, end, rate), days in sorted(found.items(), key=lambda item: -item[0][2])
    )


def _prior_rate(prior: LinePrior, day: int, hour: int) -> float:
    for part in prior.ranges:
        if day in part.days and part.start_hour <= hour < part.end_hour:
            return part.connect_rate
    return prior.elsewhere


def learned_best_hours(
    line_type: str | None, counts: CallCounts, legal: LegalWindow
) -> tuple[BestHours, ...]:
    """The best hours from the client's calls to numbers like this one, each hour's rate
    blended with the prior's; the prior's hours while there are fewer than MIN_CALLS calls."""
    if sum(calls for calls, _ in counts.values()) < MIN_CALLS:
        return prior_best_hours(line_type, legal)
    prior = prior_for(line_type)
    cells: list[tuple[float, int, int, int]] = []
    for day in range(7):
        hours = legal_hours(legal(day))
        if hours is None:
            continue
        for hour in range(*hours):
            calls, connects = counts.get((day, hour), (0, 0))
            rate = (connects + PRIOR_WEIGHT * _prior_rate(prior, day, hour)) / (
                calls + PRIOR_WEIGHT
            )
            cells.append((rate, calls, day, hour))
    cells.sort(key=lambda cell: (-cell[0], -cell[1], cell[2], cell[3]))
    kept = sorted(cells[:BEST_CELLS], key=lambda cell: (cell[2], cell[3]))
    # Neighbouring hours of one day make one range.
    ranges: list[list[tuple[float, int, int, int]]] = []
    for cell in kept:
        last = ranges[-1][-1] if ranges else None
        if last is not None and last[2] == cell[2] and last[3] + 1 == cell[3]:
            ranges[-1].append(cell)
        else:
            ranges.append([cell])
    found = []
    for run in ranges:
        calls = sum(cell[1] for cell in run)
        connects = sum(counts.get((cell[2], cell[3]), (0, 0))[1] for cell in run)
        prior_sum = sum(_prior_rate(prior, cell[2], cell[3]) for cell in run)
        rate = (connects + PRIOR_WEIGHT * prior_sum) / (calls + PRIOR_WEIGHT * len(run))
        found.append(BestHours((run[0][2],), run[0][3], run[-1][3] + 1, round(rate, 3), calls))
    found.sort(key=lambda hours: (-hours.expected_connect_rate, hours.days, hours.start_hour))
    return tuple(found)


class CallTally(Mapping[tuple[int, int], tuple[int, int]]):
    """Call counts by (weekday, local hour) that cannot change once made: ``key``, a
    frozenset of the counts' items, is made once here, so the verdicts of every number that
    shares the counts find the best hours worked out for them without hashing the counts
    again (P175)."""

    __slots__ = ("_counts", "key")

    def __init__(self, counts: Mapping[tuple[int, int], tuple[int, int]]) -> None:
        self._counts = dict(counts)
        self.key: frozenset[tuple[tuple[int, int], tuple[int, int]]] = frozenset(
            self._counts.items()
        )

    def __getitem__(self, cell: tuple[int, int]) -> tuple[int, int]:
        return self._counts[cell]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return iter(self._counts)

    def __len__(self) -> int:
        return len(self._counts)

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"CallTally({self._counts!r})"


def counts_key(
    counts: CallCounts | None,
) -> frozenset[tuple[tuple[int, int], tuple[int, int]]]:
    """What identifies counts in a cache key: their items as a set, made once for a
    ``CallTally``. Equal counts give equal keys, whatever their mapping type or order (no
    counts and empty counts are the same: neither has a call)."""
    if counts is None:
        return _NO_COUNTS
    if isinstance(counts, CallTally):
        return counts.key
    return frozenset(counts.items())


_NO_COUNTS: Final[frozenset[tuple[tuple[int, int], tuple[int, int]]]] = frozenset()


def tally_calls(calls: Iterable[tuple[datetime, bool]], zone: ZoneInfo) -> CallTally:
    """Reported calls (UTC instant, connected or not) counted by the called number's local
    weekday and hour; the counts cannot change (a ``CallTally``), so verdicts given them
    reuse the best hours worked out for them."""
    counts: dict[tuple[int, int], tuple[int, int]] = {}
    for at, connected in calls:
        local = at.astimezone(zone)
        calls_so_far, connects = counts.get((local.weekday(), local.hour), (0, 0))
        counts[(local.weekday(), local.hour)] = (calls_so_far + 1, connects + int(connected))
    return CallTally(counts)


def tally_type(entry: Mapping[str, Any] | None) -> str:
    """The line type a phone entry's calls are counted under (P194): its ``type``, "" when it
    has none."""
    line_type = entry.get("type") if entry is not None else None
    return line_type[:LINE_TYPE_LENGTH] if isinstance(line_type, str) else ""
