"""Every query of the enrichment domain: candidates by lookup key, for a batch of contacts
at once, and the company domains of directory names."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Row, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.enrichment.directory import COMPANY_TABLES_SQL
from dialscore.identity.keys import Keys, Person, record_keys
from dialscore.models import ClientProviderKey, DirectoryPerson

# A common name at a large company can have many namesakes: of the records that share one
# company key and initial (and last name), the matcher sees at most this many.
MAX_CANDIDATES = 200
# Values bound per query, well under every driver's limit.
CHUNK = 300

T = TypeVar("T")


def _chunks(values: Sequence[T]) -> Iterable[Sequence[T]]:
    for start in range(0, len(values), CHUNK):
        yield values[start : start + CHUNK]


def name_triples(keys: Keys) -> set[tuple[str, str, str]]:
    """(company key, initial, last name) of a query's name+company candidates."""
    if not keys.last_name:
        return set()
    return {(c, i, keys.last_name) for c in keys.companies for i in keys.initials}


def typo_triples(keys: Keys) -> set[tuple[str, str, str]]:
    """(company key, initial, last name's first letter) of a query's candidates with a typo
    in the last name: a typo seldom changes a name's first letter."""
    if not keys.last_name:
        return set()
    return {(c, i, keys.last_name[0]) for c in keys.companies for i in keys.initials}


def _typo_terms(keys: Keys) -> set[tuple[str | None, ...]]:
    """The typo round's terms of a query: (company key, initial, first letter, the letter
    after it, company name key, company domain), the last two None for a query known only
    by its company page."""
    companies = [(keys.company_name, domain) for domain in keys.domains or (None,)]
    if not keys.company_name and not keys.domains:
        companies = [(None, None)]
    return {
        (company, initial, letter, chr(ord(letter) + 1), *exact)
        for company, initial, letter in typo_triples(keys)
        for exact in companies
    }


# A condition every term shares (SQL with one ``?``) and its value: say, the client's.
Scope = tuple[str, str] | None
Values = tuple[str | None, ...]


class _Sql:
    """Candidate queries written as SQL with the driver's own parameter marks, run without
    the expression language: building and compiling thousands of terms would take longer
    than the database takes to answer them."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        style = session.get_bind().dialect.paramstyle
        if style not in ("qmark", "format", "pyformat"):
            raise RuntimeError(f"unsupported parameter style {style}")
        self.mark = "?" if style == "qmark" else "%s"

    def any_of(
        self, term: str, values: Sequence[Values], scope: Scope = None
    ) -> tuple[str, list[str | None]]:
        """A condition that holds for a row matching any of the terms: ``term`` is SQL with
        a ``?`` for each value, ``values`` one tuple per term; ``scope`` (SQL with one ``?``
        and its value, say the client's) is part of every term, so that each can search an
        index that starts with it.

        An OR of terms, not a row-value IN list: SQLite searches an index for each term of
        an OR, while it scans the whole table for ``(a, b) IN (VALUES …)``."""
        if scope:
            term = f"{scope[0]} AND {term}"
        one = "(" + term.replace("?", self.mark) + ")"
        fixed = (scope[1],) if scope else ()
        params = [v for each in values for v in (*fixed, *each)]
        return "(" + " OR ".join([one] * len(values)) + ")", params

    def in_list(self, column: str, values: Sequence[str]) -> tuple[str, list[str | None]]:
        """A condition that holds for a row whose ``column`` is one of ``values``: an IN
        list, which both databases search an index for and prepare faster than an OR."""
        return f"{column} IN ({', '.join([self.mark] * len(values))})", list(values)

    async def rows(self, sql: str, params: Sequence[str | None]) -> list[Row[Any]]:
        connection = await self.session.connection()
        return list((await connection.exec_driver_sql(sql, tuple(params))).all())


def _conditions(
    sql: _Sql, table: str, batch: Sequence[Keys], kind: str, scope: Scope = None
) -> list[tuple[str, list[str | None]]]:
    """Conditions with their parameters, a chunk of keys each, for the records of ``table``
    sharing with the batch's queries: ``identifiers`` an email or a profile; ``names`` a
    company key, initial and last name; ``typos`` a company key, initial and last name's
    first letter, and (directory records, which keep them) the query's company name or
    domain, unless the query names its company by its page only."""
    if kind == "identifiers":
        emails = sorted({(k.email,) for k in batch if k.email})
        profiles = sorted({(k.linkedin,) for k in batch if k.linkedin})
        return [
            *(sql.any_of(f"{table}.email_key = ?", c, scope) for c in _chunks(emails)),
            *(sql.any_of(f"{table}.linkedin_key = ?", c, scope) for c in _chunks(profiles)),
        ]
    named = f"{table}.company_key = ? AND {table}.first_initial = ?"
    if kind == "names":
        triples = sorted(set().union(*map(name_triples, batch)))
        term = f"{named} AND {table}.last_name_key = ?"
        return [sql.any_of(term, chunk, scope) for chunk in _chunks(triples)]
    terms: set[Values] = set().union(*map(_typo_terms, batch))
    term = f"{named} AND {table}.last_name_key >= ? AND {table}.last_name_key < ?"
    exact = [t for t in terms if t[4] is not None or t[5] is not None]
    loose = sorted(t[:4] for t in terms if t[4] is None and t[5] is None)
    if table == "directory_people":
        same = f"{term} AND ({table}.company_name_key = ? OR {table}.company_domain = ?)"
        conditions = [sql.any_of(same, chunk, scope) for chunk in _chunks(sorted(exact, key=str))]
    else:
        loose = sorted({*loose, *(t[:4] for t in exact)}, key=str)
        conditions = []
    return conditions + [sql.any_of(term, chunk, scope) for chunk in _chunks(loose)]


# Candidates are read as plain rows; both kinds begin with these, in this order.
KEY_COLUMNS = ("id", "email_key", "linkedin_key", "company_key", "first_initial", "last_name_key")
# Then a directory record's person (the columns bear the person's field names), its numbers
# (JSON: text on SQLite, read only for the record chosen) and its company's name key.
DIRECTORY_COLUMNS = (
    *KEY_COLUMNS, "first_name", "last_name", "email", "linkedin_url", "company", "website",
    "company_linkedin_url", "phones", "company_name_key",
)  # fmt: skip
_DIRECTORY_COLUMNS = ", ".join(DIRECTORY_COLUMNS)
# The groups a common name at a large company can crowd, by the kind of lookup.
_GROUPS = {
    "names": "company_key, first_initial, last_name_key",
    "typos": "company_key, first_initial, substr(last_name_key, 1, 1)",
}


async def directory_rows(
    session: AsyncSession, batch: Sequence[Keys], *, typo: bool = False
) -> list[Row[Any]]:
    """The directory records that share an email, a LinkedIn profile, or a company key,
    initial and last name with any of the batch's queries; with ``typo``, instead those
    that share a company key, initial and last name's first letter, and the company's name
    or domain. Of the records that share one group of keys, at most ``MAX_CANDIDATES``."""
    sql = _Sql(session)
    found: dict[str, Row[Any]] = {}
    for kind in ("typos",) if typo else ("identifiers", "names"):
        for condition, params in _conditions(sql, "directory_people", batch, kind):
            if kind == "identifiers":
                statement = f"SELECT {_DIRECTORY_COLUMNS} FROM directory_people WHERE {condition}"
            else:
                statement = (
                    f"SELECT {_DIRECTORY_COLUMNS} FROM (SELECT {_DIRECTORY_COLUMNS}, "
                    f"row_number() OVER (PARTITION BY {_GROUPS[kind]} ORDER BY id) AS rank "
                    f"FROM directory_people WHERE {condition}) AS ranked "
                    f"WHERE rank <= {MAX_CANDIDATES}"
                )
            for row in await sql.rows(statement, params):
                found.setdefault(row[0], row)
    return list(found.values())


async def add_directory_people(
    session: AsyncSession, people: Sequence[tuple[str, Person, list[dict[str, Any]]]], now: datetime
) -> None:
    """Adds (id, person, phones) records to the directory, with their lookup keys, and makes
    the company tables again (as an import does)."""
    for record_id, person, phones in people:
        keys = record_keys(person)
        session.add(
            DirectoryPerson(
                id=record_id,
                **dataclasses.asdict(person),  # the columns bear the person's field names
                phones=phones,
                email_key=keys.email,
                linkedin_key=keys.linkedin,
                last_name_key=keys.last_name,
                company_key=keys.company,
                first_initial=keys.initial,
                company_name_key=keys.company_name,
                company_domain=keys.company_domain,
                company_page=keys.company_page,
                updated_at=now,
            )
        )
    await session.flush()
    for statement in COMPANY_TABLES_SQL:
        await session.execute(text(statement))


async def dominant_domains(session: AsyncSession, names: Iterable[str]) -> dict[str, str]:
    """Of these company name keys, those the directory shows with several domains, each
    with the domain most of its people work at (``directory_company_domains``)."""
    sql = _Sql(session)
    found: dict[str, str] = {}
    for chunk in _chunks(sorted(set(names))):
        condition, params = sql.in_list("name_key", chunk)
        statement = f"SELECT name_key, domain FROM directory_company_domains WHERE {condition}"
        found.update((row.name_key, row.domain) for row in await sql.rows(statement, params))
    return found


async def company_pages(
    session: AsyncSession, pages: Iterable[str]
) -> dict[str, tuple[str | None, str | None]]:
    """The company name key and domain the directory's records with each of these company
    pages show (``directory_company_pages``)."""
    sql = _Sql(session)
    found: dict[str, tuple[str | None, str | None]] = {}
    for chunk in _chunks(sorted(set(pages))):
        condition, params = sql.in_list("page", chunk)
        statement = f"SELECT page, name_key, domain FROM directory_company_pages WHERE {condition}"
        found.update(
            (row.page, (row.name_key, row.domain)) for row in await sql.rows(statement, params)
        )
    return found


CONTACT_COLUMNS = (*KEY_COLUMNS, "fields", "phones", "created_at")
_CONTACT_COLUMNS = ", ".join(f"contacts.{name}" for name in CONTACT_COLUMNS)


async def history_rows(
    session: AsyncSession, client_id: str, batch: Sequence[Keys], *, typo: bool = False
) -> list[Row[Any]]:
    """The client's scored contacts that share an email, a LinkedIn profile, or a company
    key, initial and last name with any of the batch's queries (with ``typo``: a company
    key, initial and last name's first letter), newest first, as plain rows (``fields``
    and ``phones`` are JSON: text on SQLite)."""
    sql = _Sql(session)
    found: dict[str, Row[Any]] = {}
    for kind in ("typos",) if typo else ("identifiers", "names"):
        for condition, params in _conditions(
            sql, "contacts", batch, kind, ("contacts.client_id = ?", client_id)
        ):
            statement = (
                f"SELECT {_CONTACT_COLUMNS} FROM contacts WHERE contacts.state = 'scored' "
                f"AND {condition} ORDER BY contacts.created_at DESC "
                f"LIMIT {MAX_CANDIDATES * CHUNK}"
            )
            for row in await sql.rows(statement, params):
                found.setdefault(row[0], row)
    return sorted(found.values(), key=lambda row: row[-1], reverse=True)


async def mark_key_refused(
    session: AsyncSession, client_id: str, provider: str, reason: str, now: datetime
) -> None:
    """Notes that the provider refused the client's own key (P204), for its Account page."""
    await session.execute(
        update(ClientProviderKey)
        .where(ClientProviderKey.client_id == client_id, ClientProviderKey.provider == provider)
        .values(refused_at=now, refused_reason=reason[:200])
    )
