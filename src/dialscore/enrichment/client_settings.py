"""A client's own enrichment settings (P204): its own API keys for the paid providers, sealed
with a key derived from the server's secret, and the order it wants the sources tried in.

The caller commits. A plaintext key leaves this module only through ``client_enrichment``,
which the worker reads at the start of each enrichment job; everything else shows a key's last
four characters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType

import structlog
from sqlalchemy import delete, null, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.accounts import service as accounts
from dialscore.config import Settings
from dialscore.enrichment.service import PROVIDERS, known_sources, source_names
from dialscore.kit.crypto import SecretBox
from dialscore.kit.db import changed_rows, upsert
from dialscore.models import Client, ClientProviderKey

log = structlog.get_logger(__name__)

SECRET_PURPOSE = "provider-key"
# What a stored key may be: long enough that its last four characters do not give it away,
# short enough for any provider's key (People Data Labs: 64 characters).
MIN_KEY_LENGTH = 8
MAX_KEY_LENGTH = 500


@dataclass(frozen=True)
class ProviderKeyView:
    """A client's own key as it is shown: never more than its last four characters; when
    the provider last refused it, and why (None: not since it was set)."""

    provider: str
    last_four: str
    updated_at: datetime
    refused_at: datetime | None = None
    refused_reason: str | None = None


@dataclass(frozen=True)
class ClientEnrichment:
    """What an enrichment job of the client uses: its own keys (provider -> plaintext key)
    and its order of sources (None: the operator's)."""

    keys: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    order: tuple[str, ...] | None = None

    def __repr__(self) -> str:
        # Never the keys themselves, in a log line or a traceback.
        return f"ClientEnrichment(keys={sorted(self.keys)}, order={self.order})"


def secret_box(server_secret: str) -> SecretBox:
    return SecretBox(server_secret, purpose=SECRET_PURPOSE)


# -- the client's own provider keys -----------------------------------------------------------


def check_provider(provider: str) -> str:
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r} (known: {', '.join(PROVIDERS)})")
    return provider


def check_api_key(api_key: str) -> str:
    """The key as stored: without surrounding whitespace. ValueError says what is wrong."""
    key = api_key.strip()
    if not key:
        raise ValueError("the API key is empty")
    if len(key) < MIN_KEY_LENGTH:
        raise ValueError(f"the API key is too short: at least {MIN_KEY_LENGTH} characters")
    if len(key) > MAX_KEY_LENGTH:
        raise ValueError(f"the API key is too long: at most {MAX_KEY_LENGTH} characters")
    if any(char.isspace() or not char.isprintable() for char in key):
        raise ValueError("the API key has a space, a line break or a control character in it")
    return key


def _view(row: ClientProviderKey) -> ProviderKeyView:
    return ProviderKeyView(
        row.provider, row.last_four, row.updated_at, row.refused_at, row.refused_reason
    )


async def set_provider_key(
    session: AsyncSession,
    *,
    client_id: str,
    provider: str,
    api_key: str,
    server_secret: str,
    user_id: str | None,
    now: datetime,
) -> ProviderKeyView:
    """Stores the client's own key for ``provider``, sealed, replacing any it had; ``user_id``
    is who set it (None: the operator). ValueError for an unknown provider or a key that
    cannot be one; NotFound for an unknown client."""
    check_provider(provider)
    key = check_api_key(api_key)
    await accounts.get_client(session, client_id)
    values = {
        "client_id": client_id,
        "provider": provider,
        "key_ciphertext": secret_box(server_secret).seal(key),
        "last_four": key[-4:],
        "updated_at": now,
        "updated_by": user_id,
        # A new key has not been refused (yet).
        "refused_at": None,
        "refused_reason": None,
    }
    statement = upsert(session, ClientProviderKey).values(values)
    statement = statement.on_conflict_do_update(
        index_elements=["client_id", "provider"],
        set_={
            name: statement.excluded[name]
            for name in values
            if name not in ("client_id", "provider")
        },
    )
    await session.execute(statement)
    return ProviderKeyView(provider, key[-4:], now)


async def clear_provider_key(session: AsyncSession, *, client_id: str, provider: str) -> bool:
    """Removes the client's own key for ``provider``; True when there was one."""
    check_provider(provider)
    result = await session.execute(
        delete(ClientProviderKey).where(
            ClientProviderKey.client_id == client_id, ClientProviderKey.provider == provider
        )
    )
    return changed_rows(result) > 0


async def provider_keys(session: AsyncSession, client_id: str) -> list[ProviderKeyView]:
    """The client's own keys, by provider name, as they are shown."""
    rows = await session.scalars(
        select(ClientProviderKey)
        .where(ClientProviderKey.client_id == client_id)
        .order_by(ClientProviderKey.provider)
    )
    return [_view(row) for row in rows]


async def client_enrichment(
    session: AsyncSession, client_id: str, server_secret: str
) -> ClientEnrichment:
    """The client's own keys, opened, and its order of sources: what each enrichment job
    reads at its start. A key that cannot be opened (the server secret changed since it was
    set) is left out, with a warning; a provider no longer known is left out too."""
    order = await session.scalar(select(Client.enrichment_order).where(Client.id == client_id))
    rows = await session.execute(
        select(ClientProviderKey.provider, ClientProviderKey.key_ciphertext).where(
            ClientProviderKey.client_id == client_id
        )
    )
    box = secret_box(server_secret)
    keys: dict[str, str] = {}
    for provider, ciphertext in rows:
        if provider not in PROVIDERS:
            continue
        try:
            keys[provider] = box.open(ciphertext)
        except ValueError:
            log.warning(
                "provider_key_unreadable",
                client_id=client_id,
                provider=provider,
                reason="the server secret changed since the key was set: set it again",
            )
    return ClientEnrichment(MappingProxyType(keys), _stored_order(order))


# -- the order sources are tried in -----------------------------------------------------------


def _stored_order(value: object) -> tuple[str, ...] | None:
    """The stored order as a tuple of names; None for none, or for anything not a list."""
    if not isinstance(value, list) or not value:
        return None
    return tuple(name for name in value if isinstance(name, str))


def check_order(order: Sequence[str], settings: Settings) -> tuple[str, ...]:
    """The order as stored: known source names, each once. ValueError says what is wrong."""
    known = known_sources()
    seen: set[str] = set()
    names: list[str] = []
    for raw in order:
        name = raw.strip()
        if name not in known:
            enabled = ", ".join(source_names(settings)) or "none"
            raise ValueError(
                f"unknown source {name!r} (known: {', '.join(known)}; "
                f"this service tries: {enabled})"
            )
        if name in seen:
            raise ValueError(f"source {name!r} is named twice: name each source once")
        seen.add(name)
        names.append(name)
    return tuple(names)


async def set_enrichment_order(
    session: AsyncSession,
    *,
    client_id: str,
    order: Sequence[str] | None,
    settings: Settings,
) -> tuple[str, ...] | None:
    """Stores the order the client wants its sources tried in; None or an empty order goes
    back to the operator's (stored as NULL). What is stored; ValueError for an unknown or
    repeated name, NotFound for an unknown client."""
    names = check_order(order or (), settings)
    await accounts.get_client(session, client_id)
    await session.execute(
        update(Client)
        .where(Client.id == client_id)
        .values(enrichment_order=list(names) if names else null())
    )
    return names or None


async def enrichment_order(session: AsyncSession, client_id: str) -> tuple[str, ...] | None:
    """The client's stored order; None: the operator's."""
    value = await session.scalar(select(Client.enrichment_order).where(Client.id == client_id))
    return _stored_order(value)


def effective_order(settings: Settings, order: Sequence[str] | None) -> list[str]:
    """The sources a job of the client tries, in order: the client's order only reorders the
    operator's enabled sources. Those it names come first, in its order; then the operator's
    others, in the operator's order. A name the operator does not enable is ignored."""
    enabled = source_names(settings)
    first = [name for name in dict.fromkeys(order or ()) if name in enabled]
    return first + [name for name in enabled if name not in first]
