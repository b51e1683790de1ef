"""The source interface and the waterfall that tries sources in the operator's order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

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


async def run_waterfall(
    sources: Sequence[EnrichmentSource], request: EnrichmentRequest, *, collect_all: bool = False
) -> Enrichment | None:
    """The first source's result that brings at least one new number, in the given order;
    with ``collect_all``, the new numbers of every source (the first source's record named).
    Numbers the contact already has, or that an earlier source found, are dropped."""
    seen = set(request.known)
    collected: list[Enrichment] = []
    for source in sources:
        found = await source.find(request)
        if found is None:
            continue
        new = []
        for phone in found.phones:
            if phone.number not in seen:
                seen.add(phone.number)
                new.append(phone)
        if not new:
            continue
        found = Enrichment(tuple(new), found.record_id, found.source, found.confidence)
        if not collect_all:
            return found
        collected.append(found)
    if not collected:
        return None
    phones = tuple(phone for found in collected for phone in found.phones)
    first = collected[0]
    return Enrichment(phones, first.record_id, first.source, first.confidence)
