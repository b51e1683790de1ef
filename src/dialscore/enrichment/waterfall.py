"""The source interface and the waterfall that tries sources in the operator's order."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

NO_DATA_FOUND = "no additional contact data found"


@dataclass(frozen=True)
class EnrichmentRequest:
    """The contact to enrich: who asks (sources never mix clients' data) and its fields."""

    client_id: str
    contact_id: str
    fields: Mapping[str, Any]
    # The contact's own numbers (E.164): found again, they are not new (D19).
    known: frozenset[str] = frozenset()


@dataclass(frozen=True)
class FoundPhone:
    number: str  # E.164
    type_hint: str | None = None  # mobile | direct | hq | other, when the source says


@dataclass(frozen=True)
class Enrichment:
    phones: tuple[FoundPhone, ...]
    # The matched record, shown as the contact's enrichmentContactId.
    record_id: str | None
    source: str
    confidence: float = 1.0
    # Every number came through the client's own key for a provider: the contact costs the
    # client nothing (P204).
    own_key: bool = False


class EnrichmentSource(Protocol):
    name: str

    async def find(self, request: EnrichmentRequest) -> Enrichment | None:
        """The matched person's numbers, or None when the source knows no match. Must not
        raise for one contact (log and return None); may raise when the source is down."""
        ...


@runtime_checkable
class BatchSource(EnrichmentSource, Protocol):
    """A source that looks up many contacts at once (one query for a batch, not one each)."""

    async def find_many(self, requests: Sequence[EnrichmentRequest]) -> list[Enrichment | None]:
        """``find`` for each request, in order."""
        ...


class OwnKeySource:
    """A provider called with the client's own API key (P204): what it finds is marked so."""

    def __init__(self, source: EnrichmentSource) -> None:
        self.source = source
        self.name = source.name

    async def find(self, request: EnrichmentRequest) -> Enrichment | None:
        (found,) = await self.find_many([request])
        return found

    async def find_many(self, requests: Sequence[EnrichmentRequest]) -> list[Enrichment | None]:
        answers = await find_many(self.source, requests)
        return [None if found is None else replace(found, own_key=True) for found in answers]


@dataclass
class SourceCounts:
    """What one source was asked and found (P205)."""

    tried: int = 0  # contacts it was asked about
    hits: int = 0  # contacts it found at least one new number for
    named: int = 0  # contacts it is named for: what their charge paid for


# Counts by source name and whether it was called with the client's own key.
Tally = dict[tuple[str, bool], SourceCounts]


def _counts(tally: Tally, source: str, own_key: bool) -> SourceCounts:
    return tally.setdefault((source, own_key), SourceCounts())


async def find_many(
    source: EnrichmentSource, requests: Sequence[EnrichmentRequest]
) -> list[Enrichment | None]:
    """The source's answers for the requests, in order: in one call when it looks up
    batches, else concurrently (an HTTP provider paces its own requests)."""
    if isinstance(source, BatchSource):
        return await source.find_many(requests)
    return list(await asyncio.gather(*(source.find(request) for request in requests)))


async def run_waterfall(
    sources: Sequence[EnrichmentSource], request: EnrichmentRequest, *, collect_all: bool = False
) -> Enrichment | None:
    """``run_waterfall_many`` for one contact."""
    (found,) = await run_waterfall_many(sources, [request], collect_all=collect_all)
    return found


async def run_waterfall_many(
    sources: Sequence[EnrichmentSource],
    requests: Sequence[EnrichmentRequest],
    *,
    collect_all: bool = False,
    tally: Tally | None = None,
) -> list[Enrichment | None]:
    """For each contact, the first source's result that brings at least one new number, in
    the given order; with ``collect_all``, the new numbers of every source (the first
    source's record shown). Numbers the contact already has, or that an earlier source
    found, are dropped. Each source is asked once, for the contacts still open. ``tally``,
    when given, has each source's counts added to it."""
    seen = [set(request.known) for request in requests]
    collected: list[list[Enrichment]] = [[] for _ in requests]
    tally = {} if tally is None else tally
    for source in sources:
        open_ = [i for i in range(len(requests)) if collect_all or not collected[i]]
        if not open_:
            break
        counts = _counts(tally, source.name, isinstance(source, OwnKeySource))
        counts.tried += len(open_)
        answers = await find_many(source, [requests[i] for i in open_])
        for i, found in zip(open_, answers, strict=True):
            if found is None:
                continue
            new = []
            for phone in found.phones:
                if phone.number not in seen[i]:
                    seen[i].add(phone.number)
                    new.append(phone)
            if new:
                collected[i].append(replace(found, phones=tuple(new)))
                counts.hits += 1
    merged = [_merged(found) for found in collected]
    for found in merged:
        if found is not None:
            _counts(tally, found.source, found.own_key).named += 1
    return merged


def _merged(collected: list[Enrichment]) -> Enrichment | None:
    """One contact's findings as one: the first source's record, and named for the first
    source that found a number the client pays for; free (``own_key``) only when every new
    number came through the client's own keys."""
    if not collected:
        return None
    phones = tuple(phone for found in collected for phone in found.phones)
    paid = [found for found in collected if not found.own_key]
    named = paid[0] if paid else collected[0]
    first = collected[0]
    return Enrichment(phones, first.record_id, named.source, first.confidence, not paid)
