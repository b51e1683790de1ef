"""Scoring use cases: gather the evidence for a batch of contacts in a few queries, verify
numbers with the configured providers (core scoring), and score with the pure engine."""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from typing import Any

import structlog
from sqlalchemy import Select
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.identity.keys import (
    Person,
    company_identity_key,
    person_from_fields,
    person_name_key,
)
from dialscore.kit.clock import utcnow
from dialscore.scoring import repository as repo
from dialscore.scoring.engine import DAY, ContactScore, score_parsed, tally_calls
from dialscore.scoring.evidence import (
    NO_EVIDENCE,
    Call,
    NumberEvidence,
    ReassignedCheck,
    Verification,
)
from dialscore.scoring.lines import NO_SCALE, RateScale
from dialscore.scoring.numbers import (
    EnrichedNumber,
    ParsedPhone,
    parse_contact_phones,
)
from dialscore.scoring.providers import VerificationProvider
from dialscore.scoring.reassigned import ReassignedNumbers

log = structlog.get_logger(__name__)

NO_PROVIDER_NOTE = "core scoring: no verification provider is configured, scored as lightning"
UNVERIFIED_NOTE = "core scoring: no provider could verify this number, scored as lightning"

# The client's calls its rate scale is learnt from (P90): those of the last year, to its most
# recently called numbers.
CALIBRATION_DAYS = 365
CALIBRATION_NUMBERS = 1000
# How long a worker process uses a client's rate scale before it measures it again.
RATE_SCALE_MAX_AGE = 60.0

# The widths of contact_numbers.company_key and person_key.
COMPANY_KEY_COLUMN_WIDTH = 200
PERSON_KEY_COLUMN_WIDTH = 400


def _bounded(key: str, limit: int) -> str:
    """The key itself when it fits its column, else a digest of it (same key, same digest)."""
    if len(key) <= limit:
        return key
    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()


def company_key(fields: Mapping[str, Any]) -> str | None:
    """The contact's company as ``contact_numbers.company_key`` keeps it: its identity
    (``identity.keys.company_identity_key``: its name without legal suffixes, else its
    website's or work email's domain, else its LinkedIn page)."""
    return number_keys(fields)[0]


def person_key(fields: Mapping[str, Any]) -> str:
    """The contact's name as ``contact_numbers.person_key`` keeps it: its folded words."""
    return number_keys(fields)[1]


def number_keys(fields: Mapping[str, Any]) -> tuple[str | None, str]:
    """``(company_key, person_key)`` of a contact, from one reading of its fields."""
    return _number_keys(person_from_fields(fields))


def _number_keys(person: Person) -> tuple[str | None, str]:
    company = company_identity_key(person)
    return (
        None if company is None else _bounded(company, COMPANY_KEY_COLUMN_WIDTH),
        _bounded(person_name_key(person), PERSON_KEY_COLUMN_WIDTH),
    )


@dataclass(frozen=True)
class ScoringItem:
    """A contact to score: its id, its fields and its parsed numbers."""

    contact_id: str
    fields: Mapping[str, Any]
    phones: Sequence[ParsedPhone]

    @functools.cached_property
    def person(self) -> Person:
        """The contact's fields read as a person, once: its keys of every kind come from it."""
        return person_from_fields(self.fields)

    @functools.cached_property
    def keys(self) -> tuple[str | None, str]:
        """``(company_key, person_key)``, read once: indexing and evidence both ask."""
        return _number_keys(self.person)


def item(
    contact_id: str, fields: Mapping[str, Any], enriched: Sequence[EnrichedNumber] = ()
) -> ScoringItem:
    return ScoringItem(contact_id, fields, parse_contact_phones(dict(fields), enriched))


def carried_numbers(client_id: str, items: Sequence[ScoringItem]) -> list[dict[str, Any]]:
    """The rows ``index_numbers`` records for these contacts: each number a contact carries,
    with its company and person keys. Pure, so that a job works them out before the
    transaction that writes them (P210)."""
    rows: list[dict[str, Any]] = []
    for it in items:
        numbers = dict.fromkeys(p.e164 for p in it.phones if p.e164 is not None)
        if not numbers:
            continue
        company, person = it.keys
        rows += [
            {
                "contact_id": it.contact_id,
                "number": number,
                "client_id": client_id,
                "company_key": company,
                "person_key": person,
            }
            for number in numbers
        ]
    return rows


async def index_numbers(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    """Records the numbers contacts carry (``carried_numbers``), for switchboard evidence
    (idempotent)."""
    await repo.index_contact_numbers(session, rows)


async def forget_contacts(session: AsyncSession, contact_ids: Select[str]) -> None:
    """Forgets what these contacts told of their people (the numbers they carried, and so
    who they were), in the caller's transaction (P132). The calls the client reported for
    them stay its calls, with the contact id it gave: a call reported for a contact no longer
    known is about no one known, so it says only that the line is alive, never something
    about whoever carries the number now (P71), as it would once unlinked."""
    await repo.forget_contacts(session, contact_ids)


async def verify(
    verifiers: Sequence[VerificationProvider], numbers: Sequence[str]
) -> dict[str, Verification]:
    """Each provider's answers, the first provider that answered for a number winning."""
    found: dict[str, Verification] = {}
    for verifier in verifiers:
        missing = [n for n in numbers if n not in found]
        if not missing:
            break
        try:
            answers = await verifier.verify(missing)
        except Exception:
            log.exception("verification provider failed", provider=verifier.name)
            continue
        for number, answer in answers.items():
            found.setdefault(number, answer)
    return found


# Where a contact's consent date comes: a field the spec does not have, kept in
# ``unmappedFields`` (P190).
CONSENT_DATE_FIELD = "consentDate"
# Per contact id, per E.164 number: what the Reassigned Numbers Database said (P190).
ReassignedChecks = Mapping[str, Mapping[str, ReassignedCheck]]


def consent_date(unmapped: Mapping[str, Any]) -> date | str | None:
    """The contact's consent date: a date, the value given when it is no ISO date
    (``YYYY-MM-DD``), or None when it gave none (P190)."""
    value = unmapped.get(CONSENT_DATE_FIELD)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip())
        except ValueError:
            pass
    return value if isinstance(value, str) else repr(value)


def _rnd_numbers(phones: Sequence[ParsedPhone]) -> list[str]:
    """The numbers the Reassigned Numbers Database knows: US numbers of the NANP."""
    numbers = (p.e164 for p in phones if p.country == "US")
    return list(dict.fromkeys(n for n in numbers if n is not None and n.startswith("+1")))


async def check_reassigned(
    checker: ReassignedNumbers | None,
    items: Sequence[ScoringItem],
    consent: Mapping[str, Mapping[str, Any]],
) -> dict[str, dict[str, ReassignedCheck]]:
    """The Reassigned Numbers Database's answer for each US number of each contact with a
    consent date (``consent``: unmapped fields by contact id), each distinct (number, date)
    asked once. Nothing when it is not configured; a contact whose consent date is no date
    is not asked about, and says so; when the database cannot answer at all, its numbers
    are scored without it and say so (P192)."""
    if checker is None:
        return {}
    wanted: dict[str, tuple[date | str, list[str]]] = {}
    for it in items:
        since = consent_date(consent.get(it.contact_id, {}))
        numbers = _rnd_numbers(it.phones) if since is not None else []
        if since is not None and numbers:
            wanted[it.contact_id] = (since, numbers)
    queries = [
        (number, since)
        for since, numbers in wanted.values()
        if isinstance(since, date)
        for number in numbers
    ]
    answers: dict[tuple[str, date], str] = {}
    if queries:
        try:
            answers = await checker.check(queries)
        except Exception:
            log.exception("reassigned numbers database failed", provider=checker.name)
    checks: dict[str, dict[str, ReassignedCheck]] = {}
    for contact_id, (since, numbers) in wanted.items():
        if isinstance(since, date):
            day = since.isoformat()
            checks[contact_id] = {n: ReassignedCheck(day, answers.get((n, since))) for n in numbers}
        else:
            checks[contact_id] = {n: ReassignedCheck(since, date_valid=False) for n in numbers}
    return checks


def _nanp_prefixes(number: str) -> tuple[str, str] | None:
    if number.startswith("+1") and len(number) == 12:
        national = number[2:]
        return national[:6], national[:7]
    return None


async def _number_evidence(
    session: AsyncSession,
    client_id: str,
    numbers: Collection[str],
    verifications: Mapping[str, Verification],
) -> tuple[dict[str, NumberEvidence], dict[str, list[repo.CallRecordRow]]]:
    """The evidence of each number as anyone sees it (its calls about no one in particular),
    and its reported calls as the repository gave them."""
    prefixes = {prefix for n in numbers for prefix in (_nanp_prefixes(n) or ())}
    blocks = await repo.block_categories(session, prefixes)
    listed = await repo.dnc_lists(session, {int(n[1:]) for n in numbers})
    freshness = await repo.dnc_list_freshness(session) if listed else {}
    today = utcnow().date()
    lines = await repo.company_lines(session, numbers)
    history = await repo.outcomes_for(session, client_id, numbers)
    base: dict[str, NumberEvidence] = {}
    for number in numbers:
        nanp = _nanp_prefixes(number)
        block = None
        if nanp is not None:
            block = blocks.get(nanp[1]) or blocks.get(nanp[0])
        calls = tuple(
            Call(row.outcome, row.called_at.timestamp(), row.ivr_path, named=bool(row.contact_id))
            for row in history.get(number, ())
        )
        lists = tuple(sorted(listed.get(int(number[1:]), ())))
        base[number] = NumberEvidence(
            block=block,
            dnc_lists=lists,
            dnc_file_ages=tuple(
                (name, (today - freshness[name].file_date).days)
                for name in lists
                if name in freshness
            ),
            calls=calls,
            company_line=number in lines,
            directory_ivr_path=lines.get(number),
            verification=verifications.get(number),
        )
    return base, history


async def evidence_for(
    session: AsyncSession,
    client_id: str,
    items: Sequence[ScoringItem],
    verifications: Mapping[str, Verification] | None = None,
    reassigned: ReassignedChecks | None = None,
) -> list[dict[str, NumberEvidence]]:
    """The evidence per number for each item: five queries per 500 numbers (one per kind of
    evidence), whatever the number of contacts. ``reassigned`` adds the Reassigned Numbers
    Database's answers, per contact id and number."""
    numbers = {p.e164 for it in items for p in it.phones if p.e164 is not None}
    if not numbers:
        return [{} for _ in items]
    base, history = await _number_evidence(session, client_id, numbers, verifications or {})
    named = {row.contact_id for rows in history.values() for row in rows if row.contact_id}
    callees = await repo.person_keys(session, named) if named else {}
    carriers = await repo.carriers_per_number(session, client_id, numbers)
    out = []
    for it in items:
        company, person = it.keys
        per_number = {}
        for phone in it.phones:
            if phone.e164 is None:
                continue
            evidence = base.get(phone.e164, NO_EVIDENCE)
            rows = history.get(phone.e164, ())
            if any(row.contact_id in callees or row.contact_id == it.contact_id for row in rows):
                calls = _as_seen_by(it.contact_id, person, rows, callees)
                evidence = replace(evidence, calls=calls)
            groups = carriers.get(phone.e164, ())
            if company is not None:
                others = next((g.people for g in groups if g.company == company), 0) - 1
                if others > 0:
                    evidence = replace(evidence, shared_with=others)
            if _carried_by_others(groups, it.contact_id, person):
                evidence = replace(evidence, carried_by_others=True)
            check = (reassigned or {}).get(it.contact_id, {}).get(phone.e164)
            if check is not None:
                evidence = replace(evidence, reassigned=check)
            per_number[phone.e164] = evidence
        out.append(per_number)
    return out


def _carried_by_others(groups: Sequence[repo.Carriers], contact_id: str, person: str) -> bool:
    """Whether anyone but this person carries the number in the client's data: someone of
    another name, or, for a contact without a name, any other contact (D28)."""
    for group in groups:
        if group.people > 1 or group.some_person != person:
            return True
        if not person and (group.contacts > 1 or group.some_contact != contact_id):
            return True
    return False


def _as_seen_by(
    contact_id: str, person: str, rows: Sequence[repo.CallRecordRow], callees: Mapping[str, str]
) -> tuple[Call, ...]:
    """A number's calls, each marked as about this person ("same"), about someone else
    ("other") or about no one known (None): by the contact they were reported for, this one
    or one of the same name."""
    calls = []
    for row in rows:
        callee = callees.get(row.contact_id or "")
        about = None if not callee or not person else ("same" if callee == person else "other")
        if row.contact_id == contact_id:
            about = "same"
        at = row.called_at.timestamp()
        calls.append(Call(row.outcome, at, row.ivr_path, about, named=bool(row.contact_id)))
    return tuple(calls)


async def rate_scale(session: AsyncSession, client_id: str, *, now: float) -> RateScale:
    """The factors for the line types' live rates that the client's own calls support (P90,
    P212): what the calls to its most recently called numbers connected against what the
    model expected of each from the calls before it, mobiles apart from other lines. 1 for a
    client without calls."""
    since = datetime.fromtimestamp(now - CALIBRATION_DAYS * DAY, UTC)
    numbers = await repo.recently_called(session, client_id, since=since, limit=CALIBRATION_NUMBERS)
    if not numbers:
        return NO_SCALE
    evidence, _ = await _number_evidence(session, client_id, numbers, {})
    return tally_calls(((n, evidence[n]) for n in numbers), now).scale()


class RateScales:
    """Each client's rate scale (P90), measured at most once per ``max_age`` seconds (by
    ``clock``) in this process: a measure reads the client's recent calls, about 150 ms for
    a client with a few hundred thousand of them."""

    def __init__(
        self, max_age: float = RATE_SCALE_MAX_AGE, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_age = max_age
        self._clock = clock
        self._measured: dict[str, tuple[RateScale, float]] = {}

    async def of(self, session: AsyncSession, client_id: str, *, now: float) -> RateScale:
        at = self._clock()
        known = self._measured.get(client_id)
        if known is not None and at - known[1] < self.max_age:
            return known[0]
        scale = await rate_scale(session, client_id, now=now)
        self._measured[client_id] = (scale, at)
        return scale


async def score_items(
    session: AsyncSession,
    client_id: str,
    items: Sequence[ScoringItem],
    *,
    now: float,
    rate_scale: RateScale = NO_SCALE,
    core: bool = False,
    verifications: Mapping[str, Verification] | None = None,
    verifiers: Sequence[VerificationProvider] = (),
    reassigned: ReassignedChecks | None = None,
) -> list[ContactScore]:
    """Scores a batch: the evidence in a few queries, then the pure engine per contact."""
    evidence = await evidence_for(session, client_id, items, verifications, reassigned)
    notes: dict[str, tuple[str, ...]] = {}
    if core:
        verified = verifications or {}
        for number in {p.e164 for it in items for p in it.phones if p.e164 is not None}:
            if not verifiers:
                notes[number] = (NO_PROVIDER_NOTE,)
            elif number not in verified or (
                # Valid but of a type unknown to the provider too: scored as lightning.
                verified[number].valid and verified[number].line_type == "unknown"
            ):
                notes[number] = (UNVERIFIED_NOTE,)
    return [
        score_parsed(it.phones, ev, now, notes, rate_scale=rate_scale)
        for it, ev in zip(items, evidence, strict=True)
    ]
