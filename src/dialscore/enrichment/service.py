"""Enrichment use cases: the operator's waterfall of sources, built from settings."""

from __future__ import annotations

from collections.abc import Mapping

from dialscore.config import Settings
from dialscore.enrichment.sources import DirectorySource, HistorySource
from dialscore.enrichment.waterfall import EnrichmentSource
from dialscore.kit.db import Database

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
