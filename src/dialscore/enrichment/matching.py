"""Identity resolution for enrichment: normalised lookup keys and the confidence that two
person records are the same person. Pure: no database, no clock, no network.

Three ways to be the same person, strongest first:

- **email**: the same normalised address (see ``normalise_email``); role addresses such as
  ``info@`` identify nobody and are ignored;
- **linkedin**: the same canonical profile slug (see ``linkedin_slug``);
- **name+company**: first and last names that agree (accents folded, nicknames, small
  typos) at the same company, known by its name without legal suffixes, a domain (website
  or a non-free-mail email) or its LinkedIn page. Never when the two records carry
  different emails or different LinkedIn profiles, never without a company on both sides.

A match carries a confidence in 0..1; callers treat one below their threshold
(``DEFAULT_MIN_CONFIDENCE`` unless configured) as no match."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

from rapidfuzz import fuzz
from rapidfuzz.distance import OSA

DEFAULT_MIN_CONFIDENCE = 0.9

# Confidences of the strong identifiers, and how much they lose when the records disagree.
EMAIL_CONFIDENCE = 0.99
LINKEDIN_CONFIDENCE = 0.99
BOTH_IDENTIFIERS_CONFIDENCE = 0.995
# A profile can be renamed (LinkedIn lets members change their vanity URL) or duplicated:
# the same address with another profile is still likely the same person.
EMAIL_WITH_OTHER_PROFILE = 0.92
# People have several addresses (work, personal): the same profile with another address is
# hardly weaker.
PROFILE_WITH_OTHER_EMAIL = 0.97
# The same identifier under another last name (marriage) or with a changed first name.
IDENTIFIER_OTHER_LAST_NAME = 0.95
IDENTIFIER_OTHER_FIRST_NAME = 0.6
IDENTIFIER_OTHER_NAME = 0.3

# Name+company: a base confidence, less a penalty for each weaker agreement.
NAME_COMPANY_BASE = 0.98
FIRST_MIDDLE_NAME = 0.01  # "John Michael" / "John"
FIRST_NICKNAME = 0.02  # "Bob" / "Robert", "Sara" / "Sarah"
FIRST_ONE_TYPO = 0.04
FIRST_TWO_TYPOS = 0.07
# A short name (3 or 4 letters) one keyboard slip from the other ("Noahh", "Lri" for "Lori"),
# where the other name agrees exactly and the company by its domain or page.
SHORT_NAME_SLIP = 0.05
FIRST_INITIAL = 0.07  # "J." / "John": only with all else exact does it reach 0.9
LAST_COMPOUND = 0.03  # "Garcia Lopez" / "Garcia"
LAST_ONE_TYPO = 0.05
LAST_TWO_TYPOS = 0.08
COMPANY_SIMILAR = 0.04  # a near name ("Acme Software" / "Acme"), or a domain's name
COMPANY_PREFIX = 0.09  # a name's first words ("Valley" / "Valley Jade"): short form or namesake
COMPANY_OTHER_DOMAIN = 0.05  # both have domains, none shared
COMPANY_OTHER_PAGE = 0.03  # both have company LinkedIn pages, different ones
COMPANY_OTHER_NAME = 0.02  # matched by domain or page, yet the names differ
# Name+company with different addresses at different domains: a work and a personal one.
OTHER_ADDRESS = 0.02
# Two candidates closer than this are ambiguous by name+company (see ``best_match``).
AMBIGUITY_MARGIN = 0.015

MAX_EMAIL = 254
MAX_SLUG = 200
MAX_NAME_KEY = 200
# Company blocking keys are the first letters of a company's name (or domain, or page) with
# the spaces removed: "Acme Software Inc.", "acmesoftware.com" and /company/acme all give
# "acme".
COMPANY_KEY_LENGTH = 4
_NO_DOMAINS: Mapping[str, str] = {}

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
_SHARED_HOSTS = frozenset(
    {
        "linkedin.com", "facebook.com", "twitter.com", "x.com", "instagram.com",
        "youtube.com", "medium.com", "github.com", "wixsite.com", "wordpress.com",
        "blogspot.com", "sites.google.com", "google.com", "bit.ly", "linktr.ee",
    }
)  # fmt: skip
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
# Given names and their short forms and spelling variants (formal name first).
NICKNAMES: Mapping[str, tuple[str, ...]] = {
    "abigail": ("abby", "abbie", "gail"),
    "albert": ("al", "bert", "bertie"),
    "alexander": ("alex", "alec", "al", "sandy", "sasha", "xander", "lex", "alexandre"),
    "alexandra": ("alex", "alexa", "sandra", "sandy", "sasha", "lexi", "ali"),
    "alexis": ("alex", "lexi"),
    "alfred": ("al", "alf", "fred", "freddie"),
    "allison": ("allie", "ally", "alison", "ali"),
    "amanda": ("mandy", "manda"),
    "andrew": ("andy", "drew", "andre", "andreas", "andres"),
    "angela": ("angie", "angelica"),
    "anthony": ("tony", "ant", "anton", "antonio"),
    "antonio": ("tony", "toni", "antonino"),
    "ann": ("anne", "annie", "nan", "nancy"),
    "arthur": ("art", "artie"),
    "barbara": ("barb", "barbie", "babs"),
    "benjamin": ("ben", "benny", "benji"),
    "beverly": ("bev",),
    "bradley": ("brad",),
    "cameron": ("cam",),
    "catherine": (
        "cathy", "cat", "kate", "katie", "kathy", "katherine", "kathryn", "katharine",
        "kat", "kay", "kitty", "caitlin", "katrina", "katarina", "cathryn",
    ),
    "charles": ("charlie", "chuck", "chas", "chaz", "carl", "carlos", "karl"),
    "charlotte": ("charlie", "lottie", "lotte"),
    "christian": ("chris", "christiaan", "kristian"),
    "christina": ("chris", "tina", "christy", "kristina", "cristina", "krista", "kristin"),
    "christine": ("chris", "christy", "kristine", "chrissy"),
    "christopher": ("chris", "kit", "topher", "cristopher", "kristopher", "cristobal"),
    "cynthia": ("cindy",),
    "daniel": ("dan", "danny", "dani"),
    "daniela": ("dani", "daniella", "danielle"),
    "david": ("dave", "davey", "davy"),
    "deborah": ("deb", "debbie", "debby", "debra"),
    "dennis": ("denny",),
    "dominic": ("dom", "dominick", "domenico"),
    "donald": ("don", "donnie"),
    "dorothy": ("dot", "dottie", "dolly"),
    "douglas": ("doug",),
    "edward": ("ed", "eddie", "eddy", "ted", "teddy", "ned", "eduardo", "edouard"),
    "eleanor": ("ellie", "nell", "nora", "elly"),
    "elizabeth": (
        "liz", "lizzie", "beth", "betty", "betsy", "eliza", "lisa", "libby", "elise",
        "elisabeth", "isabel", "elsa", "liza", "bess",
    ),
    "emily": ("em", "emmy", "emilie", "emilia"),
    "eric": ("erik", "rick", "ricky"),
    "eugene": ("gene",),
    "francis": ("frank", "frankie", "fran"),
    "franklin": ("frank", "frankie"),
    "frances": ("fran", "frannie", "francesca", "franziska"),
    "francisco": ("frank", "paco", "pancho", "cisco", "fran", "francesco", "franco"),
    "frederick": ("fred", "freddie", "freddy", "fritz", "frederic", "friedrich", "rick"),
    "gabriel": ("gabe", "gabi"),
    "gabriela": ("gabi", "gaby", "gabriella", "gabrielle"),
    "geoffrey": ("geoff", "jeff", "jeffrey", "jeffery"),
    "gerald": ("gerry", "jerry"),
    "gregory": ("greg", "gregg"),
    "harold": ("harry", "hal"),
    "henry": ("hank", "harry", "hal", "henri", "heinrich", "enrique", "enrico"),
    "isabella": ("bella", "izzy", "isabel", "isabelle", "isobel"),
    "jacob": ("jake", "jakob", "jacques", "jakub", "kuba"),
    "jacqueline": ("jackie", "jacky", "jacquelyn", "jaqueline"),
    "james": ("jim", "jimmy", "jamie", "jimbo", "diego", "jaime", "santiago"),
    "jennifer": ("jen", "jenny", "jenn", "jennie"),
    "jessica": ("jess", "jessie", "jessi"),
    "john": ("jon", "johnny", "jack", "jonny", "johann", "johannes", "hans", "juan", "jan",
             "giovanni", "ivan", "sean", "shaun", "shawn", "ian", "joao"),
    "jonathan": ("jon", "jonny", "johnny", "jonathon"),
    "joseph": ("joe", "joey", "jo", "jose", "josef", "giuseppe", "pepe", "beppe"),
    "joshua": ("josh",),
    "judith": ("judy", "judi", "jude"),
    "julia": ("julie", "jules", "giulia"),
    "katherine": ("kate", "katie", "kathy", "kat", "kathryn", "katharine", "kay"),
    "kathleen": ("kathy", "kate", "katie", "kath", "kay", "kathie", "kathlyn"),
    "kenneth": ("ken", "kenny"),
    "kimberly": ("kim", "kimmy", "kimberley"),
    "lawrence": ("larry", "laurence", "laurent", "lorenzo", "lars"),
    "leonard": ("len", "lenny", "leo", "leon"),
    "louis": ("lou", "louie", "luis", "luigi", "ludwig", "lewis"),
    "louise": ("lou", "lulu", "louisa", "luisa"),
    "margaret": ("maggie", "meg", "peggy", "marge", "margie", "greta", "margarita",
                 "marguerite", "margot", "molly", "daisy", "rita"),
    "mary": ("molly", "polly", "mae", "mamie"),
    "matthew": ("matt", "matty", "mathew", "matthias", "mateo", "matteo", "mathieu"),
    "michael": ("mike", "mikey", "mick", "mickey", "micky", "michel", "miguel", "michele",
                "mikhail", "misha", "mikael", "mikko"),
    "michelle": ("shelly", "michele", "chelle"),
    "natalie": ("nat", "natty", "nathalie", "natalia"),
    "nathan": ("nate", "nat"),
    "nathaniel": ("nate", "nat", "nathan"),
    "nicholas": ("nick", "nicky", "nico", "nicolas", "nicola", "nikolai", "niklas", "klaus"),
    "nicole": ("nikki", "nicky", "nichole", "nicolette"),
    "pamela": ("pam", "pammy"),
    "patricia": ("pat", "patty", "patsy", "trish", "tricia", "patrizia"),
    "patrick": ("pat", "paddy", "patrice", "patricio", "rick"),
    "peter": ("pete", "pedro", "pierre", "pietro", "piotr", "petr"),
    "philip": ("phil", "phillip", "felipe", "filippo", "philippe", "pip"),
    "raymond": ("ray", "raymundo", "ramon"),
    "rebecca": ("becky", "becca", "bex"),
    "richard": ("rich", "rick", "ricky", "dick", "richie", "rico", "ricardo", "riccardo"),
    "roberta": ("bobbie", "bobbi", "robbie", "berta"),
    "robert": ("rob", "bob", "bobby", "robbie", "bert", "roberto", "robin", "rupert"),
    "ronald": ("ron", "ronnie", "ronny"),
    "samantha": ("sam", "sammy", "sami"),
    "samuel": ("sam", "sammy", "samuele"),
    "sarah": ("sara", "sally", "sadie"),
    "stephanie": ("steph", "stefanie", "stephany", "stefania"),
    "stephen": ("steve", "steven", "stevie", "stefan", "esteban", "stefano", "etienne"),
    "susan": ("sue", "susie", "suzy", "suzanne", "susanne", "susanna"),
    "theodore": ("ted", "teddy", "theo"),
    "theresa": ("terry", "tess", "tessa", "teresa", "terri", "tracy"),
    "thomas": ("tom", "tommy", "thom", "tomas", "tommaso", "thomaz"),
    "timothy": ("tim", "timmy"),
    "valerie": ("val",),
    "victoria": ("vicky", "vicki", "tori", "viktoria"),
    "vincent": ("vince", "vinnie", "vincenzo", "vicente"),
    "walter": ("walt", "wally"),
    "william": ("will", "bill", "billy", "willy", "willie", "liam", "wilhelm", "guillermo",
                "guillaume", "wim"),
    "zachary": ("zach", "zack", "zak"),
}  # fmt: skip

_NAME_TITLES = frozenset({"dr", "mr", "mrs", "ms", "miss", "mx", "prof", "sir", "dame"})
_NAME_SUFFIXES = frozenset({"jr", "sr", "ii", "iii", "iv", "phd", "md", "esq", "mba", "cpa"})
# Particles of compound surnames, which alone do not make a surname agree.
_SURNAME_PARTICLES = frozenset(
    {"van", "von", "der", "den", "de", "del", "della", "di", "da", "das", "dos", "du", "la",
     "le", "el", "al", "bin", "ben", "ter", "ten", "y", "e"}
)  # fmt: skip
_SECOND_LEVELS = frozenset({"co", "com", "net", "org", "gov", "ac", "edu", "ne", "or", "gv"})
_FOLD_EXTRA = str.maketrans(
    {"ø": "o", "đ": "d", "ł": "l", "æ": "ae", "œ": "oe", "þ": "th", "ð": "d", "\u0131": "i"}
)
# Straight and typographic apostrophes, and the accents typed for them.
_APOSTROPHES = str.maketrans("", "", "'\u2019`\u00b4\u02bc")
_SEPARATORS = re.compile(r"[\W_]+")
_NOT_LETTERS = re.compile(r"[^a-z]+")
# Unicode's combining marks (accents once NFKD has split them from their letters).
_COMBINING = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
_WHITESPACE = re.compile(r"\s")
_NOT_IN_SLUG = re.compile(r"[\s/]")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://")
_HOST = re.compile(r"^[\w-]+(?:\.[\w-]+)+$")
# The ending of a web address in a company name: "Amazon.com, Inc.".
_WEB_ENDING = re.compile(r"\.(?:com|net|org|io|co|ai|biz|us|app)(?![\w.])")
_PUB_PART = re.compile(r"^[0-9a-f]{1,3}$")
# The common shapes, recognised at once (the general parsers give the same result for them).
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
class Keys:
    """The keys a query's candidates are looked up by. A stored record has the same, with
    one company key (``company_key``) and one initial (``first_initial``).

    ``email``: the normalised address (``normalise_email``), None for a role address;
    ``linkedin``: the canonical profile slug (``linkedin_slug``); ``last_name``: the folded
    last name without spaces or punctuation (``last_name_key``); ``companies``: every
    company key the query's company may be stored under (``company_keys``); ``initials``:
    the first letters of the first name and of the formal names a nickname stands for;
    ``company_name`` and ``domains``: the query's company name key and company domains,
    which records stored with a typo in the last name must share.

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


@dataclass(frozen=True)
class Match:
    confidence: float  # 0..1
    basis: str  # "email" | "linkedin" | "name+company"


# -- text -------------------------------------------------------------------------------------


def fold(text: str) -> str:
    """Lower case without accents: "Zoë Müller-Ørsted" becomes "zoe muller-orsted"; letters
    that do not decompose (ø, ł, đ, æ, œ, þ) take their usual Latin spelling."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.casefold().translate(_FOLD_EXTRA))
    return _COMBINING.sub("", decomposed)


def _text(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    text = value.strip()
    return text or None


def name_tokens(name: str | None) -> tuple[str, ...]:
    """The folded words of a name, apostrophes dropped ("O'Brien" is "obrien"), titles and
    generational suffixes left out ("Dr.", "Jr.", "III")."""
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
    """The blocking key of a last name: folded, without spaces, hyphens or apostrophes, so
    that "García-López", "Garcia Lopez" and "GARCIA LOPEZ" share it."""
    if last_name and last_name.isascii() and last_name.isalpha():
        return last_name.lower()[:MAX_NAME_KEY]
    key = "".join(name_tokens(last_name))[:MAX_NAME_KEY]
    return key or None


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
    plain = _PLAIN_EMAIL.fullmatch(text.lower())
    if plain is not None and plain.group(1) not in ("gmail.com", "googlemail.com"):
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
    if domain in ("gmail.com", "googlemail.com"):
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


def _linkedin_path(url: str | None) -> list[str] | None:
    """The path segments of a linkedin.com URL (any subdomain: www, country, mobile), without
    query string, fragment or empty segments; None when it is not a LinkedIn URL."""
    if not url:
        return None
    text = url.strip()
    lowered = text.lower()
    match = _SCHEME.match(lowered)
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


def company_linkedin_slug(url: str | None) -> str | None:
    """The canonical slug of a LinkedIn company page: ``acme-inc`` for
    ``https://uk.linkedin.com/company/Acme-Inc/about/?trk=x``; a numeric page id stays as it
    is (also from Sales Navigator's ``/sales/company/ID``); showcase and school pages are
    ``showcase/SLUG`` and ``school/SLUG``."""
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


# -- companies --------------------------------------------------------------------------------


# A directory names each company again for each of its people: the last names are kept.
@lru_cache(maxsize=1 << 16)
def company_name_key(name: str | None) -> str | None:
    """A company's name, comparable across records: folded, ``&`` read as "and", dots dropped
    (so that "S.A." and "L.L.C." read as suffixes), a web address's ending dropped
    ("Amazon.com"), words only, and without leading "The" and trailing legal suffixes
    ("Acme Holdings, Inc." is "acme")."""
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
    """The host of a website address or the domain of an email address, lower case, without
    ``www.``, port, path or query; None when there is none."""
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
    if domain in _SHARED_HOSTS:
        return True
    at = domain.find(".")
    while at >= 0:
        if domain[at + 1 :] in _SHARED_HOSTS:
            return True
        at = domain.find(".", at + 1)
    return False


def _domain_label(domain: str) -> str:
    """The name part of a domain: "acme" for "acme.com", "us.acme.co.uk"."""
    labels = domain.split(".")
    if len(labels) >= 3 and labels[-2] in _SECOND_LEVELS:
        return labels[-3]
    return labels[-2] if len(labels) >= 2 else labels[0]


def _same_domain(a: str, b: str) -> bool:
    """Equal, or one a subdomain of the other ("us.acme.com", "acme.com")."""
    if a == b:
        return True
    short, long = (a, b) if len(a) < len(b) else (b, a)
    if not long.endswith("." + short):
        return False
    labels = short.split(".")
    return len(labels) > 2 or (len(labels) == 2 and labels[0] not in _SECOND_LEVELS)


def company_name_penalty(a: str, b: str) -> float | None:
    """How much less than certain two company name keys (``company_name_key``) name the same
    company: 0 when equal; ``COMPANY_SIMILAR`` for the same letters ("jp morgan",
    "jpmorgan"), one the other with descriptive words or a trade ("acme", "acme software";
    "flux", "flux dental"), an acronym ("ibm", "international business machines") or a small
    typo in a longer name; ``COMPANY_PREFIX`` for one the other's first words ("valley",
    "valley jade"), which is often a short form and sometimes another company; None
    otherwise."""
    if a == b:
        return 0.0
    joined_a, joined_b = a.replace(" ", ""), b.replace(" ", "")
    if joined_a == joined_b:
        return COMPANY_SIMILAR
    short, long = (a.split(), b.split()) if len(a) <= len(b) else (b.split(), a.split())
    if long[: len(short)] == short and len("".join(short)) >= 3:
        if all(w in COMPANY_DESCRIPTORS for w in long[len(short) :]):
            return COMPANY_SIMILAR
        if len("".join(short)) >= 4:
            return COMPANY_PREFIX
    if len(short) == 1 and len(short[0]) >= 3 and len(long) >= 3:
        acronym = "".join(w[0] for w in long if w not in ("and", "of", "the"))
        if acronym == short[0]:
            return COMPANY_SIMILAR
    if min(len(joined_a), len(joined_b)) >= 6 and fuzz.ratio(joined_a, joined_b) >= 90:
        return COMPANY_SIMILAR
    return None


def _page_name(slug: str) -> str | None:
    """The name in a company page's vanity slug: "acme" for "acme-inc" or "acme-536"; None
    for a numeric page id or a showcase or school page."""
    name = "".join(_page_words(slug))
    return name if len(name) >= 3 else None


def _page_words(slug: str) -> list[str]:
    """The words of the name in a company page's vanity slug (see ``_page_name``)."""
    if slug.isdigit() or "/" in slug:
        return []
    words = [w for w in slug.split("-") if w]
    while len(words) > 1 and (words[-1].isdigit() or words[-1] in LEGAL_SUFFIXES):
        words.pop()
    return words


# -- names ------------------------------------------------------------------------------------


def _nickname_index() -> dict[str, frozenset[str]]:
    forms: dict[str, set[str]] = {}
    for formal, short in NICKNAMES.items():
        forms.setdefault(formal, set()).add(formal)
        for nickname in short:
            forms.setdefault(nickname, set()).add(formal)
    return {name: frozenset(found) for name, found in forms.items()}


_GIVEN_NAME_FORMS = _nickname_index()
_SHORT_FORMS: Mapping[str, tuple[str, ...]] = {
    formal: (formal, *short) for formal, short in NICKNAMES.items()
}


def given_name_forms(name: str) -> frozenset[str]:
    """The formal names a folded given name may stand for: {"robert"} for "bob",
    {"alexander", "alexandra", "alexis"} for "alex", the name itself when unknown."""
    return _GIVEN_NAME_FORMS.get(name, frozenset({name}))


def _gendered_pair(a: str, b: str) -> bool:
    """Names differing in a final "a": "Daniel"/"Daniela", "Mario"/"Maria", "Christine"/
    "Christina" are different names, usually of different people, not typos."""
    return a[-1] != b[-1] and "a" in (a[-1], b[-1])


def _typo_penalty(
    a: str, b: str, *, shortest: int, two_from: int, one: float, two: float
) -> float | None:
    """The penalty of a small typo between two words, or None: one edit (a letter changed,
    added or dropped, or two neighbours swapped) from ``shortest`` letters, two from
    ``two_from``; one letter shorter, only a swap, since in short names a changed letter
    often makes another name ("Mark", "Mary")."""
    size = min(len(a), len(b))
    if size < shortest - 1:
        return None
    allowed = 2 if size >= two_from else 1
    distance = OSA.distance(a, b, score_cutoff=allowed)
    if distance > allowed or _gendered_pair(a, b):
        return None
    if size < shortest and not (len(a) == len(b) and sorted(a) == sorted(b)):
        return None  # short: a swap of two letters only
    return one if distance == 1 else two


def first_name_penalty(a: Sequence[str], b: Sequence[str]) -> float | None:
    """How much less than certain two first names (``name_tokens``) agree: 0 when equal,
    small for a middle name, a nickname or a typo, None when they are different names."""
    if not a or not b:
        return None
    if a == b or "".join(a) == "".join(b):
        return 0.0
    x, y = a[0], b[0]
    if x == y:
        return FIRST_MIDDLE_NAME
    if len(x) == 1 or len(y) == 1:
        return FIRST_INITIAL if x[0] == y[0] else None
    if given_name_forms(x) & given_name_forms(y):
        return FIRST_NICKNAME
    return _typo_penalty(x, y, shortest=5, two_from=8, one=FIRST_ONE_TYPO, two=FIRST_TWO_TYPOS)


def last_name_penalty(a: Sequence[str], b: Sequence[str]) -> float | None:
    """How much less than certain two last names (``name_tokens``) agree: 0 when equal but
    for spaces and punctuation, small for one part of a compound name or a typo, else None."""
    if not a or not b:
        return None
    joined_a, joined_b = "".join(a), "".join(b)
    if joined_a == joined_b:
        return 0.0
    core_a = {w for w in a if w not in _SURNAME_PARTICLES and len(w) >= 3}
    core_b = {w for w in b if w not in _SURNAME_PARTICLES and len(w) >= 3}
    if core_a and core_b and (core_a <= core_b or core_b <= core_a):
        return LAST_COMPOUND
    return _typo_penalty(
        joined_a, joined_b, shortest=5, two_from=9, one=LAST_ONE_TYPO, two=LAST_TWO_TYPOS
    )


def first_name_similarity(a: str | None, b: str | None) -> float:
    """1 for the same first name, a little less for a nickname, middle name or typo, 0 for
    different names (or a missing one)."""
    penalty = first_name_penalty(name_tokens(a), name_tokens(b))
    return 0.0 if penalty is None else 1.0 - penalty


def last_name_similarity(a: str | None, b: str | None) -> float:
    """As ``first_name_similarity``, for last names."""
    penalty = last_name_penalty(name_tokens(a), name_tokens(b))
    return 0.0 if penalty is None else 1.0 - penalty


# -- people -----------------------------------------------------------------------------------


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


def _company_key_of(form: str | None) -> str | None:
    if not form:
        return None
    key = form.replace(" ", "")[:COMPANY_KEY_LENGTH]
    return key if len(key) >= 2 else None


# What a company's domain may add to its name: getacme.com, acmehq.com are Acme's.
_DOMAIN_PREFIXES = ("get", "try", "use", "join")
_DOMAIN_SUFFIXES = ("hq", "app", "inc", "group", "usa")


def _bare_label(label: str) -> str:
    """A domain's name without a prefix or suffix companies add to theirs: "acme" for
    "getacme" or "acmehq"."""
    for prefix in _DOMAIN_PREFIXES:
        if label.startswith(prefix) and len(label) - len(prefix) >= 3:
            return label[len(prefix) :]
    for suffix in _DOMAIN_SUFFIXES:
        if label.endswith(suffix) and len(label) - len(suffix) >= 3:
            return label[: -len(suffix)]
    return label


def company_keys(person: Person) -> frozenset[str]:
    """The company keys a record of ``person`` may be stored under: from its company name
    (also without trailing descriptive words: "Hub Health" may be stored as "Hub"), each
    company domain (website or work email; also without a prefix or suffix companies add to
    their domains: getacme.com may be stored as "Acme") and its company page's vanity
    name."""
    p = profile(person)
    labels = [_domain_label(d) for d in p.domains]
    forms: list[str | None] = [*labels, *map(_bare_label, labels)]
    if p.company_name:
        words = p.company_name.split()
        forms.append(p.company_name)
        while len(words) > 1 and words[-1] in COMPANY_DESCRIPTORS:
            words.pop()
        forms.append(" ".join(words))
    if p.company_page:
        forms.append(_page_name(p.company_page))
    return frozenset(k for k in map(_company_key_of, forms) if k is not None)


def company_key(person: Person) -> str | None:
    """The one company key a record is stored under: from its company name when it has one,
    else from its website's or work email's domain, else from its company page."""
    return record_keys(person).company


def first_initial(person: Person) -> str | None:
    """The first letter of a record's folded first name, stored to find records whose last
    name has a typo."""
    return record_keys(person).initial


@dataclass(frozen=True)
class RecordKeys:
    """What a stored record (a directory row, a client's contact) keeps to be found by:
    ``email``, ``linkedin`` and ``last_name`` as in ``Keys``, its one ``company`` key
    (``company_key``) and ``initial`` (``first_initial``); and, for telling companies of one
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
    address, mail_domain = _email_key_and_domain(email)
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


def _email_key_and_domain(email: str | None) -> tuple[str | None, str | None]:
    """``email_key`` and ``company_domain`` of an email address, a plain one (most) read
    once for both."""
    if email:
        plain = _PLAIN_EMAIL.fullmatch(email.strip().lower())
        if plain is not None and plain.group(1) not in ("gmail.com", "googlemail.com"):
            address = plain.group(0)
            local = address[: plain.start(1) - 1]
            key = None if len(address) > MAX_EMAIL or local in ROLE_ADDRESSES else address
            host = _host(plain.group(1))
            return key, None if host is None else _company_host(host)
    return email_key(email), company_domain(email)


# A directory names the same last names again and again: the last ones are kept.
_last_name_key = lru_cache(maxsize=1 << 16)(last_name_key)


# A directory names each company again for each of its people: the last ones are kept.
@lru_cache(maxsize=1 << 16)
def _company_identity(
    company: str | None, website: str | None, page_url: str | None
) -> tuple[str | None, str | None, str | None]:
    """A record's company name key, website's company domain and company page."""
    return company_name_key(company), company_domain(website), _company_page(page_url, website)


@lru_cache(maxsize=1 << 16)
def _stored_company_key(name: str | None, domain: str | None, page: str | None) -> str | None:
    """The one company key a record is stored under: from its company name when it has one,
    else from its website's or work email's domain, else from its company page."""
    if name:
        return _company_key_of(name)
    if domain:
        return _company_key_of(_domain_label(domain))
    return _company_key_of(_page_name(page)) if page else None


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
    global _company_identity, _stored_company_key, _company_page, _host, _company_host
    _company_identity = lru_cache(maxsize=LARGE_MEMO)(_company_identity.__wrapped__)
    _stored_company_key = lru_cache(maxsize=LARGE_MEMO)(_stored_company_key.__wrapped__)
    _company_page = lru_cache(maxsize=LARGE_MEMO)(_company_page.__wrapped__)
    _host = lru_cache(maxsize=LARGE_MEMO)(_host.__wrapped__)
    _company_host = lru_cache(maxsize=LARGE_MEMO)(_company_host.__wrapped__)


def page_only(person: Person) -> str | None:
    """The company page of a person whose company is known by its LinkedIn page alone (no
    company name, website or work address), else None."""
    p = profile(person)
    return p.company_page if not p.company_name and not p.domains else None


def with_company_of_page(person: Person, name: str | None, domain: str | None) -> Person:
    """A person known by a company page alone, with the company name (a name key) and
    domain the directory's records with that page show: a page id says nothing of the
    company's name, its records do."""
    if page_only(person) is None:
        return person
    return replace(person, company=name or person.company, website=domain or person.website)


def dominant_domains(counts: Iterable[tuple[str, str, int]]) -> dict[str, str]:
    """From (company name key, domain, people) counts, the names seen with more than one
    domain, each with the domain most of its people work at (of equals, the first in
    alphabetical order)."""
    by_name: dict[str, list[tuple[int, str]]] = {}
    for name, domain, people in counts:
        by_name.setdefault(name, []).append((-people, domain))
    return {name: min(seen)[1] for name, seen in by_name.items() if len(seen) > 1}


def lookup_keys(person: Person) -> Keys:
    p = profile(person)
    initials: set[str] = set()
    if p.first:
        initials.add(p.first[0][0])
        initials.update(form[0] for form in given_name_forms(p.first[0]) if form)
    return Keys(
        email=p.email,
        linkedin=p.linkedin,
        last_name=last_name_key(person.last_name),
        companies=company_keys(person) if p.has_company else frozenset(),
        initials=frozenset(initials),
        company_name=p.company_name,
        domains=p.domains,
    )


# Names a record's email address or profile spells, each with what reading it costs.
_Spelled = tuple[tuple[str, float], ...]


class Profile:
    """A person's normal forms, computed once per record: the identifiers and names at once,
    the company's forms when first asked for (most candidates differ by first name)."""

    __slots__ = ("_company", "_spelled", "email", "first", "last", "linkedin", "person")

    def __init__(self, person: Person) -> None:
        self.person = person
        self.email = email_key(person.email)
        self.linkedin = linkedin_slug(person.linkedin_url)
        self.first = name_tokens(person.first_name)
        self.last = name_tokens(person.last_name)
        self._spelled: tuple[_Spelled, _Spelled] | None = None
        self._company: tuple[str | None, frozenset[str], str | None] | None = None

    @property
    def spelled_first(self) -> _Spelled:
        """The first names its own email address or profile spells where the typed name is
        within a typo of them, each with what reading it costs (see ``_spelled_names``)."""
        return self._spelled_names()[0]

    @property
    def spelled_last(self) -> _Spelled:
        return self._spelled_names()[1]

    def _spelled_names(self) -> tuple[_Spelled, _Spelled]:
        if self._spelled is None:
            self._spelled = _spelled_names(self.first, self.last, self.email, self.linkedin)
        return self._spelled

    @property
    def company_name(self) -> str | None:
        return self._company_forms()[0]

    @property
    def domains(self) -> frozenset[str]:
        return self._company_forms()[1]

    @property
    def company_page(self) -> str | None:
        return self._company_forms()[2]

    def _company_forms(self) -> tuple[str | None, frozenset[str], str | None]:
        if self._company is None:
            person = self.person
            domains = {company_domain(person.website), company_domain(person.email)}
            self._company = (
                company_name_key(person.company),
                frozenset(d for d in domains if d is not None),
                _company_page(person.company_linkedin_url, person.website),
            )
        return self._company

    @property
    def has_company(self) -> bool:
        return bool(self.company_name or self.domains or self.company_page)


@lru_cache(maxsize=65_536)
def profile(person: Person) -> Profile:
    """``Profile`` of a person, memoised (queries are compared with many candidates)."""
    return Profile(person)


def _spelled_words(email: str | None, slug: str | None) -> list[list[str]]:
    """The words of a name an email address's local part or a profile slug may spell:
    ["jane", "doe"] for jane.doe77@… or /in/jane-doe-3b2a1c (digits and ids left out),
    ["jdoe"] for jdoe@…"""
    found: list[list[str]] = []
    if email:
        words = [w for w in _NOT_LETTERS.split(email.rsplit("@", 1)[0]) if w]
        if words:
            found.append(words)
    if slug and "/" not in slug:
        words = [w for w in fold(slug).split("-") if w.isalpha()]
        if words:
            found.append(words)
    return found


def _near(typed: str, spelled: str) -> bool:
    """Whether a typed name word is a slip of ``spelled``: an edit or two, or cut short."""
    if min(len(typed), len(spelled)) >= 3 and (
        typed.startswith(spelled) or spelled.startswith(typed)
    ):
        return True
    allowed = 1 if min(len(typed), len(spelled)) < 6 else 2
    return OSA.distance(typed, spelled, score_cutoff=allowed) <= allowed


def _misspells_first(typed: str, spelled: str) -> bool:
    """Whether a typed first name is a slip of ``spelled`` or of one of its short forms
    ("Triish", "Patricia"), or its initial."""
    forms = {spelled} | {
        short for formal in given_name_forms(spelled) for short in _SHORT_FORMS.get(formal, ())
    }
    if len(typed) == 1:
        return any(form[0] == typed for form in forms)
    return any(_near(typed, form) for form in forms)


def _spelled_names(
    first: tuple[str, ...], last: tuple[str, ...], email: str | None, slug: str | None
) -> tuple[tuple[tuple[str, float], ...], tuple[tuple[str, float], ...]]:
    """The first and last names a record's own email address or profile spells where its
    typed names are within a typo of them (a typed "Triish Nelson" at
    patricia.nelson@…, "Adms" at badams@…), each with what reading it costs: a typo's (an
    initial's for a typed initial). A spelled first name counts when the same address spells
    the typed last name, and the other way round."""
    if not first or not last:
        return (), ()
    typed_first, typed_last = first[0], "".join(last)
    firsts: dict[str, float] = {}
    lasts: dict[str, float] = {}
    for words in _spelled_words(email, slug):
        pairs: list[tuple[str, str]] = []
        if len(words) >= 2:
            pairs += [(words[0], "".join(words[1:k])) for k in range(2, len(words) + 1)]
        else:
            word = words[0]
            if word.endswith(typed_last) and len(word) > len(typed_last):
                pairs.append((word[: -len(typed_last)], typed_last))  # janedoe@, jdoe@
            if len(word) > len(typed_first) > 1 and word.startswith(typed_first):
                pairs.append((typed_first, word[len(typed_first) :]))
            if len(word) >= 4 and word[0] == typed_first[0]:
                pairs.append((word[0], word[1:]))  # jdoe@ for a misspelt Doe
            pairs.append((word, ""))  # jane@
        for spelled_first, spelled_last in pairs:
            if (
                spelled_first != typed_first
                and len(spelled_first) > 1
                and spelled_last in (typed_last, "")
                and _misspells_first(typed_first, spelled_first)
            ):
                cost = FIRST_INITIAL if len(typed_first) == 1 else FIRST_ONE_TYPO
                firsts[spelled_first] = min(cost, firsts.get(spelled_first, cost))
            if (
                spelled_last
                and spelled_last != typed_last
                and len(spelled_last) > 1
                and (
                    spelled_first == typed_first[0]
                    or first_name_penalty((spelled_first,), first) is not None
                )
                and _near(typed_last, spelled_last)
            ):
                lasts[spelled_last] = LAST_ONE_TYPO
    return tuple(sorted(firsts.items())), tuple(sorted(lasts.items()))


def _name_penalty(q: Profile, c: Profile, *, first: bool) -> float | None:
    """How much less than certain two records' first (or last) names agree, reading each
    record's name as its email address or profile spells it where they differ by a typo."""
    compare = first_name_penalty if first else last_name_penalty
    a, b = (q.first, c.first) if first else (q.last, c.last)
    found = compare(a, b)
    if found is not None:
        return found
    spelled_q = q.spelled_first if first else q.spelled_last
    spelled_c = c.spelled_first if first else c.spelled_last
    if not spelled_q and not spelled_c:
        return None
    best: float | None = None
    for x, cost_x in ((a, 0.0), *(((n,), cost) for n, cost in spelled_q)):
        for y, cost_y in ((b, 0.0), *(((n,), cost) for n, cost in spelled_c)):
            if x is a and y is b:
                continue
            penalty = compare(x, y)
            if penalty is not None and (best is None or penalty + cost_x + cost_y < best):
                best = penalty + cost_x + cost_y
    return best


def _company_forms(p: Profile, *, bare: bool = False) -> set[str]:
    """The spellings of a record's company that can be compared across kinds: its name
    without spaces, its domains' names ("acme" for "acme.co.uk"), its page's vanity name.
    ``bare``: also each without what companies add to their name: descriptive words ("Acme
    Consulting", /company/acme-consulting), a legal word a domain keeps (acmegroup.com), a
    domain's prefix or suffix (getacme.com, acmehq.com)."""
    forms: set[str] = set()
    for domain in p.domains:
        label = _domain_label(domain)
        forms.update((label, _bare_label(label)) if bare else (label,))
    if p.company_name:
        forms.update(_without_descriptors(p.company_name.split(), bare))
    if p.company_page:
        forms.update(_without_descriptors(_page_words(p.company_page), bare))
    return {f for f in forms if len(f) >= 3}


def _same_company_form(q: Profile, c: Profile) -> bool:
    """Whether one record's company spells the other's without what companies add to their
    name ("Acme", acmegroup.com; but not "Acme Systems", "Acme Software", which drop
    different words)."""
    full_q, full_c = _company_forms(q), _company_forms(c)
    return bool(full_q & _company_forms(c, bare=True) or _company_forms(q, bare=True) & full_c)


def _without_descriptors(words: Sequence[str], bare: bool) -> tuple[str, ...]:
    """A name's words joined, and (``bare``) joined again without its trailing descriptive
    words."""
    if not words or not bare:
        return ("".join(words),)
    kept = list(words)
    while len(kept) > 1 and kept[-1] in COMPANY_DESCRIPTORS:
        kept.pop()
    return ("".join(words), "".join(kept))


def _company_penalty(
    q: Profile, c: Profile, dominant_domains: Mapping[str, str] = _NO_DOMAINS
) -> float | None:
    """How much less than certain the two records' companies are the same one; None when
    nothing shows they are. The same page or domain is sure; so is the same name; a near
    name, or one kind's name equal to another's ("acme.com", "Acme Inc.", /company/acme),
    less so; pages, domains or names that differ where the other evidence agrees weaken it.

    A name several companies bear (``dominant_domains``: name key → the domain most people
    of that name work at) is read as the company at that domain: a record of another
    company of the name agrees with nobody by the shared name alone, only by a longer name
    (or a page) that spells its own domain's or page's name."""
    strong = False
    penalty = 0.0
    if q.company_page and c.company_page:
        if q.company_page == c.company_page:
            strong = True
        else:
            penalty += COMPANY_OTHER_PAGE
    if q.domains and c.domains:
        if any(_same_domain(a, b) for a in q.domains for b in c.domains):
            strong = True
        elif not {_domain_label(d) for d in q.domains} & {_domain_label(d) for d in c.domains}:
            penalty += COMPANY_OTHER_DOMAIN  # acme.com and acme.de: the same firm's sites
    named = (
        company_name_penalty(q.company_name, c.company_name)
        if q.company_name and c.company_name
        else None
    )
    if strong:
        if q.company_name and c.company_name and named is None:
            penalty += COMPANY_OTHER_NAME
        return penalty
    # Neither page nor domain agrees: the names must show it.
    for minor, other in ((q, c), (c, q)):
        if _minor_namesake(minor, dominant_domains):
            if not _names_own_company(other, minor, dominant_domains):
                return None
            return penalty + (COMPANY_SIMILAR if named is None else min(named, COMPANY_SIMILAR))
    if _company_forms(q) & _company_forms(c) or (
        named is None
        and not (q.company_name and c.company_name)  # two names that differ tell
        and _same_company_form(q, c)
    ):
        named = COMPANY_SIMILAR if named is None else min(named, COMPANY_SIMILAR)
    return None if named is None else penalty + named


def _same_company_identifier(q: Profile, c: Profile) -> bool:
    """Whether two records show the same company page or a shared company domain."""
    if q.company_page and q.company_page == c.company_page:
        return True
    return any(_same_domain(a, b) for a in q.domains for b in c.domains)


def _key_neighbours() -> dict[str, str]:
    """The keys around each letter of a QWERTY keyboard, whose rows are staggered."""
    rows = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
    near: dict[str, set[str]] = {}
    for r, row in enumerate(rows):
        for i, key in enumerate(row):
            around = near.setdefault(key, set())
            around.update(row[j] for j in (i - 1, i + 1) if 0 <= j < len(row))
            if r + 1 < len(rows):  # the row below is shifted half a key to the right
                below = rows[r + 1]
                for j in (i - 1, i):
                    if 0 <= j < len(below):
                        around.add(below[j])
                        near.setdefault(below[j], set()).add(key)
    return {key: "".join(sorted(around)) for key, around in near.items()}


_KEY_NEIGHBOURS = _key_neighbours()


def _short_slip(a: str, b: str) -> bool:
    """Whether two short names (3 or 4 letters, the longer at most 5) are one keyboard slip
    apart: a letter doubled or dropped, two neighbours swapped, or a key next to the right
    one. A changed letter that is no neighbouring key ("Mark", "Mary") is another name."""
    if a == b or min(len(a), len(b)) < 3 or max(len(a), len(b)) > 5:
        return False
    if len(a) == len(b):
        diffs = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diffs) == 1:
            return b[diffs[0]] in _KEY_NEIGHBOURS.get(a[diffs[0]], "")
        i = diffs[0]
        return diffs == [i, i + 1] and (a[i], a[i + 1]) == (b[i + 1], b[i])
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return len(long) == len(short) + 1 and any(
        long[:i] + long[i + 1 :] == short for i in range(len(long))
    )


def _minor_namesake(p: Profile, dominant_domains: Mapping[str, str]) -> bool:
    """Whether the record's company bears a name that several companies bear, and is not the
    one most people of that name work at."""
    dominant = dominant_domains.get(p.company_name) if p.company_name else None
    return (
        dominant is not None
        and bool(p.domains)
        and not any(_same_domain(d, dominant) for d in p.domains)
    )


def _names_own_company(other: Profile, minor: Profile, dominant_domains: Mapping[str, str]) -> bool:
    """Whether ``other`` names the company of ``minor`` (a record at a minor company of a
    shared name) by more than the shared name: its name, domain or page spells the minor
    company's own domain or page name ("Rural Dental" for "Rural" at ruraldental.com), and
    is not itself a shared name read as another company."""
    shared = (minor.company_name or "").replace(" ", "")
    own = {_domain_label(d) for d in minor.domains}
    if minor.company_page:
        own.add(_page_name(minor.company_page) or "")
    own = {f for f in own if len(f) >= 3 and f != shared}
    if not own & _company_forms(other):
        return False
    dominant = dominant_domains.get(other.company_name) if other.company_name else None
    return dominant is None or any(_same_domain(d, dominant) for d in minor.domains)


def _compatible(a: Sequence[str], b: Sequence[str], *, first: bool) -> bool:
    """Whether two names could be one person's, loosely: for records that share an email
    or a profile, a typo in a short name or a shortened one ("Gar", "Gary") is no conflict."""
    if not a or not b:
        return True
    penalty = first_name_penalty(a, b) if first else last_name_penalty(a, b)
    if penalty is not None:
        return True
    x, y = "".join(a), "".join(b)
    if x.startswith(y) or y.startswith(x):
        return True
    return OSA.distance(x, y, score_cutoff=2) <= (1 if min(len(x), len(y)) < 6 else 2)


def _identifier_confidence(base: float, q: Profile, c: Profile) -> float:
    """An email or profile match, weakened when both records name the person differently."""
    first = _compatible(q.first, c.first, first=True) or (
        _name_penalty(q, c, first=True) is not None
    )
    last = _compatible(q.last, c.last, first=False) or (
        _name_penalty(q, c, first=False) is not None
    )
    if not first and not last:
        return min(base, IDENTIFIER_OTHER_NAME)
    if not first:
        return min(base, IDENTIFIER_OTHER_FIRST_NAME)
    if not last:
        return min(base, IDENTIFIER_OTHER_LAST_NAME)
    return base


def match(
    query: Person, candidate: Person, *, dominant_domains: Mapping[str, str] = _NO_DOMAINS
) -> Match | None:
    """Whether ``candidate`` is the person ``query`` describes, and how sure; None when
    nothing shows it. Callers compare the confidence with their threshold.
    ``dominant_domains``: for company names several companies bear, the domain most people
    of that name work at (see ``_company_penalty``)."""
    return match_profiles(profile(query), profile(candidate), dominant_domains=dominant_domains)


def match_profiles(
    q: Profile, c: Profile, *, dominant_domains: Mapping[str, str] = _NO_DOMAINS
) -> Match | None:
    """``match`` of a query's and a candidate's profiles."""
    same_email = q.email is not None and q.email == c.email
    same_profile = q.linkedin is not None and q.linkedin == c.linkedin
    other_email = q.email is not None and c.email is not None and not same_email
    other_profile = q.linkedin is not None and c.linkedin is not None and not same_profile
    if same_email or same_profile:
        if same_email and same_profile:
            base, basis = BOTH_IDENTIFIERS_CONFIDENCE, "email"
        elif same_email:
            base = EMAIL_WITH_OTHER_PROFILE if other_profile else EMAIL_CONFIDENCE
            basis = "email"
        else:
            base = PROFILE_WITH_OTHER_EMAIL if other_email else LINKEDIN_CONFIDENCE
            basis = "linkedin"
        return Match(_identifier_confidence(base, q, c), basis)
    if other_profile:
        return None
    other_address = 0.0
    if other_email:
        # Two addresses at one domain are two mailboxes, so two people; at different
        # domains they may be one person's work and personal addresses.
        assert q.email is not None and c.email is not None
        if q.email.rsplit("@", 1)[1] == c.email.rsplit("@", 1)[1]:
            return None
        other_address = OTHER_ADDRESS
    # The names first: most candidates found by name and company key differ by first name,
    # and telling so needs none of the company's forms.
    first = _name_penalty(q, c, first=True)
    last = _name_penalty(q, c, first=False)
    # A keyboard slip in a short name, where the other name is exact and the company page
    # or domain the same (a record without a first name has none to slip in).
    if first is None and last == 0.0:
        slip = bool(q.first and c.first) and _short_slip(q.first[0], c.first[0])
        first = SHORT_NAME_SLIP if slip and _same_company_identifier(q, c) else None
    elif last is None and first == 0.0:
        slip = _short_slip("".join(q.last), "".join(c.last))
        last = SHORT_NAME_SLIP if slip and _same_company_identifier(q, c) else None
    if first is None or last is None:
        return None
    if not (q.has_company and c.has_company):
        return None
    company = _company_penalty(q, c, dominant_domains)
    if company is None:
        return None
    confidence = NAME_COMPANY_BASE - first - last - company - other_address
    return Match(round(max(0.0, confidence), 4), "name+company")


def best_match(
    query: Person,
    candidates: Iterable[Person],
    *,
    min_confidence: float = DEFAULT_MIN_CONFIDENCE,
    dominant_domains: Mapping[str, str] = _NO_DOMAINS,
) -> tuple[int, Match] | None:
    """The position of the candidate that best matches ``query`` and its match, or None when
    none reaches ``min_confidence``, or when the best is a name+company match that another
    candidate matches about as well (two people of the same name at the company: which one
    is unknown). Of equal email or LinkedIn matches (duplicate records), the first wins."""
    return best_of(
        (match(query, c, dominant_domains=dominant_domains) for c in candidates),
        min_confidence=min_confidence,
    )


def best_of(
    matches: Iterable[Match | None], *, min_confidence: float = DEFAULT_MIN_CONFIDENCE
) -> tuple[int, Match] | None:
    """``best_match``'s choice among one query's matches with its candidates, in order."""
    best: tuple[int, Match] | None = None
    runner_up: Match | None = None
    for position, found in enumerate(matches):
        if found is None or found.confidence < min_confidence:
            continue
        if best is None or found.confidence > best[1].confidence:
            runner_up = best[1] if best is not None else None
            best = (position, found)
        elif runner_up is None or found.confidence > runner_up.confidence:
            runner_up = found
    if best is None:
        return None
    if (
        runner_up is not None
        and best[1].basis == "name+company"
        and best[1].confidence - runner_up.confidence < AMBIGUITY_MARGIN
    ):
        return None
    return best
