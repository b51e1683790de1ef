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
    legal_hours,
)
from dialscore.compliance.places import (
    NumberPlace,
    narrow_zone,
    number_place,
    state_code,
    zone_named,
)
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
# Entries a Rules' memo keeps before it is emptied: places, days and best hours (P172).
MEMO_SIZE: Final = 65536


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


def _keep(rules: Rules, key: tuple[object, ...], value: object) -> None:
    """Keep ``value`` in the rules' memo (P172), emptied when full."""
    if len(rules.memo) >= MEMO_SIZE:
        rules.memo.clear()
    rules.memo[key] = value


@dataclass(frozen=True, slots=True)
class _Where:
    """What a place and a contact's address settle under some rules: the jurisdictions that
    apply (and their keys) and the number's one zone, if it has one."""

    applied: tuple[Applied, ...]
    keys: tuple[str, ...]
    zone_name: str | None
    zone: ZoneInfo | None


def _where(
    rules: Rules, place: NumberPlace, state_province: str | None, time_zone: str | None
) -> _Where:
    key = ("where", place, state_province, time_zone)
    known = rules.memo.get(key)
    if isinstance(known, _Where):
        return known
    contact_state = state_code(state_province) if place.country == "US" else None
    # Both states when the address and the area code differ: the stricter rules hold (P171).
    states = tuple(s for s in (contact_state, place.area_state) if s is not None)
    applied = rules.applying(place.country, states)
    zone_name = narrow_zone(place.zones, contact_state, time_zone)
    where = _Where(applied, tuple(a.key for a in applied), zone_name, zone_named(zone_name))
    _keep(rules, key, where)
    return where


@dataclass(frozen=True, slots=True)
class _Day:
    """One local day's window in a zone under some jurisdictions, with its bounds as UTC
    instants (None on a day without calls)."""

    window: CallWindow | None
    opens: datetime | None
    closes: datetime | None


def _day(rules: Rules, where: _Where, zone: ZoneInfo, day: date) -> _Day:
    """The window of the local date ``day`` in ``zone``, worked out once per jurisdictions,
    zone and date under ``rules``."""
    key = ("day", where.keys, where.zone_name, day)
    known = rules.memo.get(key)
    if isinstance(known, _Day):
        return known
    window = _window(where.applied, day)
    if window is None or window.start is None:
        found = _Day(window, None, None)
    else:
        found = _Day(window, _local(day, window.start, zone), _local(day, window.end, zone))
    _keep(rules, key, found)
    return found


def next_allowed(
    rules: Rules, where: _Where, zone: ZoneInfo, earliest: datetime
) -> datetime | None:
    """The first instant at or after ``earliest`` (UTC) inside a day's window."""
    day = earliest.astimezone(zone).date()
    for _ in range(HORIZON_DAYS):
        found = _day(rules, where, zone, day)
        if found.opens is not None and found.closes is not None and earliest < found.closes:
            return max(earliest, found.opens)
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


def _best(
    rules: Rules, where: _Where, line_type: str | None, counts: CallCounts | None
) -> tuple[BestHours, ...]:
    """The best hours of a line type under some jurisdictions (holidays aside), worked out
    once per line type, weekly legal hours and counts under ``rules``: the same for every
    number of a job that shares them (P175). The weekly hours (each weekday's whole legal
    hours, worked out once per jurisdictions) are all they depend on, and many jurisdictions
    share them."""
    week_key = ("week", where.keys)
    week = rules.memo.get(week_key)
    if not isinstance(week, tuple):
        windows = tuple(window_on(where.applied, day, lambda _calendar: False) for day in range(7))
        week = (windows, tuple(legal_hours(window) for window in windows))
        _keep(rules, week_key, week)
    windows, hours = week
    key = ("best", line_type, hours, frozenset((counts or {}).items()))
    known = rules.memo.get(key)
    if isinstance(known, tuple):
        return known
    found = learned_best_hours(line_type, counts or {}, windows.__getitem__)
    _keep(rules, key, found)
    return found


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
    where = _where(rules, place, state_province, time_zone)
    best = _best(rules, where, line_type, call_counts)
    keys, zone = where.keys, where.zone
    if zone is None:
        why = (
            "the number spans several time zones and the contact's address does not narrow them"
            if len(place.zones) > 1
            else "the number's time zone is not known"
        )
        return Verdict(None, keys, None, None, None, why, best)
    if not where.applied:
        why = f"no calling-time rules for {place.country or 'the number'}'s country"
        return Verdict(where.zone_name, keys, None, None, None, why, best)
    today = _day(rules, where, zone, now.astimezone(zone).date()).window
    lifts = cap_lifts_at(where.applied, now, recent_calls) if recent_calls else None
    earliest = now if lifts is None else max(now, lifts[0])
    next_at = next_allowed(rules, where, zone, earliest)
    callable_now = next_at == now
    reason: str | None = None
    if not callable_now:
        if lifts is not None and lifts[0] > now:
            reason = f"the cap of {lifts[1]} is reached"
        elif today is not None and today.start is None:
            reason = f"no calls today ({today.source})"
        else:
            reason = "outside today's window"
    return Verdict(where.zone_name, keys, today, callable_now, next_at, reason, best)


def _clock(at: time | None) -> str:
    return "24:00" if at is None else f"{at:%H:%M}"


def _instant(at: datetime | None) -> str | None:
    if at is None:
        return None
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@lru_cache(maxsize=1024)
def _window_fields(window: CallWindow) -> tuple[str, str]:
    """A window's start and end as text, formatted once per window."""
    return _clock(window.start), _clock(window.end)


@lru_cache(maxsize=1024)
def _hours_fields(hours: BestHours) -> tuple[tuple[str, ...], str, str]:
    """Best hours' day names and bounds as text, formatted once per best hours."""
    return (
        tuple(DAY_NAMES[day] for day in hours.days),
        f"{hours.start_hour:02d}:00",
        f"{hours.end_hour:02d}:00",
    )


def present(verdict: Verdict) -> dict[str, object]:
    """The verdict as a phone entry's fields (camelCase, JSON-ready; new lists and dicts
    each time)."""
    window = verdict.call_window
    call_window: dict[str, str] | None = None
    if window is not None and window.start is not None:
        start, end = _window_fields(window)
        call_window = {"start": start, "end": end, "rule": window.rule, "source": window.source}
    best = []
    for hours in verdict.best_call_hours:
        days, first, last = _hours_fields(hours)
        best.append(
            {
                "days": list(days),
                "from": first,
                "to": last,
                "expectedConnectRate": hours.expected_connect_rate,
                "basedOnCalls": hours.based_on_calls,
            }
        )
    return {
        "timeZone": verdict.time_zone,
        "callWindow": call_window,
        "callableNow": verdict.callable_now,
        "nextCallableAt": _instant(verdict.next_callable_at),
        "bestCallHours": best,
    }
