"""The sources that read our own data: the client's other contacts (history) and the
operator's imported directory. Candidates are found by lookup keys, then confirmed by the
pure matcher; below the confidence threshold there is no match."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import structlog

from dialscore.enrichment import repository as repo
from dialscore.enrichment.matching import Person, best_match, lookup_keys, person_from_fields
from dialscore.enrichment.waterfall import Enrichment, EnrichmentRequest, FoundPhone
from dialscore.kit.db import Database

log = structlog.get_logger(__name__)

_TYPES = ("mobile", "direct", "hq", "other")


def _best(
    query: Person, candidates: Sequence[tuple[str, Person, list[FoundPhone]]], threshold: float
) -> tuple[str, float, list[FoundPhone]] | None:
    """The matched candidate with numbers; none when two same-named colleagues tie."""
    usable = [c for c in candidates if c[2]]
    found = best_match(query, [person for _, person, _ in usable], min_confidence=threshold)
    if found is None:
        return None
    position, matched = found
    record_id, _, phones = usable[position]
    return record_id, matched.confidence, phones


def _hint(value: Any) -> str | None:
    return value if value in _TYPES else None


class HistorySource:
    """The same person among the client's other scored contacts: their reachable numbers."""

    name = "history"

    def __init__(self, db: Database, min_confidence: float) -> None:
        self.db = db
        self.min_confidence = min_confidence

    async def find(self, request: EnrichmentRequest) -> Enrichment | None:
        query = person_from_fields(request.fields)
        keys = lookup_keys(query)
        if not (keys.email or keys.linkedin or keys.last_name):
            return None
        async with self.db.read() as session:
            rows = await repo.history_candidates(
                session, request.client_id, request.contact_id, keys
            )
        candidates = []
        for contact_id, fields, entries in rows:
            numbers = [
                FoundPhone(str(p["number"]), _hint(p.get("type")))
                for p in entries
                if str(p.get("number") or "").startswith("+")
                and p.get("status")
                and not str(p["status"]).startswith("na")
            ]
            candidates.append((contact_id, person_from_fields(fields), numbers))
        best = _best(query, candidates, self.min_confidence)
        if best is None:
            return None
        record_id, confidence, found = best
        return Enrichment(tuple(found), f"contact:{record_id}", self.name, confidence)


class DirectorySource:
    """The same person in the operator's imported directory."""

    name = "directory"

    def __init__(self, db: Database, min_confidence: float) -> None:
        self.db = db
        self.min_confidence = min_confidence

    async def find(self, request: EnrichmentRequest) -> Enrichment | None:
        query = person_from_fields(request.fields)
        keys = lookup_keys(query)
        if not (keys.email or keys.linkedin or keys.last_name):
            return None
        async with self.db.read() as session:
            rows = await repo.directory_candidates(session, keys)
        candidates = [
            (
                row.id,
                Person(
                    first_name=row.first_name,
                    last_name=row.last_name,
                    email=row.email,
                    linkedin_url=row.linkedin_url,
                    company=row.company,
                    website=row.website,
                    company_linkedin_url=row.company_linkedin_url,
                ),
                [
                    FoundPhone(str(p["number"]), _hint(p.get("type")))
                    for p in row.phones
                    if p.get("number")
                ],
            )
            for row in rows
        ]
        best = _best(query, candidates, self.min_confidence)
        if best is None:
            return None
        record_id, confidence, phones = best
        return Enrichment(tuple(phones), record_id, self.name, confidence)
