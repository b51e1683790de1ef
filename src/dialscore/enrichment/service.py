"""Enrichment use cases: the operator's waterfall of sources and the paid providers in it,
built from settings."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from dialscore.config import Settings
from dialscore.enrichment.apollo import ApolloPeopleMatch
from dialscore.enrichment.pdl import PeopleDataLabs
from dialscore.enrichment.providers import EnrichmentProvider
from dialscore.enrichment.sources import DirectorySource, HistorySource
from dialscore.enrichment.waterfall import EnrichmentSource
from dialscore.kit.db import Database
from dialscore.kit.paced_http import Pacing

# -- the registry of sources: name -> how one is made from the settings -----------------------

# A source of the client's own data, made for a database.
OwnSourceMaker = Callable[[Settings, Database], EnrichmentSource]
# A paid provider over HTTP, made from its settings; None when they do not enable it (no API
# key). It holds connections: whoever made it closes it.
ProviderMaker = Callable[[Settings], EnrichmentProvider | None]


def _history(settings: Settings, db: Database) -> EnrichmentSource:
    return HistorySource(db, settings.enrichment_min_confidence)


def _directory(settings: Settings, db: Database) -> EnrichmentSource:
    return DirectorySource(db, settings.enrichment_min_confidence)


def _pacing(settings: Settings, rate_per_second: float, timeout: float) -> Pacing:
    return Pacing(
        max_in_flight=settings.enrichment_max_in_flight,
        rate_per_second=rate_per_second,
        timeout=timeout,
    )


def _pdl(settings: Settings) -> EnrichmentProvider | None:
    key = (settings.pdl_api_key or "").strip()
    if not key:
        return None
    return PeopleDataLabs(
        key,
        base_url=settings.pdl_base_url,
        min_likelihood=settings.pdl_min_likelihood,
        pacing=_pacing(settings, settings.pdl_rate_per_second, settings.pdl_timeout),
    )


def _apollo(settings: Settings) -> EnrichmentProvider | None:
    key = (settings.apollo_api_key or "").strip()
    if not key:
        return None
    return ApolloPeopleMatch(
        key,
        base_url=settings.apollo_base_url,
        pacing=_pacing(settings, settings.apollo_rate_per_second, settings.apollo_timeout),
    )


# Every source DIALSCORE_ENRICHMENT_SOURCES may name, by name: a new source is one entry here.
OWN_SOURCES: Final[Mapping[str, OwnSourceMaker]] = {"history": _history, "directory": _directory}
PROVIDERS: Final[Mapping[str, ProviderMaker]] = {"pdl": _pdl, "apollo": _apollo}


def source_names(settings: Settings) -> list[str]:
    return [name.strip() for name in settings.enrichment_sources.split(",") if name.strip()]


def check_source_names(settings: Settings) -> None:
    """Refuses a name that is no source at all, so that a typo does not silently drop one."""
    known = {*OWN_SOURCES, *PROVIDERS}
    for name in source_names(settings):
        if name not in known:
            raise ValueError(
                f"DIALSCORE_ENRICHMENT_SOURCES: unknown source {name!r} "
                f"(known: {', '.join(sorted(known))})"
            )


def sources_from_settings(
    settings: Settings, db: Database, providers: Mapping[str, EnrichmentSource]
) -> list[EnrichmentSource]:
    """The sources in the operator's order: the client's own made now, the providers from
    ``providers`` (those made, by name); a provider without its settings is left out."""
    check_source_names(settings)
    sources: list[EnrichmentSource] = []
    for name in source_names(settings):
        own = OWN_SOURCES.get(name)
        if own is not None:
            sources.append(own(settings, db))
        elif name in providers:
            sources.append(providers[name])
    return sources


def enrichment_providers_from_settings(settings: Settings) -> dict[str, EnrichmentProvider]:
    """The configured providers by source name (``pdl``, ``apollo``): those with an API key."""
    made = {name: make(settings) for name, make in PROVIDERS.items()}
    return {name: provider for name, provider in made.items() if provider is not None}
