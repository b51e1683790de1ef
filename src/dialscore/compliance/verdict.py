"""The verdict for one phone at one instant: its time zone, today's legal window, whether it
may be called now, when next, and the best hours; and its JSON-ready form."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from typing import Final, NamedTuple
from zoneinfo import ZoneInfo

from dialscore.compliance.best_hours import (
    DAY_NAMES,
    BestHours,
    CallCounts,
    counts_key,
    learned_best_hours,
    legal_hours,
)
from dialscore.compliance.places import (
    NumberPlace,
    forget_places,
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
# A window as ``present`` writes it: start, end, rule and source (read-only).
WindowFields = Mapping[str, str]
# Best hours as ``present`` writes them: days, from, to, expectedConnectRate, basedOnCalls
# (read-only).
HoursFields = Mapping[str, object]
# A verdict as ``present`` writes it (read-only, JSON-ready).
PhoneFields = Mapping[str, object]


class Verdict(NamedTuple):
    """What the compliance engine says of one phone at one instant. A tuple: one is made for
    each verdict worked out, in about a fifth of the time a frozen dataclass takes."""

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
    # The verdict as ``present`` writes it, made with it (its window and best hours made
    # once in the rules' memo, shared by every verdict that has them): read-only, typed so.
    fields: PhoneFields


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
    apply (and their keys), the number's one zone, if it has one, and the week's windows
    (holidays aside) with their whole legal hours, which the best hours depend on."""

    applied: tuple[Applied, ...]
    keys: tuple[str, ...]
    zone_name: str | None
    zone: ZoneInfo | None
    week: tuple[CallWindow | None, ...]
    week_hours: tuple[tuple[int, int] | None, ...]


def _week(
    rules: Rules, applied: tuple[Applied, ...], keys: tuple[str, ...]
) -> tuple[tuple[CallWindow | None, ...], tuple[tuple[int, int] | None, ...]]:
    """Each weekday's window (holidays aside) under the ``applied`` jurisdictions, and its
    whole legal hours."""
    # Keyed by the jurisdictions' keys: under one rules object a key names one rule.
    key = ("week", keys)
    known = rules.memo.get(key)
    if isinstance(known, tuple):
        return known
    windows = tuple(window_on(applied, day, lambda _calendar: False) for day in range(7))
    week = (windows, tuple(legal_hours(window) for window in windows))
    _keep(rules, key, week)
    return week


def _where(
    rules: Rules, place: NumberPlace, state_province: str | None, time_zone: str | None
) -> _Where:
    """What ``place`` and a contact's address settle under ``rules`` (kept with the
    ``Bearings`` made of it)."""
    contact_state = state_code(state_province) if place.country == "US" else None
    # Both states when the address and the area code differ: the stricter rules hold (P171).
    states = tuple(s for s in (contact_state, place.area_state) if s is not None)
    applied = rules.applying(place.country, states)
    zone_name = narrow_zone(place.zones, contact_state, time_zone)
    keys = tuple(a.key for a in applied)
    week, week_hours = _week(rules, applied, keys)
    return _Where(applied, keys, zone_name, zone_named(zone_name), week, week_hours)


@dataclass(frozen=True, slots=True)
class _Day:
    """One local day's window in a zone under some jurisdictions, with its bounds as UTC
    instants (None on a day without calls)."""

    day: date
    window: CallWindow | None
    opens: datetime | None
    closes: datetime | None
    # The window as ``present`` writes it; None on a day without calls (or rules).
    fields: WindowFields | None


def _day(rules: Rules, where: _Where, zone: ZoneInfo, day: date) -> _Day:
    """The window of the local date ``day`` in ``zone``, worked out once per jurisdictions,
    zone and date under ``rules``."""
    # Keyed by the jurisdictions' keys (one rule each under these rules), the zone's name
    # and the local date: all the window and its UTC bounds are worked out from.
    key = ("day", where.keys, where.zone_name, day)
    known = rules.memo.get(key)
    if isinstance(known, _Day):
        return known
    window = _window(where.applied, day)
    if window is None or window.start is None:
        found = _Day(day, window, None, None, None)
    else:
        opens, closes = _local(day, window.start, zone), _local(day, window.end, zone)
        found = _Day(day, window, opens, closes, window_fields(window))
    _keep(rules, key, found)
    return found


def next_allowed(
    rules: Rules,
    where: _Where,
    zone: ZoneInfo,
    earliest: datetime,
    *,
    first: _Day | None = None,
) -> datetime | None:
    """The first instant at or after ``earliest`` (UTC) inside a day's window; ``first`` is
    the local day of ``earliest`` when the caller has it already."""
    day = earliest.astimezone(zone).date() if first is None else first.day
    for _ in range(HORIZON_DAYS):
        found = first if first is not None else _day(rules, where, zone, day)
        first = None
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


@dataclass(frozen=True, slots=True)
class _Best:
    """Best hours, and the same as ``present`` writes them."""

    hours: tuple[BestHours, ...]
    fields: Sequence[HoursFields]


def _best(rules: Rules, where: _Where, line_type: str | None, counts: CallCounts | None) -> _Best:
    """The best hours of a line type under some jurisdictions (holidays aside), worked out
    once per line type, weekly legal hours and counts under ``rules``: the same for every
    number of a job that shares them (P175)."""
    # Keyed by the line type, the weekly legal hours (each weekday's whole hours: all of the
    # rules that learned_best_hours reads, and many jurisdictions share them) and the counts
    # by their items (equal counts, equal keys; made once for a CallTally).
    key = ("best", line_type, where.week_hours, counts_key(counts))
    known = rules.memo.get(key)
    if isinstance(known, _Best):
        return known
    best = learned_best_hours(line_type, counts or {}, where.week.__getitem__)
    found = _Best(best, [hours_fields(each) for each in best])
    _keep(rules, key, found)
    return found


class Bearings(NamedTuple):
    """What a number's verdict needs to know before it is worked out."""

    # The number's one zone, narrowed by the contact's address (P171); None when not one.
    zone: str | None
    # Whether a per-24-hour cap applies to it: only then do the calls reported to it count
    # (P174; most states have none).
    capped: bool
    # Where the numbering plan puts it, and what that and the address settle under the rules:
    # what ``assess`` starts from.
    place: NumberPlace
    where: _Where


def bearings(
    e164: str, *, rules: Rules, state_province: str | None = None, time_zone: str | None = None
) -> Bearings:
    """A number's ``Bearings`` for a contact at this address under ``rules``, as its verdict
    finds them."""
    place = number_place(e164)
    # Keyed by all they are worked out from besides the rules (each rules object has its own
    # memo): the place (country, area code's state, zones) and the contact's address as
    # given.
    key = ("bearings", place, state_province, time_zone)
    known = rules.memo.get(key)
    if isinstance(known, Bearings):
        return known
    where = _where(rules, place, state_province, time_zone)
    found = Bearings(where.zone_name, call_cap(where.applied) is not None, place, where)
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
    found: Bearings | None = None,
) -> Verdict:
    """The verdict for the phone ``e164`` at ``now`` (aware), for a contact whose address
    gives ``state_province`` and ``time_zone``; ``recent_calls`` are the instants of calls
    reported to this number (those in the 24 hours before ``now`` count against caps);
    ``call_counts`` the client's calls to numbers like it, by local weekday and hour (a
    ``CallTally``, as ``tally_calls`` gives, spares hashing them for every number);
    ``found``, the number's ``bearings`` for this address under these rules when the caller
    has them already."""
    now = now.astimezone(UTC)
    if found is None:
        found = bearings(e164, rules=rules, state_province=state_province, time_zone=time_zone)
    place, where = found.place, found.where
    capped = (
        cap_lifts_at(where.applied, now, recent_calls) if recent_calls and found.capped else None
    )
    if capped is not None and capped[0] > now:
        return _assess(place, where, now, rules, line_type, capped, call_counts)
    # Unless a cap holds it back, a number has the verdict of every number under the same
    # jurisdictions in the same zone (or as unsure of its zone), for the same line type and
    # counts at the same instant: worked out once for them (the instant is a job batch's or a
    # page's). Its country names the rules it lacks, if it lacks them.
    unsure = where.zone_name is None and len(place.zones) > 1
    key = (
        "verdict",
        place.country,
        where.keys,
        where.zone_name,
        unsure,
        line_type,
        counts_key(call_counts),
        now,
    )
    known = rules.memo.get(key)
    if isinstance(known, Verdict):
        return known
    made = _assess(place, where, now, rules, line_type, None, call_counts)
    _keep(rules, key, made)
    return made


def _assess(
    place: NumberPlace,
    where: _Where,
    now: datetime,
    rules: Rules,
    line_type: str | None,
    capped: tuple[datetime, str] | None,
    call_counts: CallCounts | None,
) -> Verdict:
    """The verdict of a number of ``place`` under ``where`` at ``now``; ``capped``: when the
    per-24-hour cap that holds the number back lifts, and the rule (None: no cap holds)."""
    found = _best(rules, where, line_type, call_counts)
    keys, zone = where.keys, where.zone
    if zone is None:
        why = (
            "the number spans several time zones and the contact's address does not narrow them"
            if len(place.zones) > 1
            else "the number's time zone is not known"
        )
        return _verdict(None, keys, None, None, None, why, found)
    if not where.applied:
        why = f"no calling-time rules for {place.country or 'the number'}'s country"
        return _verdict(where.zone_name, keys, None, None, None, why, found)
    today_is = _day(rules, where, zone, now.astimezone(zone).date())
    today = today_is.window
    if capped is None:
        next_at = next_allowed(rules, where, zone, now, first=today_is)
    else:
        next_at = next_allowed(rules, where, zone, capped[0])
    callable_now = next_at == now
    reason: str | None = None
    if not callable_now:
        if capped is not None:
            reason = f"the cap of {capped[1]} is reached"
        elif today is not None and today.start is None:
            reason = f"no calls today ({today.source})"
        else:
            reason = "outside today's window"
    return _verdict(where.zone_name, keys, today_is, callable_now, next_at, reason, found)


def _verdict(
    time_zone: str | None,
    jurisdictions: tuple[str, ...],
    today: _Day | None,
    callable_now: bool | None,
    next_at: datetime | None,
    reason: str | None,
    best: _Best,
) -> Verdict:
    """A verdict with its written form, from today's window and the best hours as the rules'
    memo keeps them."""
    fields = {
        "timeZone": time_zone,
        "callWindow": None if today is None else today.fields,
        "callableNow": callable_now,
        "nextCallableAt": _instant(next_at),
        "bestCallHours": best.fields,
    }
    window = None if today is None else today.window
    return Verdict(
        time_zone, jurisdictions, window, callable_now, next_at, reason, best.hours, fields
    )


def _clock(at: time | None) -> str:
    return "24:00" if at is None else f"{at:%H:%M}"


# Keyed by the instant: aware datetimes are equal when they are the same instant, and the
# text is that instant's in UTC, so equal keys have the same text. Most verdicts of a job
# share a few instants (its ``now``, the days' opening times).
@lru_cache(maxsize=4096)
def _instant_text(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _instant(at: datetime | None) -> str | None:
    """An aware instant in ISO 8601 UTC, to the second, with Z ("2026-11-27T15:00:00Z")."""
    return None if at is None else _instant_text(at)


# The written forms below are plain dicts and lists typed read-only (Mapping, Sequence), not
# proxies: they are what JSON is written from, and a dict is copied with ``dict(...)`` or
# ``**`` on the fast path, about three times faster than a proxy.


def window_fields(window: CallWindow) -> WindowFields | None:
    """A window as ``present`` writes it (read-only); None on a day without calls."""
    if window.start is None:
        return None
    return {
        "start": _clock(window.start),
        "end": _clock(window.end),
        "rule": window.rule,
        "source": window.source,
    }


def hours_fields(hours: BestHours) -> HoursFields:
    """Best hours as ``present`` writes them (read-only)."""
    return {
        "days": [DAY_NAMES[day] for day in hours.days],
        "from": f"{hours.start_hour:02d}:00",
        "to": f"{hours.end_hour:02d}:00",
        "expectedConnectRate": hours.expected_connect_rate,
        "basedOnCalls": hours.based_on_calls,
    }


def present(verdict: Verdict) -> dict[str, object]:
    """The verdict as a phone entry's fields (camelCase, JSON-ready): a new dict each time,
    whose window and best hours are shared by every phone that has them and are read, never
    changed (P207)."""
    return dict(written(verdict))


def written(verdict: Verdict) -> PhoneFields:
    """The verdict as ``present`` writes it, read-only and shared: for merging into a new
    phone entry without a copy of its own first."""
    return verdict.fields


def forget(rules: Rules) -> None:
    """Empties every cache verdicts use (the places, ``rules``' memo, the instants' text), as
    in a new process: for measuring the cost of verdicts on numbers never seen."""
    forget_places()
    rules.memo.clear()
    _instant_text.cache_clear()
