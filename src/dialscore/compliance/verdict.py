"""The verdict for one phone at one instant: its time zone, today's legal window, whether it
may be called now, when next, and the best hours; and its JSON-ready form."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from typing import Final
from zoneinfo import ZoneInfo

from dialscore.compliance.best_hours import (
    DAY_NAMES,
    BestHours,
    CallCounts,
    learned_best_hours,
)
from dialscore.compliance.places import narrow_zone, number_place, state_code, zone_named
from dialscore.compliance.rules import (
    Applied,
    CallWindow,
    Rules,
    call_cap,
    is_holiday,
    window_on,
)

DAY: Final = timedelta(days=1)
# How far ahead nextCallableAt is looked for: past any run of forbidden days a rules file
# could plausibly hold (a Sunday, a holiday Monday …).
HORIZON_DAYS: Final = 31


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the compliance engine says of one phone at one instant."""

    time_zone: str | None
    # The jurisdictions whose rules were applied, most specific first ("US-FL", "US").
    jurisdictions: tuple[str, ...]
    # Today's local window (start None: no calls today); None when the zone or the rules
    # are not known.
    call_window: CallWindow | None
    callable_now: bool | None
    next_callable_at: datetime | None
    # Why not callable now, or why not known, in words; None when callable.
    reason: str | None
    best_call_hours: tuple[BestHours, ...]


def _window(applied: Sequence[Applied], day: date) -> CallWindow | None:
    return window_on(applied, day.weekday(), lambda calendar: is_holiday(calendar, day))


def _local(day: date, at: time | None, zone: ZoneInfo) -> datetime:
    """A local wall time as a UTC instant. A time in a spring-forward gap is read with the
    offset before it, which lands after the gap (later, never earlier, than allowed)."""
    if at is None:
        return datetime.combine(day + DAY, time(0), zone).astimezone(UTC)
    return datetime.combine(day, at, zone).astimezone(UTC)


def next_allowed(applied: Sequence[Applied], zone: ZoneInfo, earliest: datetime) -> datetime | None:
    """The first instant at or after ``earliest`` (UTC) inside a day's window."""
    day = earliest.astimezone(zone).date()
    for _ in range(HORIZON_DAYS):
        window = _window(applied, day)
        if window is not None and window.start is not None:
            start = _local(day, window.start, zone)
            end = _local(day, window.end, zone)
            if earliest < end:
                return max(earliest, start)
        day += DAY
    return None


def cap_lifts_at(
    applied: Sequence[Applied], now: datetime, recent_calls: Sequence[datetime]
) -> tuple[datetime, str] | None:
    """When the per-24-hour cap, if reached, lets the next call through, and the rule."""
    cap = call_cap(applied)
    if cap is None:
        return None
    limit, by = cap
    since = now - DAY
    inside = sorted(at for at in recent_calls if since < at <= now)
    if len(inside) < limit:
        return None
    # The call that must leave the window before one more fits in it.
    return inside[len(inside) - limit] + DAY, f"{limit} calls in 24 hours ({by.rule.source})"


@lru_cache(maxsize=4096)
def best_hours_for(
    line_type: str | None,
    applied: tuple[Applied, ...],
    counts: frozenset[tuple[tuple[int, int], tuple[int, int]]],
) -> tuple[BestHours, ...]:
    """The best hours of a line type under some jurisdictions: the same for every number of
    a job that shares them, so worked out once (it is most of a verdict's cost)."""

    def legal(weekday: int) -> CallWindow | None:
        return window_on(applied, weekday, lambda _calendar: False)

    return learned_best_hours(line_type, dict(counts), legal)


def assess(
    e164: str,
    *,
    now: datetime,
    rules: Rules,
    state_province: str | None = None,
    time_zone: str | None = None,
    line_type: str | None = None,
    recent_calls: Sequence[datetime] = (),
    call_counts: CallCounts | None = None,
) -> Verdict:
    """The verdict for the phone ``e164`` at ``now`` (aware), for a contact whose address
    gives ``state_province`` and ``time_zone``; ``recent_calls`` are the instants of calls
    reported to this number (those in the 24 hours before ``now`` count against caps);
    ``call_counts`` the client's calls to numbers like it, by local weekday and hour."""
    now = now.astimezone(UTC)
    place = number_place(e164)
    contact_state = state_code(state_province) if place.country == "US" else None
    # Both states when the address and the area code differ: the stricter rules hold (P171).
    states = tuple(s for s in (contact_state, place.area_state) if s is not None)
    applied = rules.applying(place.country, states)
    zone_name = narrow_zone(place.zones, contact_state, time_zone)
    zone = zone_named(zone_name)

    best = best_hours_for(line_type, applied, frozenset((call_counts or {}).items()))
    keys = tuple(a.key for a in applied)
    if zone is None:
        why = (
            "the number spans several time zones and the contact's address does not narrow them"
            if len(place.zones) > 1
            else "the number's time zone is not known"
        )
        return Verdict(None, keys, None, None, None, why, best)
    if not applied:
        why = f"no calling-time rules for {place.country or 'the number'}'s country"
        return Verdict(zone_name, keys, None, None, None, why, best)
    today = _window(applied, now.astimezone(zone).date())
    lifts = cap_lifts_at(applied, now, recent_calls)
    earliest = now if lifts is None else max(now, lifts[0])
    next_at = next_allowed(applied, zone, earliest)
    callable_now = next_at == now
    reason: str | None = None
    if not callable_now:
        if lifts is not None and lifts[0] > now:
            reason = f"the cap of {lifts[1]} is reached"
        elif today is not None and today.start is None:
            reason = f"no calls today ({today.source})"
        else:
            reason = "outside today's window"
    return Verdict(zone_name, keys, today, callable_now, next_at, reason, best)


def _clock(at: time | None) -> str:
    return "24:00" if at is None else f"{at:%H:%M}"


def _instant(at: datetime | None) -> str | None:
    if at is None:
        return None
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def present(verdict: Verdict) -> dict[str, object]:
    """The verdict as a phone entry's fields (camelCase, JSON-ready)."""
    window = verdict.call_window
    return {
        "timeZone": verdict.time_zone,
        "callWindow": None
        if window is None or window.start is None
        else {
            "start": _clock(window.start),
            "end": _clock(window.end),
            "rule": window.rule,
            "source": window.source,
        },
        "callableNow": verdict.callable_now,
        "nextCallableAt": _instant(verdict.next_callable_at),
        "bestCallHours": [
            {
                "days": [DAY_NAMES[day] for day in hours.days],
                "from": f"{hours.start_hour:02d}:00",
                "to": f"{hours.end_hour:02d}:00",
                "expectedConnectRate": hours.expected_connect_rate,
                "basedOnCalls": hours.based_on_calls,
            }
            for hours in verdict.best_call_hours
        ],
    }
