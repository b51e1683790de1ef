"""Addresses that identify a person, comparable across records: email addresses (and the
role addresses that identify nobody) and LinkedIn URLs (profile slugs, page paths)."""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import unquote

MAX_EMAIL = 254
MAX_SLUG = 200

# Local parts of shared mailboxes: the same info@ is not the same person.
ROLE_ADDRESSES = frozenset(
    {
        "info", "sales", "contact", "contactus", "admin", "office", "hello", "support",
        "team", "hr", "jobs", "careers", "marketing", "billing", "accounts", "accounting",
        "enquiries", "inquiries", "reception", "noreply", "no-reply", "donotreply",
        "webmaster", "press", "media", "service", "help", "mail", "general", "postmaster",
        "legal", "privacy", "security", "orders", "feedback",
    }
)  # fmt: skip
# The one large provider that ignores the dots of an address's local part, by both its names.
GMAIL_DOMAINS = ("gmail.com", "googlemail.com")

_WHITESPACE = re.compile(r"\s")
_NOT_IN_SLUG = re.compile(r"[\s/]")
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://")
_PUB_PART = re.compile(r"^[0-9a-f]{1,3}$")
# The common shapes, recognised at once (the general parsers give the same result for them).
PLAIN_EMAIL = re.compile(r"[a-z0-9_%-]+(?:\.[a-z0-9_%-]+)*@([a-z0-9-]+(?:\.[a-z0-9-]+)+)")
_PLAIN_PROFILE = re.compile(
    r"(?:https?://)?(?:www\.|[a-z]{2}\.)?linkedin\.com/in/([a-z0-9-]{1,100})(?:/[a-z]{2})?/?"
    r"(?:\?[^#/]*)?",
    re.IGNORECASE,
)


# -- email ------------------------------------------------------------------------------------


def normalise_email(value: str | None) -> str | None:
    """The comparable form of an email address, or None when it is not one.

    Trimmed and lower-cased (``mailto:`` and a display name around ``<…>`` dropped). The
    ``+tag`` of the local part is dropped for every domain, since the mailbox is the same;
    dots of the local part are dropped only for Gmail (``googlemail.com`` is ``gmail.com``),
    the one large provider that ignores them; elsewhere ``j.smith`` and ``jsmith`` can be
    different people."""
    if not value:
        return None
    text = value.strip()
    plain = PLAIN_EMAIL.fullmatch(text.lower())
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


def is_role_address(email: str) -> bool:
    """Whether a normalised address is a shared mailbox (``info@``, ``sales@``…)."""
    return email.split("@", 1)[0] in ROLE_ADDRESSES


def email_key(value: str | None) -> str | None:
    """The lookup key of an email: the normalised address, None for a role address."""
    email = normalise_email(value)
    return None if email is None or is_role_address(email) else email


# -- LinkedIn ---------------------------------------------------------------------------------


def linkedin_path(url: str | None) -> list[str] | None:
    """The path segments of a linkedin.com URL (any subdomain: www, country, mobile), without
    query string, fragment or empty segments; None when it is not a LinkedIn URL."""
    if not url:
        return None
    text = url.strip()
    lowered = text.lower()
    match = SCHEME.match(lowered)
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


def linkedin_segment_slug(segment: str) -> str | None:
    """A LinkedIn path segment as a slug: percent-decoded, case folded, None when empty, too
    long or not one segment. Raises ``UnicodeDecodeError`` for a broken encoding."""
    slug = unicodedata.normalize("NFC", unquote(segment, errors="strict")).strip().casefold()
    if not slug or len(slug) > MAX_SLUG or _NOT_IN_SLUG.search(slug):
        return None
    return slug


def linkedin_slug(url: str | None) -> str | None:
    """The canonical slug of a LinkedIn profile URL, or None when it is not one.

    Any subdomain (``www``, ``uk``, ``de``, ``m``), scheme or none, query string, fragment
    and trailing slashes; percent-encoding decoded (``j%C3%BCrgen`` is ``jürgen``) and case
    folded. Old public URLs ``/pub/NAME/A/B/C`` map to the profile LinkedIn redirects them
    to, ``NAME-CCCBBBA`` (``/pub/jane-doe/a7/576/b50`` is ``jane-doe-b50576a7``). Profile
    sub-pages (``/in/SLUG/details/…``) and locale segments are ignored."""
    if not url:
        return None
    plain = _PLAIN_PROFILE.fullmatch(url.strip())
    if plain is not None:
        return plain.group(1).lower()
    segments = linkedin_path(url)
    if not segments or len(segments) < 2:
        return None
    try:
        if segments[0] == "in":
            return linkedin_segment_slug(segments[1])
        if segments[0] == "pub" and segments[1] != "dir":
            if len(segments) == 2:
                return linkedin_segment_slug(segments[1])
            parts = [p.lower() for p in segments[2:5]]
            if len(parts) == 3 and all(_PUB_PART.match(p) for p in parts):
                first, middle, last = parts
                slug = f"{segments[1]}-{last.zfill(3)}{middle.zfill(3)}{first}"
                return linkedin_segment_slug(slug)
    except UnicodeDecodeError:
        return None
    return None
