"""The sources that read our own data: the client's other contacts (history) and the
operator's imported directory. Candidates are found by lookup keys, a batch of contacts at
once, then confirmed by the pure matcher; below the confidence threshold there is no match.

A batch is looked up in two rounds: first by email, LinkedIn profile, and company key with
initial and last name; then, for the contacts still unmatched, by company key, initial and
the last name's first letter (a typo in the rest of the last name). A contact known by its
company's LinkedIn page alone is first given the company name and domain the directory's
records with that page show."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Row
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.enrichment import repository as repo
from dialscore.enrichment.matching import Match, Profile, best_of, match_profiles, profile
from dialscore.enrichment.waterfall import Enrichment, EnrichmentRequest, FoundPhone
from dialscore.identity.companies import company_name_key
from dialscore.identity.keys import (
    Keys,
    Person,
    lookup_keys,
    page_only,
    person_from_fields,
    with_company_of_page,
)
from dialscore.kit.db import Database

_TYPES = ("mobile", "direct", "hq", "other")
# Where a candidate row's parts are (repo.DIRECTORY_COLUMNS, repo.CONTACT_COLUMNS).
_KEYS = len(repo.KEY_COLUMNS)
_DIRECTORY_PHONES = repo.DIRECTORY_COLUMNS.index("phones")
_DIRECTORY_COMPANY_NAME = repo.DIRECTORY_COLUMNS.index("company_name_key")
_CONTACT_FIELDS = repo.CONTACT_COLUMNS.index("fields")
_CONTACT_PHONES = repo.CONTACT_COLUMNS.index("phones")
# The directory's columns after the keys are the person's fields, in their order.
assert repo.DIRECTORY_COLUMNS[_KEYS:_DIRECTORY_PHONES] == tuple(
    field.name for field in dataclasses.fields(Person)
)


def _hint(value: Any) -> str | None:
    return value if value in _TYPES else None


class _Candidate:
    """A stored record (a plain row) found by its keys; read into a person, and its numbers,
    only when a query is compared with it."""

    __slots__ = ("_person", "_phones", "_profile", "company", "email", "initial", "last_name",
                 "linkedin", "record_id", "row")  # fmt: skip
    record_id: str
    email: str | None
    linkedin: str | None
    company: str | None
    initial: str | None
    last_name: str | None

    def __init__(self, row: Row[Any]) -> None:
        # Read by position: the row begins with repo.KEY_COLUMNS.
        self.row = row
        self._person: Person | None = None
        self._phones: tuple[FoundPhone, ...] | None = None
        self._profile: Profile | None = None
        (self.record_id, self.email, self.linkedin, self.company, self.initial,
         self.last_name) = row[:_KEYS]  # fmt: skip

    @property
    def person(self) -> Person:
        if self._person is None:
            self._person = self._read_person()
        return self._person

    @property
    def profile(self) -> Profile:
        """The person's normal forms, made once for every query of the batch that finds it."""
        if self._profile is None:
            self._profile = Profile(self.person)
        return self._profile

    @property
    def phones(self) -> tuple[FoundPhone, ...]:
        if self._phones is None:
            self._phones = self._read_phones()
        return self._phones

    @property
    def has_phones(self) -> bool:
        return bool(self.phones)

    @property
    def company_name(self) -> str | None:
        """The company's name key (as ``record_keys`` gives it)."""
        return company_name_key(self.person.company)

    def _read_person(self) -> Person:
        raise NotImplementedError

    def _read_phones(self) -> tuple[FoundPhone, ...]:
        raise NotImplementedError


class _ContactCandidate(_Candidate):
    """One of the client's scored contacts: its reachable numbers."""

    def _read_person(self) -> Person:
        return person_from_fields(_json(self.row[_CONTACT_FIELDS]))

    def _read_phones(self) -> tuple[FoundPhone, ...]:
        return tuple(
            FoundPhone(str(p["number"]), _hint(p.get("type")))
            for p in _json(self.row[_CONTACT_PHONES])
            if str(p.get("number") or "").startswith("+")
            and p.get("status")
            and not str(p["status"]).startswith("na")
        )


class _DirectoryCandidate(_Candidate):
    """A directory record, which keeps its company's name key."""

    @property
    def has_phones(self) -> bool:
        # Every number the import keeps is valid: no need to read them to know there are.
        phones = self.row[_DIRECTORY_PHONES]
        return phones != "[]" if isinstance(phones, str) else bool(phones)

    @property
    def company_name(self) -> str | None:
        name: str | None = self.row[_DIRECTORY_COMPANY_NAME]
        return name

    def _read_person(self) -> Person:
        return Person(*self.row[_KEYS:_DIRECTORY_PHONES])

    def _read_phones(self) -> tuple[FoundPhone, ...]:
        return tuple(
            FoundPhone(str(p["number"]), _hint(p.get("type")))
            for p in _json(self.row[_DIRECTORY_PHONES])
            if p.get("number")
        )


class _Pool:
    """A batch's candidates, by the keys they were found by."""

    def __init__(self, candidates: Sequence[_Candidate]) -> None:
        self.by_email: dict[str, list[_Candidate]] = {}
        self.by_profile: dict[str, list[_Candidate]] = {}
        self.by_name: dict[tuple[str | None, ...], list[_Candidate]] = {}
        self.by_initial: dict[tuple[str | None, ...], list[_Candidate]] = {}
        for c in candidates:
            if c.email:
                self.by_email.setdefault(c.email, []).append(c)
            if c.linkedin:
                self.by_profile.setdefault(c.linkedin, []).append(c)
            self.by_name.setdefault((c.company, c.initial, c.last_name), []).append(c)
            start = c.last_name[0] if c.last_name else None
            self.by_initial.setdefault((c.company, c.initial, start), []).append(c)

    def found(self, keys: Keys, *, typo: bool) -> list[_Candidate]:
        """The candidates a query's keys find: by email, profile, or company key, initial and
        last name; with ``typo``, by company key, initial and last name's first letter."""
        groups: list[list[_Candidate]] = []
        if typo:
            groups += [self.by_initial.get(triple, []) for triple in repo.typo_triples(keys)]
        else:
            if keys.email:
                groups.append(self.by_email.get(keys.email, []))
            if keys.linkedin:
                groups.append(self.by_profile.get(keys.linkedin, []))
            groups += [self.by_name.get(triple, []) for triple in repo.name_triples(keys)]
        seen: dict[str, _Candidate] = {}
        for group in groups:
            for c in group:
                seen.setdefault(c.record_id, c)
        return list(seen.values())


class _KeyedSource:
    """A source of stored records with lookup keys: finds the batch's candidates, then the
    best match of each contact."""

    name = ""

    def __init__(self, db: Database, min_confidence: float) -> None:
        self.db = db
        self.min_confidence = min_confidence

    async def _candidates(
        self, session: AsyncSession, request: EnrichmentRequest, batch: Sequence[Keys], typo: bool
    ) -> list[_Candidate]:
        raise NotImplementedError

    async def find(self, request: EnrichmentRequest) -> Enrichment | None:
        (found,) = await self.find_many([request])
        return found

    async def find_many(self, requests: Sequence[EnrichmentRequest]) -> list[Enrichment | None]:
        results: list[Enrichment | None] = [None] * len(requests)
        async with self.db.read() as session:
            queries = await _with_companies_of_pages(
                session, [person_from_fields(request.fields) for request in requests]
            )
            keys = [lookup_keys(query) for query in queries]
            # Requests of one batch belong to one client (one job); grouped to be sure.
            groups: dict[str, list[int]] = {}
            for i, request in enumerate(requests):
                if keys[i].any:
                    groups.setdefault(request.client_id, []).append(i)
            for members in groups.values():
                await self._match_group(session, requests, queries, keys, members, results)
        return results

    async def _match_group(
        self,
        session: AsyncSession,
        requests: Sequence[EnrichmentRequest],
        queries: Sequence[Person],
        keys: Sequence[Keys],
        members: list[int],
        results: list[Enrichment | None],
    ) -> None:
        first = requests[members[0]]
        pool = _Pool(await self._candidates(session, first, [keys[i] for i in members], False))
        found = {i: pool.found(keys[i], typo=False) for i in members}
        names: dict[str, str | None] = {}
        dominant = await self._dominant(session, queries, found.values(), names)
        # Each query's matches by record: a contact still unmatched is compared again with
        # its first candidates and those of the typo round.
        memos: dict[int, dict[str, Match | None]] = {i: {} for i in members}
        unmatched = []
        for i in members:
            results[i] = self._best(requests[i], queries[i], found[i], dominant, memos[i])
            if results[i] is None and repo.typo_triples(keys[i]):
                unmatched.append(i)
        if not unmatched:
            return
        more = _Pool(await self._candidates(session, first, [keys[i] for i in unmatched], True))
        for i in unmatched:
            known = {c.record_id for c in found[i]}
            found[i] = found[i] + [
                c for c in more.found(keys[i], typo=True) if c.record_id not in known
            ]
        dominant = await self._dominant(session, queries, [found[i] for i in unmatched], names)
        for i in unmatched:
            results[i] = self._best(requests[i], queries[i], found[i], dominant, memos[i])

    async def _dominant(
        self,
        session: AsyncSession,
        queries: Sequence[Person],
        found: Iterable[Sequence[_Candidate]],
        known: dict[str, str | None],
    ) -> dict[str, str]:
        """The dominant domains of the queries' and candidates' company names, asking the
        directory only for names not in ``known`` (name → its domain, None for a name one
        company bears), which it adds to; names beyond these change no match."""
        names = {company_name_key(query.company) for query in queries}
        names.update(c.company_name for group in found for c in group)
        asked = [name for name in names if name and name not in known]
        dominant = await repo.dominant_domains(session, asked)
        known.update((name, dominant.get(name)) for name in asked)
        return {name: domain for name, domain in known.items() if domain is not None}

    def _best(
        self,
        request: EnrichmentRequest,
        query: Person,
        candidates: Sequence[_Candidate],
        dominant: Mapping[str, str],
        memo: dict[str, Match | None],
    ) -> Enrichment | None:
        """The matched candidate with numbers; none when two same-named colleagues tie.
        ``memo``: the query's matches so far, by record (the same for any ``dominant`` that
        knows the query's and the record's company names)."""
        usable = [c for c in candidates if c.has_phones and c.record_id != request.contact_id]
        query_profile = profile(query)
        matches = []
        for c in usable:
            if c.record_id not in memo:
                memo[c.record_id] = match_profiles(
                    query_profile, c.profile, dominant_domains=dominant
                )
            matches.append(memo[c.record_id])
        found = best_of(matches, min_confidence=self.min_confidence)
        if found is None:
            return None
        position, matched = found
        chosen = usable[position]
        return Enrichment(chosen.phones, self._record_id(chosen), self.name, matched.confidence)

    def _record_id(self, candidate: _Candidate) -> str:
        return candidate.record_id


class HistorySource(_KeyedSource):
    """The same person among the client's other scored contacts: their reachable numbers."""

    name = "history"

    async def _candidates(
        self, session: AsyncSession, request: EnrichmentRequest, batch: Sequence[Keys], typo: bool
    ) -> list[_Candidate]:
        rows = await repo.history_rows(session, request.client_id, batch, typo=typo)
        return [_ContactCandidate(row) for row in rows]

    def _record_id(self, candidate: _Candidate) -> str:
        return f"contact:{candidate.record_id}"


class DirectorySource(_KeyedSource):
    """The same person in the operator's imported directory."""

    name = "directory"

    async def _candidates(
        self, session: AsyncSession, request: EnrichmentRequest, batch: Sequence[Keys], typo: bool
    ) -> list[_Candidate]:
        rows = await repo.directory_rows(session, batch, typo=typo)
        return [_DirectoryCandidate(row) for row in rows]


async def _with_companies_of_pages(session: AsyncSession, queries: list[Person]) -> list[Person]:
    """The queries, those known by a company page alone given the company name and domain
    the directory's records with that page show."""
    pages = {page for page in map(page_only, queries) if page}
    if not pages:
        return queries
    companies = await repo.company_pages(session, pages)
    resolved = []
    for query in queries:
        page = page_only(query)
        company = companies.get(page) if page else None
        resolved.append(with_company_of_page(query, *company) if company else query)
    return resolved


def _json(value: Any) -> Any:
    """A JSON column read as a plain row: text on SQLite, decoded by PostgreSQL's driver."""
    return json.loads(value) if isinstance(value, str) else value
