"""Paid enrichment providers behind the source interface, and which of them are configured."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from dialscore.enrichment.waterfall import EnrichmentSource, FoundPhone
from dialscore.phones import DEFAULT_COUNTRY, analyse, country_or_default

if TYPE_CHECKING:
    from dialscore.config import Settings

__all__ = ["EnrichmentProvider", "enrichment_providers_from_settings", "found_phones"]


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


def enrichment_providers_from_settings(settings: Settings) -> dict[str, EnrichmentProvider]:
    """The configured providers by source name (``pdl``, ``apollo``): those with an API key."""
    from dialscore.enrichment.apollo import ApolloPeopleMatch
    from dialscore.enrichment.pdl import PeopleDataLabs

    providers: dict[str, EnrichmentProvider] = {}
    pdl_key = (settings.pdl_api_key or "").strip()
    if pdl_key:
        providers["pdl"] = PeopleDataLabs(
            pdl_key,
            base_url=settings.pdl_base_url,
            min_likelihood=settings.pdl_min_likelihood,
            max_in_flight=settings.enrichment_max_in_flight,
            rate_per_second=settings.pdl_rate_per_second,
            timeout=settings.pdl_timeout,
        )
    apollo_key = (settings.apollo_api_key or "").strip()
    if apollo_key:
        providers["apollo"] = ApolloPeopleMatch(
            apollo_key,
            base_url=settings.apollo_base_url,
            max_in_flight=settings.enrichment_max_in_flight,
            rate_per_second=settings.apollo_rate_per_second,
            timeout=settings.apollo_timeout,
        )
    return providers
