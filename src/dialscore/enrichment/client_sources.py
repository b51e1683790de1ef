"""The waterfall of each client: the operator's sources in the client's order (P205), with a
provider made with the client's own API key where it stored one (P204)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import structlog

from dialscore.config import Settings
from dialscore.enrichment import repository as repo
from dialscore.enrichment.client_settings import ClientEnrichment, effective_order
from dialscore.enrichment.providers import EnrichmentProvider
from dialscore.enrichment.service import (
    OWN_SOURCES,
    PROVIDERS,
    check_source_names,
    enrichment_providers_from_settings,
)
from dialscore.enrichment.waterfall import (
    Enrichment,
    EnrichmentRequest,
    EnrichmentSource,
    OwnKeySource,
)
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.kit.paced_http import ProviderUnavailable

log = structlog.get_logger(__name__)


class _ClientKeyed(OwnKeySource):
    """A provider with the client's own key. When the provider refuses the key (or its
    credits or rights), the job goes on without it rather than wait for a fix only the
    client can make: the refusal is noted for the client's Account page, and the contacts
    are left to the other sources (the operator's key is not used in its place)."""

    def __init__(self, source: EnrichmentSource, db: Database, client_id: str) -> None:
        super().__init__(source)
        self.db = db
        self.client_id = client_id

    async def find_many(self, requests: Sequence[EnrichmentRequest]) -> list[Enrichment | None]:
        try:
            return await super().find_many(requests)
        except ProviderUnavailable as unavailable:
            if not unavailable.refused:
                raise  # down or unreachable: the job waits for it, as for the operator's
            log.warning(
                "client_provider_key_refused",
                client_id=self.client_id,
                provider=self.name,
                reason=unavailable.reason,
            )
            async with self.db.unit_of_work() as session:
                await repo.mark_key_refused(
                    session, self.client_id, self.name, unavailable.reason, utcnow()
                )
            return [None] * len(requests)


class ClientSources:
    """Makes each client's waterfall, keeping the providers it makes for the process's life:
    the operator's, made once, and one per client's own key, made on its first job (each
    paces its own requests, as the provider counts them per key)."""

    def __init__(self, settings: Settings, db: Database) -> None:
        check_source_names(settings)
        self.settings = settings
        self.db = db
        self._operator: dict[str, EnrichmentProvider] | None = None
        # (client, provider) → the key's digest and the provider made with it.
        self._own: dict[tuple[str, str], tuple[bytes, EnrichmentProvider]] = {}
        # Providers made with a key since replaced: a job may still use them, so they are
        # closed with the rest.
        self._replaced: list[EnrichmentProvider] = []

    @property
    def operator_providers(self) -> dict[str, EnrichmentProvider]:
        if self._operator is None:
            self._operator = enrichment_providers_from_settings(self.settings)
        return self._operator

    def sources(self, client_id: str, chosen: ClientEnrichment) -> list[EnrichmentSource]:
        """The client's waterfall: its own data first made for the database, each provider
        with the client's own key when it has one, else the operator's (left out when the
        operator has none)."""
        made: list[EnrichmentSource] = []
        for name in effective_order(self.settings, chosen.order):
            own = OWN_SOURCES.get(name)
            key = chosen.keys.get(name)
            if own is not None:
                made.append(own(self.settings, self.db))
            elif key:
                provider = self._own_provider(client_id, name, key)
                made.append(_ClientKeyed(provider, self.db, client_id))
            elif name in self.operator_providers:
                made.append(self.operator_providers[name])
        return made

    def _own_provider(self, client_id: str, name: str, key: str) -> EnrichmentProvider:
        digest = hashlib.sha256(key.encode()).digest()
        known = self._own.get((client_id, name))
        if known is not None and known[0] == digest:
            return known[1]
        if known is not None:
            self._replaced.append(known[1])
        hint = (
            f"the key is client {client_id}'s own: its admin sets it on the Account page "
            "(or dialscore admin set-provider-key)"
        )
        provider = PROVIDERS[name].make(self.settings, key, hint)
        self._own[client_id, name] = (digest, provider)
        return provider

    async def close(self) -> None:
        providers = [*(self._operator or {}).values(), *self._replaced]
        providers += [provider for _, provider in self._own.values()]
        for provider in providers:
            await provider.close()
