"""The source interface and the waterfall that tries sources in the operator's order."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
) -> list[Enrichment | None]:
    """For each contact, the first source's result that brings at least one new number, in
    the given order; with ``collect_all``, the new numbers of every source (the first
    source's record named). Numbers the contact already has, or that an earlier source
    found, are dropped. Each source is asked once, for the contacts still open."""
    seen = [set(request.known) for request in requests]
    collected: list[list[Enrichment]] = [[] for _ in requests]
    for source in sources:
        open_ = [i for i in range(len(requests)) if collect_all or not collected[i]]
        if not open_:
            break
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
                collected[i].append(
                    Enrichment(tuple(new), found.record_id, found.source, found.confidence)
                )
    return [_merged(found) for found in collected]


def _merged(collected: list[Enrichment]) -> Enrichment | None:
    if not collected:
        return None
    phones = tuple(phone for found in collected for phone in found.phones)
    first = collected[0]
    return Enrichment(phones, first.record_id, first.source, first.confidence)
