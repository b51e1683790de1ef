"""Companies, comparable across records: name keys (legal suffixes and descriptive words),
the domains that identify a company (not free mail, not shared hosts), LinkedIn company
pages, and the blocking keys records of one company are stored and looked up under."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from dialscore.identity.addresses import (
    GMAIL_DOMAINS,
    MAX_EMAIL,
    PLAIN_EMAIL,
    ROLE_ADDRESSES,
    SCHEME,
    email_key,
    linkedin_path,
    linkedin_segment_slug,
)
from dialscore.identity.names import APOSTROPHES, MAX_NAME_KEY, WORD_SEPARATORS, fold

# Company blocking keys are the first letters of a company's name (or domain, or page) with
# the spaces removed: "Acme Software Inc.", "acmesoftware.com" and /company/acme all give
# "acme".
COMPANY_BLOCKING_KEY_LENGTH = 4

# Mail services anyone can use: an address there says nothing about the company.
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
# Hosts of many companies' pages: a website there says nothing about the company.
SHARED_HOSTS = frozenset(
    {
        "linkedin.com", "facebook.com", "twitter.com", "x.com", "instagram.com",
        "youtube.com", "medium.com", "github.com", "wixsite.com", "wordpress.com",
        "blogspot.com", "sites.google.com", "google.com", "bit.ly", "linktr.ee",
    }
)  # fmt: skip
# The words of a company's legal form, and the words around its name ("The", "& Co.").
LEGAL_SUFFIXES = frozenset(
    {
        "inc", "incorporated", "llc", "ltd", "limited", "corp", "corporation", "co",
        "company", "plc", "gmbh", "mbh", "ag", "sa", "sas", "sarl", "bv", "nv", "srl",
        "spa", "pty", "oy", "oyj", "ab", "as", "asa", "aps", "kk", "kg", "kgaa", "lp",
        "llp", "lllp", "pllc", "pc", "se", "sl", "slu", "sau", "ltda", "sro", "bhd", "sdn",
        "pte", "pvt", "private", "sp", "z", "oo", "group", "holdings", "holding", "and", "the",
    }
)  # fmt: skip
# Words a company name may carry or drop: "Acme Software" is likely "Acme", and "Flux Dental"
# (a trade) "Flux".
COMPANY_DESCRIPTORS = frozenset(
    {
        "technologies", "technology", "tech", "software", "systems", "solutions",
        "services", "international", "intl", "global", "worldwide", "labs", "lab",
        "consulting", "partners", "industries", "enterprises", "usa", "us", "america",
        "americas", "digital", "networks", "north", "hq", "inc", "io", "ai", "app", "apps",
        "online", "interactive",
        "health", "healthcare", "medical", "dental", "clinic", "pharma", "capital",
        "ventures", "investments", "financial", "finance", "bank", "insurance", "realty",
        "properties", "logistics", "media", "marketing", "studio", "studios", "design",
        "energy", "foods", "analytics", "engineering", "construction", "manufacturing",
        "advisors", "advisory", "management", "associates", "research",
    }
)  # fmt: skip
# Second-level labels under which companies register their domains (acme.co.uk).
_SECOND_LEVELS = frozenset({"co", "com", "net", "org", "gov", "ac", "edu", "ne", "or", "gv"})
_HOST = re.compile(r"^[\w-]+(?:\.[\w-]+)+$")
# The ending of a web address in a company name: "Amazon.com, Inc.".
_WEB_ENDING = re.compile(r"\.(?:com|net|org|io|co|ai|biz|us|app)(?![\w.])")
# What a company's domain may add to its name: getacme.com, acmehq.com are Acme's.
_DOMAIN_PREFIXES = ("get", "try", "use", "join")
_DOMAIN_SUFFIXES = ("hq", "app", "inc", "group", "usa")


# -- names ------------------------------------------------------------------------------------


# A directory names each company again for each of its people: the last names are kept.
@lru_cache(maxsize=1 << 16)
def company_name_key(name: str | None) -> str | None:
    """A company's name, comparable across records: folded, ``&`` read as "and", dots dropped
    (so that "S.A." and "L.L.C." read as suffixes), a web address's ending dropped
    ("Amazon.com"), words only, and without leading "The" and trailing legal suffixes
    ("Acme Holdings, Inc." is "acme")."""
    if not name:
        return None
    text = fold(name).strip().replace("&", " and ").translate(APOSTROPHES)
    text = _WEB_ENDING.sub("", text)
    words = [w for w in WORD_SEPARATORS.split(text.replace(".", "")) if w]
    while len(words) > 1 and words[0] == "the":
        words.pop(0)
    while len(words) > 1 and words[-1] in LEGAL_SUFFIXES:
        words.pop()
    key = " ".join(words)[:MAX_NAME_KEY]
    return key or None


def without_descriptors(words: Sequence[str]) -> list[str]:
    """A name's words without its trailing descriptive words ("hub health": "hub"), keeping
    at least one."""
    kept = list(words)
    while len(kept) > 1 and kept[-1] in COMPANY_DESCRIPTORS:
        kept.pop()
    return kept


# -- domains ----------------------------------------------------------------------------------


def domain_of(value: str | None) -> str | None:
    """The host of a website address or the domain of an email address, lower case, without
    ``www.``, port, path or query; None when there is none."""
    if not value:
        return None
    text = value.strip().lower()
    if "@" in text and "/" not in text:
        text = text.rsplit("@", 1)[1]
    else:
        match = SCHEME.match(text)
        if match:
            text = text[match.end() :]
        text = text.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0].rsplit("@", 1)[-1]
    return _host(text)


# Websites and mail domains repeat for each person of a company: the last ones are kept.
@lru_cache(maxsize=1 << 16)
def _host(text: str) -> str | None:
    host = text.split(":", 1)[0].rstrip(".").removeprefix("www.")
    return host if _HOST.match(host) else None


def is_free_mail(domain: str) -> bool:
    return domain in FREE_MAIL_DOMAINS


def company_domain(value: str | None) -> str | None:
    """The domain of a website or email that identifies a company: not a free mail service
    and not a host of many companies' pages."""
    domain = domain_of(value)
    return None if domain is None else _company_host(domain)


@lru_cache(maxsize=1 << 16)
def _company_host(domain: str) -> str | None:
    if domain in FREE_MAIL_DOMAINS or _on_shared_host(domain):
        return None
    return domain


def _on_shared_host(domain: str) -> bool:
    """Whether a domain is, or is under, a host of many companies' pages."""
    if domain in SHARED_HOSTS:
        return True
    at = domain.find(".")
    while at >= 0:
        if domain[at + 1 :] in SHARED_HOSTS:
            return True
        at = domain.find(".", at + 1)
    return False


def email_key_and_company_domain(email: str | None) -> tuple[str | None, str | None]:
    """``email_key`` and ``company_domain`` of an email address, a plain one (most) read
    once for both."""
    if email:
        plain = PLAIN_EMAIL.fullmatch(email.strip().lower())
        if plain is not None and plain.group(1) not in GMAIL_DOMAINS:
            address = plain.group(0)
            local = address[: plain.start(1) - 1]
            key = None if len(address) > MAX_EMAIL or local in ROLE_ADDRESSES else address
            host = _host(plain.group(1))
            return key, None if host is None else _company_host(host)
    return email_key(email), company_domain(email)


def domain_label(domain: str) -> str:
    """The name part of a domain: "acme" for "acme.com", "us.acme.co.uk"."""
    labels = domain.split(".")
    if len(labels) >= 3 and labels[-2] in _SECOND_LEVELS:
        return labels[-3]
    return labels[-2] if len(labels) >= 2 else labels[0]


def bare_label(label: str) -> str:
    """A domain's name without a prefix or suffix companies add to theirs: "acme" for
    "getacme" or "acmehq"."""
    for prefix in _DOMAIN_PREFIXES:
        if label.startswith(prefix) and len(label) - len(prefix) >= 3:
            return label[len(prefix) :]
    for suffix in _DOMAIN_SUFFIXES:
        if label.endswith(suffix) and len(label) - len(suffix) >= 3:
            return label[: -len(suffix)]
    return label


def same_domain(a: str, b: str) -> bool:
    """Equal, or one a subdomain of the other ("us.acme.com", "acme.com")."""
    if a == b:
        return True
    short, long = (a, b) if len(a) < len(b) else (b, a)
    if not long.endswith("." + short):
        return False
    labels = short.split(".")
    return len(labels) > 2 or (len(labels) == 2 and labels[0] not in _SECOND_LEVELS)


def dominant_domains(counts: Iterable[tuple[str, str, int]]) -> dict[str, str]:
    """From (company name key, domain, people) counts, the names seen with more than one
    domain, each with the domain most of its people work at (of equals, the first in
    alphabetical order)."""
    by_name: dict[str, list[tuple[int, str]]] = {}
    for name, domain, people in counts:
        by_name.setdefault(name, []).append((-people, domain))
    return {name: min(seen)[1] for name, seen in by_name.items() if len(seen) > 1}


# -- LinkedIn pages ---------------------------------------------------------------------------


def company_linkedin_slug(url: str | None) -> str | None:
    """The canonical slug of a LinkedIn company page: ``acme-inc`` for
    ``https://uk.linkedin.com/company/Acme-Inc/about/?trk=x``; a numeric page id stays as it
    is (also from Sales Navigator's ``/sales/company/ID``); showcase and school pages are
    ``showcase/SLUG`` and ``school/SLUG``."""
    segments = linkedin_path(url)
    if not segments:
        return None
    if segments[0] == "sales" and len(segments) >= 3 and segments[1] == "company":
        segments = segments[1:]
    if len(segments) < 2 or segments[0] not in ("company", "showcase", "school"):
        return None
    try:
        slug = linkedin_segment_slug(segments[1])
    except UnicodeDecodeError:
        return None
    if slug is None or segments[0] == "company":
        return slug
    return f"{segments[0]}/{slug}"


def page_name(slug: str) -> str | None:
    """The name in a company page's vanity slug: "acme" for "acme-inc" or "acme-536"; None
    for a numeric page id or a showcase or school page."""
    name = "".join(page_words(slug))
    return name if len(name) >= 3 else None


def page_words(slug: str) -> list[str]:
    """The words of the name in a company page's vanity slug (see ``page_name``)."""
    if slug.isdigit() or "/" in slug:
        return []
    words = [w for w in slug.split("-") if w]
    while len(words) > 1 and (words[-1].isdigit() or words[-1] in LEGAL_SUFFIXES):
        words.pop()
    return words


# -- blocking keys ----------------------------------------------------------------------------


def blocking_key(form: str | None) -> str | None:
    """The blocking key of one spelling of a company (a name key, a domain's or a page's
    name): its first letters without spaces; None for fewer than two."""
    if not form:
        return None
    key = form.replace(" ", "")[:COMPANY_BLOCKING_KEY_LENGTH]
    return key if len(key) >= 2 else None


def stored_blocking_key(name: str | None, domain: str | None, page: str | None) -> str | None:
    """The one blocking key a record is stored under: from its company name key when it has
    one, else from its domain, else from its company page."""
    if name:
        return blocking_key(name)
    if domain:
        return blocking_key(domain_label(domain))
    return blocking_key(page_name(page)) if page else None


def blocking_keys(name: str | None, domains: Iterable[str], page: str | None) -> frozenset[str]:
    """The blocking keys records of a company may be stored under: from its name key (also
    without trailing descriptive words: "Hub Health" may be stored as "Hub"), each domain
    (also without a prefix or suffix companies add to their domains: getacme.com may be
    stored as "Acme") and its company page's vanity name."""
    labels = [domain_label(d) for d in domains]
    forms: list[str | None] = [*labels, *map(bare_label, labels)]
    if name:
        forms.append(name)
        forms.append(" ".join(without_descriptors(name.split())))
    if page:
        forms.append(page_name(page))
    return frozenset(k for k in map(blocking_key, forms) if k is not None)


def widen_memos(size: int) -> None:
    """Gives the host memos ``size`` entries in this process (see ``keys.use_large_memos``)."""
    global _host, _company_host
    _host = lru_cache(maxsize=size)(_host.__wrapped__)
    _company_host = lru_cache(maxsize=size)(_company_host.__wrapped__)
