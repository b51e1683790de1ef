"""The enrichment sources report worked out from what was read (P205): per source, and per
whether it was a provider called with the client's own key, the contacts it was asked about
and found numbers for, the credits the contacts it is named for were charged and refunded,
and how the numbers of those contacts did when called. Pure: no database, no clock."""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import NamedTuple

from dialscore.accounts.refunds import refund_amount
from dialscore.accuracy.report import ReportedCall

# A row of the report: a source's name and whether it was called with the client's own key.
RowKey = tuple[str, bool]


class Tally(NamedTuple):
    """What one source was asked and found for one job (``enrichment_tallies``)."""

    job_id: str
    source: str
    own_key: bool
    tried: int
    hits: int
    named: int


@dataclass(frozen=True)
class JobCredits:
    """An enrichment job of the period, still kept, and its rows of the credit ledger."""

    job_id: str
    accepted: int
    # Contacts enrichment found no new number for (rejected).
    unfound: int
    # Its charge at submission, as a positive amount; 0 when it was charged nothing.
    charged: Decimal = Decimal(0)
    # Its refunds: of the contacts nothing was found for, and of those found with the
    # client's own provider keys.
    refunded_unfound: Decimal = Decimal(0)
    refunded_own_key: Decimal = Decimal(0)

    def price_of(self, contacts: int) -> Decimal:
        """What ``contacts`` of its contacts were charged: the price per contact (its charge
        over its accepted contacts, exact) times ``contacts``, as a refund gives it back."""
        if self.accepted <= 0:
            return Decimal(0)
        return refund_amount(self.charged, contacts, self.accepted)


class EnrichedContact(NamedTuple):
    """A contact of a job of the period that enrichment found numbers for: the source it is
    named for, when it was scored (None: not yet) and the numbers enrichment added to it."""

    source: str
    own_key: bool
    scored_at: datetime | None
    numbers: tuple[str, ...]


@dataclass(frozen=True)
class SourceFigures:
    source: str
    own_key: bool
    tried: int
    hits: int
    named: int
    credits_charged: Decimal
    credits_refunded: Decimal
    numbers: int
    calls: int
    connects: int

    @property
    def hit_rate(self) -> float | None:
        return self.hits / self.tried if self.tried else None

    @property
    def connect_rate(self) -> float | None:
        return self.connects / self.calls if self.calls else None


@dataclass(frozen=True)
class SourcesReport:
    since: datetime
    until: datetime
    # The sources a job of the client tries now, in order.
    order: tuple[str, ...]
    sources: tuple[SourceFigures, ...]
    # The period's jobs kept: how many, their accepted contacts and their charges.
    jobs: int
    contacts: int
    credits_charged: Decimal
    # Every refund of those jobs: of the contacts nothing was found for, and own-key ones.
    credits_refunded: Decimal
    unfound_contacts: int
    unfound_refunded: Decimal

    def source(self, name: str, own_key: bool = False) -> SourceFigures | None:
        return next((s for s in self.sources if s.source == name and s.own_key == own_key), None)


@dataclass
class _Row:
    tried: int = 0
    hits: int = 0
    named: int = 0
    charged: Decimal = Decimal(0)
    refunded: Decimal = Decimal(0)
    numbers: set[str] = field(default_factory=set)
    calls: int = 0
    connects: int = 0


def build_sources_report(
    *,
    since: datetime,
    until: datetime,
    order: Sequence[str],
    tallies: Iterable[Tally],
    jobs: Iterable[JobCredits],
    contacts: Iterable[EnrichedContact],
    calls: Iterable[ReportedCall],
) -> SourcesReport:
    """The report of the period's jobs. ``tallies`` are every job's of the period, erased
    ones included; ``jobs`` those still kept, whose credits are split among the sources by
    the contacts each is named for; ``contacts`` given in the order they were scored (a
    job's in its order), and ``calls`` the client's to their numbers."""
    kept = {job.job_id: job for job in jobs}
    rows: defaultdict[RowKey, _Row] = defaultdict(_Row)
    for tally in tallies:
        row = rows[(tally.source, tally.own_key)]
        row.tried += tally.tried
        row.hits += tally.hits
        row.named += tally.named
        job = kept.get(tally.job_id)
        if job is None:
            continue  # erased: its accepted contacts, hence its price, are gone
        paid = job.price_of(tally.named)
        row.charged += paid
        # A contact found with the client's own key is refunded in full, once its job
        # finished and wrote the refund.
        if tally.own_key and job.refunded_own_key > 0:
            row.refunded += paid
    _count_calls(rows, contacts, calls)
    figures = [
        SourceFigures(
            source=source,
            own_key=own_key,
            tried=row.tried,
            hits=row.hits,
            named=row.named,
            credits_charged=row.charged,
            credits_refunded=row.refunded,
            numbers=len(row.numbers),
            calls=row.calls,
            connects=row.connects,
        )
        for (source, own_key), row in rows.items()
    ]
    figures.sort(key=_place_in(order))
    unfound_refunded = sum((job.refunded_unfound for job in kept.values()), Decimal(0))
    own_key_refunded = sum((job.refunded_own_key for job in kept.values()), Decimal(0))
    return SourcesReport(
        since=since,
        until=until,
        order=tuple(order),
        sources=tuple(figures),
        jobs=len(kept),
        contacts=sum(job.accepted for job in kept.values()),
        credits_charged=sum((job.charged for job in kept.values()), Decimal(0)),
        credits_refunded=unfound_refunded + own_key_refunded,
        unfound_contacts=sum(job.unfound for job in kept.values()),
        unfound_refunded=unfound_refunded,
    )


def _place_in(order: Sequence[str]) -> Callable[[SourceFigures], tuple[int, str, bool]]:
    """The sort key of rows: the sources in ``order``, then any other seen by name; a
    source's row with the operator's key before the one with the client's own."""
    position = {name: index for index, name in enumerate(order)}

    def key(figures: SourceFigures) -> tuple[int, str, bool]:
        return position.get(figures.source, len(position)), figures.source, figures.own_key

    return key


def _count_calls(
    rows: defaultdict[RowKey, _Row],
    contacts: Iterable[EnrichedContact],
    calls: Iterable[ReportedCall],
) -> None:
    """Each row's numbers, and the calls to them: a call counts once, for the contact
    carrying its number that was scored most recently at or before it (of two scored at the
    same instant, the later one given), so for that contact's source. Calls made before
    every such contact was scored count nowhere."""
    # Per number, the instants its contacts were scored and their rows, in time order.
    timelines: dict[str, tuple[list[datetime], list[RowKey]]] = {}
    for contact in contacts:
        key = (contact.source, contact.own_key)
        row = rows[key]
        row.numbers.update(contact.numbers)
        if contact.scored_at is None:
            continue
        for number in contact.numbers:
            times, keys = timelines.setdefault(number, ([], []))
            at = bisect_right(times, contact.scored_at)
            times.insert(at, contact.scored_at)
            keys.insert(at, key)
    for call in calls:
        timeline = timelines.get(call.number)
        if timeline is None:
            continue
        times, keys = timeline
        at = bisect_right(times, call.called_at) - 1
        if at < 0:
            continue
        row = rows[keys[at]]
        row.calls += 1
        row.connects += call.connected


def called_numbers(contacts: Iterable[EnrichedContact]) -> tuple[set[str], datetime | None]:
    """The numbers whose calls a report reads, and the earliest instant a call to one can
    count from (None: no contact scored yet, so no call counts)."""
    numbers: set[str] = set()
    earliest: datetime | None = None
    for contact in contacts:
        if contact.scored_at is None:
            continue
        numbers.update(contact.numbers)
        if earliest is None or contact.scored_at < earliest:
            earliest = contact.scored_at
    return numbers, earliest
