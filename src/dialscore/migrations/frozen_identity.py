"""FROZEN SNAPSHOT of ``dialscore.identity``'s key functions as of November 2026: the keys
migrations 0005, 0007, 0008 and 0011 write. NEVER EDIT THIS FILE: a migration must compute
on any database, at any later date, the keys it computed when it was written, whatever
becomes of the live identity code. A migration that needs keys computed another way takes
a snapshot of its own (``frozen_identity_NNNN.py``). Only migrations import it."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

MAX_EMAIL = 254
MAX_SLUG = 200
MAX_NAME_KEY = 200
COMPANY_BLOCKING_KEY_LENGTH = 4

FREE_MAIL_DOMAINS = frozenset(
    {
        "gmail.com", "googlemail.com", "yahoo.com", "yahoo.co.uk", "yahoo.fr", "yahoo.de",
        "ymail.com", "rocketmail.com", "hotmail.com", "hotmail.co.uk", "hotmail.fr",
        "hotmail.de", "outlook.com", "outlook.de", "live.com", "live.co.uk", "msn.com",
        "aol.com", "icloud.com", "me.com", "mac.com", "proton.me", "protonmail.com",
        "pm.me", "gmx.de", "gmx.net", "gmx.com", "web.de", "t-online.de", "mail.com",
        "email.com", "yandex.ru", "yandex.com", "mail.ru", "qq.com", "163.com", "126.com",
        "zoho.com", "fastmail.com", "hey.com", "tutanota.com", "comcast.net",
        "verizon.net", "att.net", "sbcglobal.net", "orange.fr", "free.fr", "laposte.net",
        "libero.it", "btinternet.com", "naver.com",
    }
)  # fmt: skip
SHARED_HOSTS = frozenset(
    {
        "linkedin.com", "facebook.com", "twitter.com", "x.com", "instagram.com",
        "youtube.com", "medium.com", "github.com", "wixsite.com", "wordpress.com",
        "blogspot.com", "sites.google.com", "google.com", "bit.ly", "linktr.ee",
    }
)  # fmt: skip
ROLE_ADDRESSES = frozenset(
    {
        "info", "sales", "contact", "contactus", "admin", "office", "hello", "support",
        "team", "hr", "jobs", "careers", "marketing", "billing", "accounts", "accounting",
        "enquiries", "inquiries", "reception", "noreply", "no-reply", "donotreply",
        "webmaster", "press", "media", "service", "help", "mail", "general", "postmaster",
        "legal", "privacy", "security", "orders", "feedback",
    }
)  # fmt: skip
LEGAL_SUFFIXES = frozenset(
    {
        "inc", "incorporated", "llc", "ltd", "limited", "corp", "corporation", "co",
        "company", "plc", "gmbh", "mbh", "ag", "sa", "sas", "sarl", "bv", "nv", "srl",
        "spa", "pty", "oy", "oyj", "ab", "as", "asa", "aps", "kk", "kg", "kgaa", "lp",
        "llp", "lllp", "pllc", "pc", "se", "sl", "slu", "sau", "ltda", "sro", "bhd", "sdn",
        "pte", "pvt", "private", "sp", "z", "oo", "group", "holdings", "holding", "and", "the",
    }
)  # fmt: skip
GMAIL_DOMAINS = ("gmail.com", "googlemail.com")
_NAME_TITLES = frozenset({"dr", "mr", "mrs", "ms", "miss", "mx", "prof", "sir", "dame"})
_NAME_SUFFIXES = frozenset({"jr", "sr", "ii", "iii", "iv", "phd", "md", "esq", "mba", "cpa"})
_SECOND_LEVELS = frozenset({"co", "com", "net", "org", "gov", "ac", "edu", "ne", "or", "gv"})
_FOLD_EXTRA = str.maketrans(
    {"ø": "o", "đ": "d", "ł": "l", "æ": "ae", "œ": "oe", "þ": "th", "ð": "d", "\u0131": "i"}
)
_APOSTROPHES = str.maketrans("", "", "'\u2019`\u00b4\u02bc")
_SEPARATORS = re.compile(r"[\W_]+")
_COMBINING = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
_WHITESPACE = re.compile(r"\s")
_NOT_IN_SLUG = re.compile(r"[\s/]")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://")
_HOST = re.compile(r"^[\w-]+(?:\.[\w-]+)+$")
_WEB_ENDING = re.compile(r"\.(?:com|net|org|io|co|ai|biz|us|app)(?![\w.])")
_PUB_PART = re.compile(r"^[0-9a-f]{1,3}$")
_PLAIN_EMAIL = re.compile(r"[a-z0-9_%-]+(?:\.[a-z0-9_%-]+)*@([a-z0-9-]+(?:\.[a-z0-9-]+)+)")
_PLAIN_PROFILE = re.compile(
    r"(?:https?://)?(?:www\.|[a-z]{2}\.)?linkedin\.com/in/([a-z0-9-]{1,100})(?:/[a-z]{2})?/?"
    r"(?:\?[^#/]*)?",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Person:
    first_name: str | None = None
    last_name: str | None = None
    email: str | None = None
    linkedin_url: str | None = None
    company: str | None = None
    website: str | None = None
    company_linkedin_url: str | None = None


@dataclass(frozen=True)
class RecordKeys:
    email: str | None
    linkedin: str | None
    last_name: str | None
    company: str | None
    initial: str | None
    company_name: str | None
    company_domain: str | None
    company_page: str | None = None


def _text(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    text = value.strip()
    return text or None


def person_from_fields(fields: Mapping[str, Any]) -> Person:
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


# -- names ------------------------------------------------------------------------------------


def fold(text: str) -> str:
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.casefold().translate(_FOLD_EXTRA))
    return _COMBINING.sub("", decomposed)


def name_tokens(name: str | None) -> tuple[str, ...]:
    if not name:
        return ()
    if name.isascii() and name.isalpha():
        return (name.lower(),)
    words = [w for w in _SEPARATORS.split(fold(name).translate(_APOSTROPHES)) if w]
    while len(words) > 1 and words[0] in _NAME_TITLES:
        words.pop(0)
    while len(words) > 1 and words[-1] in _NAME_SUFFIXES:
        words.pop()
    return tuple(words)


def last_name_key(last_name: str | None) -> str | None:
    if last_name and last_name.isascii() and last_name.isalpha():
        return last_name.lower()[:MAX_NAME_KEY]
    key = "".join(name_tokens(last_name))[:MAX_NAME_KEY]
    return key or None


# -- addresses --------------------------------------------------------------------------------


def normalise_email(value: str | None) -> str | None:
    if not value:
        return None
    text = value.strip()
    plain = _PLAIN_EMAIL.fullmatch(text.lower())
    if plain is not None and plain.group(1) not in GMAIL_DOMAINS:
        address = plain.group(0)
        return address if len(address) <= MAX_EMAIL else None
    if "<" in text and text.endswith(">"):
        text = text[text.rindex("<") + 1 : -1]
    text = text.strip().lower().removeprefix("mailto:")
    if text.count("@") != 1 or _WHITESPACE.search(text):
        return None
    local, domain = text.split("@")
    domain = domain.rstrip(".")
    local = local.split("+", 1)[0]
    if not local or "." not in domain or domain.startswith(".") or ".." in domain:
        return None
    if domain in GMAIL_DOMAINS:
        local = local.replace(".", "")
        domain = "gmail.com"
        if not local:
            return None
    address = f"{local}@{domain}"
    return address if len(address) <= MAX_EMAIL else None


def email_key(value: str | None) -> str | None:
    email = normalise_email(value)
    return None if email is None or email.split("@", 1)[0] in ROLE_ADDRESSES else email


def _linkedin_path(url: str | None) -> list[str] | None:
    if not url:
        return None
    text = url.strip()
    match = _SCHEME.match(text.lower())
    if match:
        text = text[match.end() :]
    host, slash, path = text.partition("/")
    host = host.lower().rsplit("@", 1)[-1].split(":", 1)[0].rstrip(".")
    if not slash or not (host == "linkedin.com" or host.endswith(".linkedin.com")):
        return None
    path = path.split("#", 1)[0].split("?", 1)[0]
    segments = [s for s in path.split("/") if s]
    if segments and segments[0] == "mwlite":
        segments = segments[1:]
    return segments


def _slug(segment: str) -> str | None:
    slug = unicodedata.normalize("NFC", unquote(segment, errors="strict")).strip().casefold()
    if not slug or len(slug) > MAX_SLUG or _NOT_IN_SLUG.search(slug):
        return None
    return slug


def linkedin_slug(url: str | None) -> str | None:
    if not url:
        return None
    plain = _PLAIN_PROFILE.fullmatch(url.strip())
    if plain is not None:
        return plain.group(1).lower()
    segments = _linkedin_path(url)
    if not segments or len(segments) < 2:
        return None
    try:
        if segments[0] == "in":
            return _slug(segments[1])
        if segments[0] == "pub" and segments[1] != "dir":
            if len(segments) == 2:
                return _slug(segments[1])
            parts = [p.lower() for p in segments[2:5]]
            if len(parts) == 3 and all(_PUB_PART.match(p) for p in parts):
                first, middle, last = parts
                return _slug(f"{segments[1]}-{last.zfill(3)}{middle.zfill(3)}{first}")
    except UnicodeDecodeError:
        return None
    return None


# -- companies --------------------------------------------------------------------------------


@lru_cache(maxsize=1 << 16)
def company_name_key(name: str | None) -> str | None:
    if not name:
        return None
    text = fold(name).strip().replace("&", " and ").translate(_APOSTROPHES)
    text = _WEB_ENDING.sub("", text)
    words = [w for w in _SEPARATORS.split(text.replace(".", "")) if w]
    while len(words) > 1 and words[0] == "the":
        words.pop(0)
    while len(words) > 1 and words[-1] in LEGAL_SUFFIXES:
        words.pop()
    key = " ".join(words)[:MAX_NAME_KEY]
    return key or None


def domain_of(value: str | None) -> str | None:
    if not value:
        return None
    text = value.strip().lower()
    if "@" in text and "/" not in text:
        text = text.rsplit("@", 1)[1]
    else:
        match = _SCHEME.match(text)
        if match:
            text = text[match.end() :]
        text = text.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0].rsplit("@", 1)[-1]
    host = text.split(":", 1)[0].rstrip(".").removeprefix("www.")
    return host if _HOST.match(host) else None


def _on_shared_host(domain: str) -> bool:
    if domain in SHARED_HOSTS:
        return True
    at = domain.find(".")
    while at >= 0:
        if domain[at + 1 :] in SHARED_HOSTS:
            return True
        at = domain.find(".", at + 1)
    return False


@lru_cache(maxsize=1 << 16)
def company_domain(value: str | None) -> str | None:
    domain = domain_of(value)
    if domain is None or domain in FREE_MAIL_DOMAINS or _on_shared_host(domain):
        return None
    return domain


@lru_cache(maxsize=1 << 16)
def company_linkedin_slug(url: str | None) -> str | None:
    segments = _linkedin_path(url)
    if not segments:
        return None
    if segments[0] == "sales" and len(segments) >= 3 and segments[1] == "company":
        segments = segments[1:]
    if len(segments) < 2 or segments[0] not in ("company", "showcase", "school"):
        return None
    try:
        slug = _slug(segments[1])
    except UnicodeDecodeError:
        return None
    if slug is None or segments[0] == "company":
        return slug
    return f"{segments[0]}/{slug}"


def company_page(page_url: str | None, website: str | None) -> str | None:
    return company_linkedin_slug(page_url) or company_linkedin_slug(website)


def _domain_label(domain: str) -> str:
    labels = domain.split(".")
    if len(labels) >= 3 and labels[-2] in _SECOND_LEVELS:
        return labels[-3]
    return labels[-2] if len(labels) >= 2 else labels[0]


def _page_name(slug: str) -> str | None:
    if slug.isdigit() or "/" in slug:
        return None
    words = [w for w in slug.split("-") if w]
    while len(words) > 1 and (words[-1].isdigit() or words[-1] in LEGAL_SUFFIXES):
        words.pop()
    name = "".join(words)
    return name if len(name) >= 3 else None


def _blocking_key(form: str | None) -> str | None:
    if not form:
        return None
    key = form.replace(" ", "")[:COMPANY_BLOCKING_KEY_LENGTH]
    return key if len(key) >= 2 else None


# -- keys -------------------------------------------------------------------------------------


def record_keys(person: Person) -> RecordKeys:
    """The keys migrations 0005-0008 write for a directory person or a client's contact."""
    name = company_name_key(person.company)
    domain = company_domain(person.website) or company_domain(person.email)
    page = company_page(person.company_linkedin_url, person.website)
    if name:
        company = _blocking_key(name)
    elif domain:
        company = _blocking_key(_domain_label(domain))
    else:
        company = _blocking_key(_page_name(page)) if page else None
    first = name_tokens(person.first_name)
    return RecordKeys(
        email=email_key(person.email),
        linkedin=linkedin_slug(person.linkedin_url),
        last_name=last_name_key(person.last_name),
        company=company,
        initial=first[0][0] if first else None,
        company_name=name,
        company_domain=domain,
        company_page=page,
    )


def _bounded(key: str, limit: int) -> str:
    if len(key) <= limit:
        return key
    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()


def contact_number_keys(fields: Mapping[str, Any]) -> tuple[str | None, str]:
    """``contact_numbers.company_key`` and ``person_key`` of a contact's fields, as migration
    0011 writes them (bounded to their columns, 200 and 400 characters)."""
    person = person_from_fields(fields)
    name = company_name_key(person.company)
    domain = company_domain(person.website) or company_domain(person.email)
    page = company_page(person.company_linkedin_url, person.website)
    if name:
        company: str | None = "name:" + name
    elif domain:
        company = "domain:" + domain
    else:
        company = "page:" + page if page else None
    names = " ".join((*name_tokens(person.first_name), *name_tokens(person.last_name)))
    return (None if company is None else _bounded(company, 200)), _bounded(names, 400)
