"""Enrichment use cases: the operator's waterfall of sources and the paid providers in it,
built from settings."""

from __future__ import annotations

from collections.abc import Mapping

from dialscore.config import Settings
from dialscore.enrichment.apollo import ApolloPeopleMatch
from dialscore.enrichment.pdl import PeopleDataLabs
from dialscore.enrichment.providers import EnrichmentProvider
from dialscore.enrichment.sources import DirectorySource, HistorySource
from dialscore.enrichment.waterfall import EnrichmentSource
from dialscore.kit.db import Database
from dialscore.kit.paced_http import Pacing

OWN_SOURCES = ("history", "directory")


def source_names(settings: Settings) -> list[str]:
    return [name.strip() for name in settings.enrichment_sources.split(",") if name.strip()]


PROVIDER_SOURCES = ("pdl", "apollo")


def check_source_names(settings: Settings) -> None:
    """Refuses a name that is no source at all, so that a typo does not silently drop one."""
    known = {*OWN_SOURCES, *PROVIDER_SOURCES}
    for name in source_names(settings):
        if name not in known:
            raise ValueError(
                f"DIALSCORE_ENRICHMENT_SOURCES: unknown source {name!r} "
                f"(known: {', '.join(sorted(known))})"
            )


def sources_from_settings(
    settings: Settings, db: Database, providers: Mapping[str, EnrichmentSource]
) -> list[EnrichmentSource]:
    """The sources in the operator's order; a provider without its settings is left out."""
    check_source_names(settings)
    sources: list[EnrichmentSource] = []
    for name in source_names(settings):
        if name == "history":
            sources.append(HistorySource(db, settings.enrichment_min_confidence))
        elif name == "directory":
            sources.append(DirectorySource(db, settings.enrichment_min_confidence))
        elif name in providers:
            sources.append(providers[name])
    return sources


def enrichment_providers_from_settings(settings: Settings) -> dict[str, EnrichmentProvider]:
    """The configured providers by source name (``pdl``, ``apollo``): those with an API key."""
    providers: dict[str, EnrichmentProvider] = {}
    pdl_key = (settings.pdl_api_key or "").strip()
    if pdl_key:
        providers["pdl"] = PeopleDataLabs(
            pdl_key,
            base_url=settings.pdl_base_url,
            min_likelihood=settings.pdl_min_likelihood,
            pacing=Pacing(
                max_in_flight=settings.enrichment_max_in_flight,
                rate_per_second=settings.pdl_rate_per_second,
                timeout=settings.pdl_timeout,
            ),
        )
    apollo_key = (settings.apollo_api_key or "").strip()
    if apollo_key:
        providers["apollo"] = ApolloPeopleMatch(
            apollo_key,
            base_url=settings.apollo_base_url,
            pacing=Pacing(
                max_in_flight=settings.enrichment_max_in_flight,
                rate_per_second=settings.apollo_rate_per_second,
                timeout=settings.apollo_timeout,
            ),
        )
    return providers
