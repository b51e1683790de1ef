"""Every query of the enrichment domain: candidates by lookup key, for a batch of contacts
at once, and the company domains of directory names."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Row, func, select, text, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.enrichment.directory import COMPANY_DOMAINS_SQL
from dialscore.enrichment.matching import Keys, Person, record_keys
from dialscore.models import Contact, DirectoryCompanyDomain, DirectoryPerson

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


def initial_pairs(keys: Keys) -> set[tuple[str, str]]:
    """(company key, initial) of a query's candidates with a typo in the last name."""
    return {(c, i) for c in keys.companies for i in keys.initials}


def _conditions(
    entity: type[DirectoryPerson] | type[Contact], batch: Sequence[Keys], kind: str
) -> list[ColumnElement[bool]]:
    """Conditions, a chunk of keys each, for the records sharing with the batch's queries:
    ``identifiers`` an email or a profile; ``names`` a company key, initial and last name;
    ``initials`` a company key and initial."""
    conditions: list[ColumnElement[bool]] = []
    if kind == "identifiers":
        emails = sorted({k.email for k in batch if k.email})
        profiles = sorted({k.linkedin for k in batch if k.linkedin})
        conditions += [entity.email_key.in_(chunk) for chunk in _chunks(emails)]
        conditions += [entity.linkedin_key.in_(chunk) for chunk in _chunks(profiles)]
    elif kind == "names":
        triples = sorted(set().union(*map(name_triples, batch)))
        named = tuple_(entity.company_key, entity.first_initial, entity.last_name_key)
        conditions += [named.in_(chunk) for chunk in _chunks(triples)]
    else:
        pairs = sorted(set().union(*map(initial_pairs, batch)))
        initialled = tuple_(entity.company_key, entity.first_initial)
        conditions += [initialled.in_(chunk) for chunk in _chunks(pairs)]
    return conditions


async def directory_rows(
    session: AsyncSession, batch: Sequence[Keys], *, typo: bool = False
) -> list[Row[Any]]:
    """The directory records that share an email, a LinkedIn profile, or a company key,
    initial and last name with any of the batch's queries; with ``typo``, instead those
    that share a company key and initial."""
    people = DirectoryPerson
    found: dict[str, Row[Any]] = {}
    if typo:
        group = (people.company_key, people.first_initial)
        rows = await _each(session, _conditions(people, batch, "initials"), group)
    else:
        rows = await _each(session, _conditions(people, batch, "identifiers"), None)
        rows += await _each(
            session,
            _conditions(people, batch, "names"),
            (people.company_key, people.first_initial, people.last_name_key),
        )
    for row in rows:
        found.setdefault(row.id, row)
    return list(found.values())


# What a candidate needs of a directory record, read as plain rows (no ORM objects).
_CANDIDATE_COLUMNS = tuple(
    DirectoryPerson.__table__.c[name]
    for name in (
        "id", "first_name", "last_name", "email", "linkedin_url", "company", "website",
        "company_linkedin_url", "phones", "email_key", "linkedin_key", "company_key",
        "first_initial", "last_name_key",
    )
)  # fmt: skip


async def _each(
    session: AsyncSession, conditions: list[ColumnElement[bool]], group: tuple[Any, ...] | None
) -> list[Row[Any]]:
    rows: list[Row[Any]] = []
    for condition in conditions:
        if group is None:
            statement = select(*_CANDIDATE_COLUMNS).where(condition)
        else:
            ranked = (
                select(
                    DirectoryPerson.id,
                    func.row_number()
                    .over(partition_by=group, order_by=DirectoryPerson.id)
                    .label("rank"),
                )
                .where(condition)
                .subquery()
            )
            statement = (
                select(*_CANDIDATE_COLUMNS)
                .join(ranked, ranked.c.id == DirectoryPerson.id)
                .where(ranked.c.rank <= MAX_CANDIDATES)
            )
        rows.extend((await session.execute(statement)).all())
    return rows


async def add_directory_people(
    session: AsyncSession, people: Sequence[tuple[str, Person, list[dict[str, Any]]]], now: datetime
) -> None:
    """Adds (id, person, phones) records to the directory, with their lookup keys, and counts
    the company domains again (as an import does)."""
    for record_id, person, phones in people:
        keys = record_keys(person)
        session.add(
            DirectoryPerson(
                id=record_id,
                first_name=person.first_name,
                last_name=person.last_name,
                email=person.email,
                linkedin_url=person.linkedin_url,
                company=person.company,
                website=person.website,
                company_linkedin_url=person.company_linkedin_url,
                phones=phones,
                email_key=keys.email,
                linkedin_key=keys.linkedin,
                last_name_key=keys.last_name,
                company_key=keys.company,
                first_initial=keys.initial,
                company_name_key=keys.company_name,
                company_domain=keys.company_domain,
                updated_at=now,
            )
        )
    await session.flush()
    for statement in COMPANY_DOMAINS_SQL:
        await session.execute(text(statement))


async def company_domain_counts(
    session: AsyncSession, names: Iterable[str]
) -> list[tuple[str, str, int]]:
    """(name key, domain, people) of the directory's companies bearing these names."""
    rows: list[tuple[str, str, int]] = []
    for chunk in _chunks(sorted(set(names))):
        result = await session.execute(
            select(
                DirectoryCompanyDomain.name_key,
                DirectoryCompanyDomain.domain,
                DirectoryCompanyDomain.people,
            ).where(DirectoryCompanyDomain.name_key.in_(chunk))
        )
        rows.extend((name, domain, people) for name, domain, people in result)
    return rows


async def history_rows(
    session: AsyncSession, client_id: str, batch: Sequence[Keys], *, typo: bool = False
) -> list[Contact]:
    """The client's scored contacts that share an email, a LinkedIn profile, or a company
    key, initial and last name with any of the batch's queries (with ``typo``: a company
    key and initial), newest first."""
    kinds = ("initials",) if typo else ("identifiers", "names")
    conditions = [c for kind in kinds for c in _conditions(Contact, batch, kind)]
    found: dict[str, Contact] = {}
    for condition in conditions:
        statement = (
            select(Contact)
            .where(Contact.client_id == client_id, Contact.state == "scored", condition)
            .order_by(Contact.created_at.desc())
            .limit(MAX_CANDIDATES * CHUNK)
        )
        for row in (await session.scalars(statement)).all():
            found.setdefault(row.id, row)
    return sorted(found.values(), key=lambda c: c.created_at, reverse=True)
