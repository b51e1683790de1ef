"""Enrichment use cases: the operator's waterfall of sources and the paid providers in it,
built from settings."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from dialscore.config import Settings
from dialscore.enrichment import apollo, pdl
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


@dataclass(frozen=True)
class Provider:
    """A paid provider over HTTP. It holds connections: whoever made one closes it."""

    # One made from the settings with this API key: the operator's (hint None), or a
    # client's own, with what to check when the provider refuses it.
    make: Callable[[Settings, str, str | None], EnrichmentProvider]
    # The operator's API key in the settings; the provider is off without one.
    operator_key: Callable[[Settings], str | None]


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


def _pdl(settings: Settings, key: str, hint: str | None) -> EnrichmentProvider:
    return PeopleDataLabs(
        key,
        base_url=settings.pdl_base_url,
        min_likelihood=settings.pdl_min_likelihood,
        pacing=_pacing(settings, settings.pdl_rate_per_second, settings.pdl_timeout),
        credentials_hint=hint or pdl.CREDENTIALS_HINT,
    )


def _apollo(settings: Settings, key: str, hint: str | None) -> EnrichmentProvider:
    return ApolloPeopleMatch(
        key,
        base_url=settings.apollo_base_url,
        pacing=_pacing(settings, settings.apollo_rate_per_second, settings.apollo_timeout),
        credentials_hint=hint or apollo.CREDENTIALS_HINT,
    )


# Every source DIALSCORE_ENRICHMENT_SOURCES may name, by name: a new source is one entry here.
OWN_SOURCES: Final[Mapping[str, OwnSourceMaker]] = {"history": _history, "directory": _directory}
PROVIDERS: Final[Mapping[str, Provider]] = {
    "pdl": Provider(_pdl, lambda settings: settings.pdl_api_key),
    "apollo": Provider(_apollo, lambda settings: settings.apollo_api_key),
}


def known_sources() -> list[str]:
    """Every source a name may stand for, the client's own data first."""
    return [*OWN_SOURCES, *PROVIDERS]


def source_names(settings: Settings) -> list[str]:
    return [name.strip() for name in settings.enrichment_sources.split(",") if name.strip()]


def check_source_names(settings: Settings) -> None:
    """Refuses a name that is no source at all, so that a typo does not silently drop one."""
    known = known_sources()
    for name in source_names(settings):
        if name not in known:
            raise ValueError(
                f"DIALSCORE_ENRICHMENT_SOURCES: unknown source {name!r} "
                f"(known: {', '.join(sorted(known))})"
            )


def enrichment_providers_from_settings(settings: Settings) -> dict[str, EnrichmentProvider]:
    """The configured providers by source name (``pdl``, ``apollo``): those with an API key."""
    keys = {
        name: (provider.operator_key(settings) or "").strip()
        for name, provider in PROVIDERS.items()
    }
    return {name: PROVIDERS[name].make(settings, key, None) for name, key in keys.items() if key}
