"""The source interface and the waterfall that tries sources in order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

NO_DATA_FOUND = "no additional contact data found"


@dataclass(frozen=True)
class FoundPhone:
    number: str
    type_hint: str | None = None


@dataclass(frozen=True)
class Enrichment:
    phones: tuple[FoundPhone, ...]
    record_id: str | None
    source: str


class EnrichmentSource(Protocol):
    name: str

    async def find(self, fields: dict[str, str]) -> Enrichment | None: ...


async def run_waterfall(
    sources: Sequence[EnrichmentSource], fields: dict[str, str]
) -> Enrichment | None:
    """The first source's result that carries at least one number, in the given order."""
    for source in sources:
        found = await source.find(fields)
        if found is not None and found.phones:
            return found
    return None
