"""What a paid enrichment provider is (a source that holds connections), and how the numbers
it found are read."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

import structlog

from dialscore.enrichment.waterfall import Enrichment, EnrichmentSource, FoundPhone
from dialscore.phones import DEFAULT_COUNTRY, analyse, country_or_default

log = structlog.get_logger(__name__)


class EnrichmentProvider(EnrichmentSource, Protocol):
    """A source that holds connections: close it when done."""

    async def close(self) -> None: ...


def found_phones(
    numbers: Iterable[tuple[object, str | None]], region: str = DEFAULT_COUNTRY
) -> tuple[tuple[FoundPhone, ...], int]:
    """A provider's numbers as E.164, each once (its first type hint kept), and how many were
    left out for not being a valid number. A number without '+' is read in ``region``."""
    phones: dict[str, FoundPhone] = {}
    unusable = 0
    for raw, type_hint in numbers:
        if not isinstance(raw, str) or not raw.strip():
            continue
        number = analyse(raw.strip(), country_or_default(region))
        if number is None:
            unusable += 1
        elif number.e164 not in phones:
            phones[number.e164] = FoundPhone(number.e164, type_hint)
    return tuple(phones.values()), unusable


def provider_enrichment(
    provider: str,
    *,
    contact_id: str | None,
    numbers: Iterable[tuple[object, str | None]],
    region: str,
    record: object,
    confidence: float = 1.0,
) -> Enrichment | None:
    """What a provider's answer becomes, the same for every provider: its numbers as E.164
    (``found_phones``), the record it matched as ``provider:id``, or None when it gave no
    usable number. Numbers left out are logged."""
    phones, unusable = found_phones(numbers, region)
    if unusable:
        log.info(
            "provider_numbers_unusable", provider=provider, contact_id=contact_id, count=unusable
        )
    if not phones:
        log.debug("provider_no_numbers", provider=provider, contact_id=contact_id)
        return None
    record_id = f"{provider}:{record}" if isinstance(record, str) and record else None
    return Enrichment(phones, record_id, provider, confidence)
