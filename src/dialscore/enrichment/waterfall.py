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
    """The first source's result that carries at least one number, in the given order; with
    ``collect_all``, every source's numbers together (first source's record named)."""
    collected: list[Enrichment] = []
    for source in sources:
        found = await source.find(request)
        if found is not None and found.phones:
            if not collect_all:
                return found
            collected.append(found)
    if not collected:
        return None
    phones = tuple(phone for found in collected for phone in found.phones)
    first = collected[0]
    return Enrichment(phones, first.record_id, first.source, first.confidence)
