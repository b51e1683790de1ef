"""The call verdict of each phone of contacts as they are shown, worked out as of that moment
and merged into their phone entries (P177)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, Final

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.compliance import (
    LEARNING_PERIOD,
    Bearings,
    CallTally,
    PhoneFields,
    Rules,
    assess,
    bearings,
    load_rules,
    tally_type,
    written,
)
from dialscore.kit.clock import utcnow
from dialscore.kit.db import one_of
from dialscore.models import CallHourTally, CallOutcome
from dialscore.scoring.engine import best_phone

# Calls to one number counted against the per-24-hour caps (P174).
CAP_PERIOD: Final = timedelta(hours=24)
# Fewer calls to a line type and zone and the engine gives the prior anyway (P175): the
# verdict is not worked out a second time with the tally.
LEARNING_MIN_CALLS: Final = 30
# An E.164 number: anything else (a number kept as submitted because it is invalid) gets nulls.
_E164: Final = re.compile(r"\+[1-9][0-9]{6,14}")
NO_VERDICT: Final[dict[str, Any]] = {
    "timeZone": None,
    "callWindow": None,
    "callableNow": None,
    "nextCallableAt": None,
    "bestCallHours": [],
}

_rules: dict[str | None, Rules] = {}


def rules_in_force(path: str | None) -> Rules:
    """The calling-time rules of ``DIALSCORE_COMPLIANCE_RULES`` (the packaged ones when
    unset), read once per process: a refused file raises ``RulesError``."""
    key = path or None
    rules = _rules.get(key)
    if rules is None:
        rules = _rules[key] = load_rules(key)
    return rules


def verdict_now() -> datetime:
    """The instant verdicts are worked out for: the clock's now to the second, as
    ``nextCallableAt`` is written (``utcnow`` here is what a test replaces to fix it). The
    batches of a job's events made within one second then share their verdicts; and as
    windows open and caps lift no earlier than the second they are in, a verdict of the
    second's start never calls a number callable a moment too early."""
    return utcnow().replace(microsecond=0)


@dataclass(frozen=True, slots=True)
class Shown:
    """A contact about to be shown: its phone entries and its address."""

    phones: Sequence[dict[str, Any]]
    state_province: str | None
    time_zone: str | None
    best_phone: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class WithVerdicts:
    """A contact's phone entries with their verdicts, and its best phone among them."""

    phones: list[dict[str, Any]]
    best_phone: dict[str, Any] | None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def shown(
    phones: Sequence[dict[str, Any]],
    fields: dict[str, Any] | None,
    best: dict[str, Any] | None,
) -> Shown:
    """A contact as ``Shown``, from its phone entries, fields and stored best phone."""
    fields = fields or {}
    return Shown(phones, _text(fields.get("stateProvince")), _text(fields.get("timeZone")), best)


async def _recent_calls(
    session: AsyncSession, client_id: str, numbers: Sequence[str], since: datetime, at: datetime
) -> dict[str, list[datetime]]:
    """When the client called each of ``numbers`` after ``since`` up to ``at``, by number: one
    query, the numbers as one parameter (P223), on the (client, number, called at) index."""
    found: dict[str, list[datetime]] = defaultdict(list)
    if not numbers:
        return found
    rows = await session.execute(
        select(CallOutcome.number, CallOutcome.called_at).where(
            CallOutcome.client_id == client_id,
            one_of(session, CallOutcome.number, numbers),
            CallOutcome.called_at > since,
            CallOutcome.called_at <= at,
        )
    )
    for number, called_at in rows:
        found[number].append(called_at)
    return found


async def _tallies_since(
    session: AsyncSession,
    client_id: str,
    *,
    line_types: Collection[str] | None,
    zones: Collection[str] | None,
    since: date,
) -> list[tuple[str, str, int, int, int, int]]:
    """The client's tallies from ``since`` (a local date) for these line types and zones
    (None: all of them), summed by (line type, zone, weekday, hour): (line type, zone,
    weekday, hour, calls, connects)."""
    if (line_types is not None and not line_types) or (zones is not None and not zones):
        return []
    only = []
    if line_types is not None:
        only.append(CallHourTally.line_type.in_(sorted(set(line_types))))
    if zones is not None:
        only.append(CallHourTally.time_zone.in_(sorted(set(zones))))
    rows = await session.execute(
        select(
            CallHourTally.line_type,
            CallHourTally.time_zone,
            CallHourTally.weekday,
            CallHourTally.hour,
            func.sum(CallHourTally.calls),
            func.sum(CallHourTally.connects),
        )
        .where(CallHourTally.client_id == client_id, CallHourTally.day >= since, *only)
        .group_by(
            CallHourTally.line_type,
            CallHourTally.time_zone,
            CallHourTally.weekday,
            CallHourTally.hour,
        )
    )
    return [
        (line_type, zone, int(weekday), int(hour), int(calls), int(connects))
        for line_type, zone, weekday, hour, calls, connects in rows
    ]


async def _learnt(
    session: AsyncSession, client_id: str, groups: set[tuple[str, str]] | None, since: datetime
) -> dict[tuple[str, str], CallTally]:
    """The client's calls of each (line type, zone) group from ``since`` by local weekday and
    hour, from its tallies (P194), for the groups with enough calls to learn from (of
    ``groups``; None: of all the client's)."""
    rows = await _tallies_since(
        session,
        client_id,
        line_types=None if groups is None else {line_type for line_type, _ in groups},
        zones=None if groups is None else {zone for _, zone in groups},
        since=since.date(),
    )
    counts: dict[tuple[str, str], dict[tuple[int, int], tuple[int, int]]] = defaultdict(dict)
    for line_type, zone, weekday, hour, calls, connects in rows:
        if groups is None or (line_type, zone) in groups:
            counts[(line_type, zone)][(weekday, hour)] = (calls, connects)
    return {
        group: CallTally(cells)
        for group, cells in counts.items()
        if sum(calls for calls, _ in cells.values()) >= LEARNING_MIN_CALLS
    }


# How long the batches of one job's events share the learnt counts read for the first of
# them (P209).
LEARNT_FOR: Final = timedelta(minutes=1)


class JobLearnt:
    """The client's learnt call counts (P194) shared by the batches of one job's events
    (P209): read for all the client's line types and zones by the first batch that needs
    them, and again once LEARNT_FOR old. Best hours rest on 90 days of calls, which a minute
    does not move; a job's batches then ask once instead of once each."""

    def __init__(self, client_id: str) -> None:
        self.client_id = client_id
        self._counts: dict[tuple[str, str], CallTally] = {}
        self._read_at: datetime | None = None

    async def counts(self, session: AsyncSession, at: datetime) -> dict[tuple[str, str], CallTally]:
        """The counts as of ``at``, read again when they are older than LEARNT_FOR."""
        read_at = self._read_at
        if read_at is None or not read_at <= at < read_at + LEARNT_FOR:
            self._counts = await _learnt(session, self.client_id, None, at - LEARNING_PERIOD)
            self._read_at = at
        return self._counts


async def with_verdicts(
    session: AsyncSession,
    *,
    client_id: str,
    contacts: Sequence[Shown],
    rules: Rules,
    now: datetime | None = None,
    learnt: JobLearnt | None = None,
) -> list[WithVerdicts]:
    """Each contact's phone entries with the verdict of each number as of ``now`` (the
    clock's now when not given) merged in (``timeZone``, ``callWindow``, ``callableNow``,
    ``nextCallableAt``, ``bestCallHours``: what ``present`` gives; nulls for a phone without
    a valid number), and its best phone recomputed from them (D17: among equals, one
    callable now). Calls the client reported to these numbers in the last 24 hours count
    against caps; all the client's calls of the last 90 days to lines of the same type and
    time zone teach the best hours (P194), read for these contacts, or the job's ``learnt``
    when given (P209). The entries given are not changed."""
    at = verdict_now() if now is None else now
    # First, what each phone's verdict will find: its zone (as the contact's address narrows
    # it, P171), which with its line type picks the calls that teach its best hours, and
    # whether a per-24-hour cap applies to it; None for a phone without a valid number.
    groups_of: list[list[Bearings | None]] = [
        [
            bearings(
                number,
                rules=rules,
                state_province=contact.state_province,
                time_zone=contact.time_zone,
            )
            if isinstance(number := entry.get("number"), str) and _E164.fullmatch(number)
            else None
            for entry in contact.phones
        ]
        for contact in contacts
    ]
    # The calls reported in the last 24 hours to the numbers a cap applies to (P174).
    capped = sorted(
        {
            entry["number"]
            for contact, row in zip(contacts, groups_of, strict=True)
            for entry, group in zip(contact.phones, row, strict=True)
            if group is not None and group.capped
        }
    )
    recent = await _recent_calls(session, client_id, capped, at - CAP_PERIOD, at) if capped else {}
    # Then each number's verdict, with the best hours the client's calls of its line type and
    # zone teach (P175), else the prior's.
    if learnt is not None:
        counts = await learnt.counts(session, at)
    else:
        counts = await _learnt_for(session, client_id, contacts, groups_of, at)
    # The verdicts of this call by the bearings (by identity: each is one object for as long
    # as this call holds it) and line type they were worked out from, for the numbers no cap
    # holds back: every other number with the same ones has the same verdict (the learnt
    # counts it was given follow from them).
    shared: dict[tuple[int, object], PhoneFields] = {}
    answer: list[WithVerdicts] = []
    for contact, row in zip(contacts, groups_of, strict=True):
        phones: list[dict[str, Any]] = []
        for entry, found in zip(contact.phones, row, strict=True):
            if found is None:
                phones.append({**entry, **NO_VERDICT})
                continue
            calls = recent.get(entry["number"], ()) if found.capped else ()
            key = (id(found), entry.get("type"))
            fields = None if calls else shared.get(key)
            if fields is None:
                zone = found.zone
                tally = None if zone is None else counts.get((tally_type(entry), zone))
                fields = written(
                    assess(
                        entry["number"],
                        now=at,
                        rules=rules,
                        state_province=contact.state_province,
                        time_zone=contact.time_zone,
                        line_type=entry.get("type"),
                        recent_calls=calls,
                        call_counts=tally,
                        found=found,
                    )
                )
                if not calls:
                    shared[key] = fields
            phones.append({**entry, **fields})
        best = contact.best_phone
        # A verdict only breaks ties between numbers (D17), by whether they are callable now:
        # the best phone changes only when some of the contact's numbers are and some not.
        if best is not None and len({entry["callableNow"] is True for entry in phones}) > 1:
            best = best_phone(phones) or best
        answer.append(WithVerdicts(phones, best))
    return answer


async def _learnt_for(
    session: AsyncSession,
    client_id: str,
    contacts: Sequence[Shown],
    groups_of: list[list[Bearings | None]],
    at: datetime,
) -> dict[tuple[str, str], CallTally]:
    """The learnt counts of the (line type, zone) groups of these contacts' phones (with
    their bearings, ``groups_of``)."""
    groups = {
        (tally_type(entry), found.zone)
        for contact, row in zip(contacts, groups_of, strict=True)
        for entry, found in zip(contact.phones, row, strict=True)
        if found is not None and found.zone is not None
    }
    return await _learnt(session, client_id, groups, at - LEARNING_PERIOD) if groups else {}


async def present_with_verdicts(
    session: AsyncSession,
    *,
    client_id: str,
    presented: list[dict[str, Any]],
    rules: Rules,
    now: datetime | None = None,
    learnt: JobLearnt | None = None,
) -> list[dict[str, Any]]:
    """Presented version 2 contacts (``present_contact``, made for this showing) with the
    verdicts merged into their ``phones`` and their ``bestPhone`` recomputed: the contacts
    given, each with a new list of new phone entries (the entries given, which may be a
    stored contact's, are unchanged). A contact is a dict of about a hundred keys: changed
    in place, it is not copied (a sixth of this function's time)."""
    merged = await with_verdicts(
        session,
        client_id=client_id,
        contacts=[shown(c["phones"], c, c["bestPhone"]) for c in presented],
        rules=rules,
        now=now,
        learnt=learnt,
    )
    for contact, done in zip(presented, merged, strict=True):
        contact["phones"] = done.phones
        contact["bestPhone"] = done.best_phone
    return presented
