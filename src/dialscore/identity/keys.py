"""The keys records are found and compared by: a person's fields, the keys a stored record
keeps (``record_keys``), the keys a query looks candidates up by (``lookup_keys``), and the
identity of a person's company and name as single strings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from dialscore.identity import companies
from dialscore.identity.addresses import email_key, linkedin_slug
from dialscore.identity.companies import (
    blocking_keys,
    company_domain,
    company_linkedin_slug,
    company_name_key,
    email_key_and_company_domain,
    stored_blocking_key,
)
from dialscore.identity.names import given_name_forms, last_name_key, name_tokens


@dataclass(frozen=True)
class Person:
    first_name: str | None = None
    last_name: str | None = None
    email: str | None = None
    linkedin_url: str | None = None
    company: str | None = None
    website: str | None = None
    company_linkedin_url: str | None = None


def _text(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    text = value.strip()
    return text or None


def person_from_fields(fields: Mapping[str, Any]) -> Person:
    """The person an API contact describes (``firstName``, ``lastName``, ``email``,
    ``linkedInUrl``, ``companyAccount``, ``website``, ``companyLinkedInUrl``); the v1 form's
    ``companyInfo`` object fills the company fields it lacks. Other types count as absent."""
    company = fields.get("companyInfo")
    nested: Mapping[str, Any] = company if isinstance(company, Mapping) else {}

    def pick(name: str) -> str | None:
        return _text(fields.get(name)) or _text(nested.get(name))

    return Person(
        first_name=_text(fields.get("firstName")),
        last_name=_text(fields.get("lastName")),
        email=_text(fields.get("email")),
        linkedin_url=_text(fields.get("linkedInUrl")),
        company=pick("companyAccount"),
        website=pick("website"),
        company_linkedin_url=pick("companyLinkedInUrl"),
    )


# -- a person's company -----------------------------------------------------------------------


def company_forms(person: Person) -> tuple[str | None, frozenset[str], str | None]:
    """What names a person's company: its name key, its domains (of the website and of a
    work email) and its LinkedIn page (given as the page or as the website)."""
    domains = {company_domain(person.website), company_domain(person.email)}
    return (
        company_name_key(person.company),
        frozenset(d for d in domains if d is not None),
        _company_page(person.company_linkedin_url, person.website),
    )


def company_identity_key(person: Person) -> str | None:
    """A person's company as one string, equal for people of one company: ``name:`` and its
    name key, else ``domain:`` and its website's or work email's domain, else ``page:`` and
    its LinkedIn page; None when nothing names a company. The same order as the one blocking
    key a record is stored under."""
    name, domain, page = _company_identity(
        person.company, person.website, person.company_linkedin_url
    )
    if name:
        return "name:" + name
    domain = domain or company_domain(person.email)
    if domain:
        return "domain:" + domain
    return "page:" + page if page else None


def person_name_key(person: Person) -> str:
    """A person's first and last names as one string of folded words ("ann o'brien" is
    "ann obrien"); empty without names."""
    return " ".join((*name_tokens(person.first_name), *name_tokens(person.last_name)))


def page_only(person: Person) -> str | None:
    """The company page of a person whose company is known by its LinkedIn page alone (no
    company name, website or work address), else None."""
    name, domains, page = company_forms(person)
    return page if not name and not domains else None


def with_company_of_page(person: Person, name: str | None, domain: str | None) -> Person:
    """A person known by a company page alone, with the company name (a name key) and
    domain the directory's records with that page show: a page id says nothing of the
    company's name, its records do."""
    if page_only(person) is None:
        return person
    return replace(person, company=name or person.company, website=domain or person.website)


# -- lookup keys ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Keys:
    """The keys a query's candidates are looked up by. A stored record has the same, with
    one company key (``RecordKeys.company``) and one initial (``RecordKeys.initial``).

    ``email``: the normalised address (``email_key``), None for a role address;
    ``linkedin``: the canonical profile slug (``linkedin_slug``); ``last_name``: the folded
    last name without spaces or punctuation (``last_name_key``); ``companies``: every
    company blocking key the query's company may be stored under
    (``companies.blocking_keys``); ``initials``: the first letters of the first name and of
    the formal names a nickname stands for; ``company_name`` and ``domains``: the query's
    company name key and company domains, which records stored with a typo in the last name
    must share.

    Name+company candidates share a company key, an initial, and either the last name or
    (for a typo in it) its first letter."""

    email: str | None
    linkedin: str | None
    last_name: str | None
    companies: frozenset[str] = frozenset()
    initials: frozenset[str] = frozenset()
    company_name: str | None = None
    domains: frozenset[str] = frozenset()

    @property
    def any(self) -> bool:
        return bool(self.email or self.linkedin or (self.companies and self.last_name))


def lookup_keys(person: Person) -> Keys:
    name, domains, page = company_forms(person)
    first = name_tokens(person.first_name)
    initials: set[str] = set()
    if first:
        initials.add(first[0][0])
        initials.update(form[0] for form in given_name_forms(first[0]) if form)
    return Keys(
        email=email_key(person.email),
        linkedin=linkedin_slug(person.linkedin_url),
        last_name=last_name_key(person.last_name),
        companies=blocking_keys(name, domains, page),
        initials=frozenset(initials),
        company_name=name,
        domains=domains,
    )


# -- record keys ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordKeys:
    """What a stored record (a directory row, a client's contact) keeps to be found by:
    ``email``, ``linkedin`` and ``last_name`` as in ``Keys``, its one ``company`` blocking key
    (``companies.stored_blocking_key``) and ``initial`` (its folded first name's first
    letter, to find records whose last name has a typo); and, for telling companies of one
    name apart and naming the company of a page, its company's name key, domain and
    LinkedIn page (``company_name``, ``company_domain``, ``company_page``)."""

    email: str | None
    linkedin: str | None
    last_name: str | None
    company: str | None
    initial: str | None
    company_name: str | None
    company_domain: str | None
    company_page: str | None = None


def record_keys(person: Person) -> RecordKeys:
    return RecordKeys(
        *record_key_values(
            person.first_name,
            person.last_name,
            person.email,
            person.linkedin_url,
            person.company,
            person.website,
            person.company_linkedin_url,
        )
    )


def record_key_values(
    first_name: str | None,
    last_name: str | None,
    email: str | None,
    linkedin_url: str | None,
    company: str | None,
    website: str | None,
    company_linkedin_url: str | None,
) -> tuple[str | None, ...]:
    """``record_keys`` of a record's fields (``Person``'s, in its order), as a tuple in
    ``RecordKeys``' order: what the directory import stores for each of a million rows."""
    name, domain, page = _company_identity(company, website, company_linkedin_url)
    address, mail_domain = email_key_and_company_domain(email)
    if domain is None:
        domain = mail_domain
    if first_name and first_name.isascii() and first_name.isalpha():
        initial: str | None = first_name[0].lower()  # name_tokens' own shortcut
    else:
        first = name_tokens(first_name)
        initial = first[0][0] if first else None
    return (
        address,
        linkedin_slug(linkedin_url),
        _last_name_key(last_name),
        _stored_company_key(name, domain, page),
        initial,
        name,
        domain,
        page,
    )


# A directory names the same last names again and again: the last ones are kept.
_last_name_key = lru_cache(maxsize=1 << 16)(last_name_key)
# A directory names each company again for each of its people: the last ones are kept.
_stored_company_key = lru_cache(maxsize=1 << 16)(stored_blocking_key)


@lru_cache(maxsize=1 << 16)
def _company_identity(
    company: str | None, website: str | None, page_url: str | None
) -> tuple[str | None, str | None, str | None]:
    """A record's company name key, website's company domain and company page."""
    return company_name_key(company), company_domain(website), _company_page(page_url, website)


# A directory names each company's page again for each of its people: the last ones are kept.
@lru_cache(maxsize=1 << 16)
def _company_page(page_url: str | None, website: str | None) -> str | None:
    return company_linkedin_slug(page_url) or company_linkedin_slug(website)


# How many entries the company and host memos keep in a process that reads a large directory
# and nothing else (an import's parse workers): a million people can name 200 000 companies.
LARGE_MEMO = 1 << 18


def use_large_memos() -> None:
    """Widens the company and host memos for this process, which reads a large directory:
    at a million rows, about 100 MB more and a fifth less time a row. The service keeps the
    small ones."""
    global _company_identity, _stored_company_key, _company_page
    _company_identity = lru_cache(maxsize=LARGE_MEMO)(_company_identity.__wrapped__)
    _stored_company_key = lru_cache(maxsize=LARGE_MEMO)(_stored_company_key.__wrapped__)
    _company_page = lru_cache(maxsize=LARGE_MEMO)(_company_page.__wrapped__)
    companies.widen_memos(LARGE_MEMO)
