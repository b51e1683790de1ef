"""What a paid enrichment provider is (a source that holds connections), and how the numbers
it found are read."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from dialscore.enrichment.waterfall import EnrichmentSource, FoundPhone
from dialscore.phones import DEFAULT_COUNTRY, analyse, country_or_default


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
