"""Whether two person records are the same person, and how sure: the confidence of a match
and the rules behind it. Pure: no database, no clock, no network. The normal forms it compares
(names, addresses, companies, keys) are ``dialscore.identity``'s.

Three ways to be the same person, strongest first:

- **email**: the same normalised address (see ``identity.addresses.normalise_email``); role
  addresses such as ``info@`` identify nobody and are ignored;
- **linkedin**: the same canonical profile slug (see ``identity.addresses.linkedin_slug``);
- **name+company**: first and last names that agree (accents folded, nicknames, small
  typos) at the same company, known by its name without legal suffixes, a domain (website
  or a non-free-mail email) or its LinkedIn page. Never when the two records carry
  different emails or different LinkedIn profiles, never without a company on both sides.

A match carries a confidence in 0..1; callers treat one below their threshold
(``DEFAULT_MIN_CONFIDENCE`` unless configured) as no match."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from rapidfuzz import fuzz

from dialscore.enrichment.name_agreement import (
    SHORT_NAME_SLIP,
    Spelled,
    compatible,
    first_name_penalty,
    last_name_penalty,
    short_slip,
    spelled_names,
)
from dialscore.identity.addresses import email_key, linkedin_slug
from dialscore.identity.companies import (
    COMPANY_DESCRIPTORS,
    bare_label,
    domain_label,
    page_name,
    page_words,
    same_domain,
    without_descriptors,
)
from dialscore.identity.keys import Person, company_forms
from dialscore.identity.names import name_tokens

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

# Name+company: a base confidence, less a penalty for each weaker agreement (of the names:
# see name_agreement).
NAME_COMPANY_BASE = 0.98
COMPANY_SIMILAR = 0.04  # a near name ("Acme Software" / "Acme"), or a domain's name
COMPANY_PREFIX = 0.09  # a name's first words ("Valley" / "Valley Jade"): short form or namesake
COMPANY_OTHER_DOMAIN = 0.05  # both have domains, none shared
COMPANY_OTHER_PAGE = 0.03  # both have company LinkedIn pages, different ones
COMPANY_OTHER_NAME = 0.02  # matched by domain or page, yet the names differ
# Name+company with different addresses at different domains: a work and a personal one.
OTHER_ADDRESS = 0.02
# Two candidates closer than this are ambiguous by name+company (see ``best_match``).
AMBIGUITY_MARGIN = 0.015

_NO_DOMAINS: Mapping[str, str] = {}


@dataclass(frozen=True)
class Match:
    confidence: float  # 0..1
    basis: str  # "email" | "linkedin" | "name+company"


# -- companies --------------------------------------------------------------------------------


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


# -- profiles ---------------------------------------------------------------------------------


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
        self._spelled: tuple[Spelled, Spelled] | None = None
        self._company: tuple[str | None, frozenset[str], str | None] | None = None

    @property
    def spelled_first(self) -> Spelled:
        """The first names its own email address or profile spells where the typed name is
        within a typo of them, each with what reading it costs (see
        ``name_agreement.spelled_names``)."""
        return self._spelled_names()[0]

    @property
    def spelled_last(self) -> Spelled:
        return self._spelled_names()[1]

    def _spelled_names(self) -> tuple[Spelled, Spelled]:
        if self._spelled is None:
            self._spelled = spelled_names(self.first, self.last, self.email, self.linkedin)
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
            self._company = company_forms(self.person)
        return self._company

    @property
    def has_company(self) -> bool:
        return bool(self.company_name or self.domains or self.company_page)


@lru_cache(maxsize=65_536)
def profile(person: Person) -> Profile:
    """``Profile`` of a person, memoised (queries are compared with many candidates)."""
    return Profile(person)


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
        label = domain_label(domain)
        forms.update((label, bare_label(label)) if bare else (label,))
    if p.company_name:
        forms.update(_without_descriptors(p.company_name.split(), bare))
    if p.company_page:
        forms.update(_without_descriptors(page_words(p.company_page), bare))
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
    return ("".join(words), "".join(without_descriptors(words)))


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
        if any(same_domain(a, b) for a in q.domains for b in c.domains):
            strong = True
        elif not {domain_label(d) for d in q.domains} & {domain_label(d) for d in c.domains}:
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
    return any(same_domain(a, b) for a in q.domains for b in c.domains)


def _minor_namesake(p: Profile, dominant_domains: Mapping[str, str]) -> bool:
    """Whether the record's company bears a name that several companies bear, and is not the
    one most people of that name work at."""
    dominant = dominant_domains.get(p.company_name) if p.company_name else None
    return (
        dominant is not None
        and bool(p.domains)
        and not any(same_domain(d, dominant) for d in p.domains)
    )


def _names_own_company(other: Profile, minor: Profile, dominant_domains: Mapping[str, str]) -> bool:
    """Whether ``other`` names the company of ``minor`` (a record at a minor company of a
    shared name) by more than the shared name: its name, domain or page spells the minor
    company's own domain or page name ("Rural Dental" for "Rural" at ruraldental.com), and
    is not itself a shared name read as another company."""
    shared = (minor.company_name or "").replace(" ", "")
    own = {domain_label(d) for d in minor.domains}
    if minor.company_page:
        own.add(page_name(minor.company_page) or "")
    own = {f for f in own if len(f) >= 3 and f != shared}
    if not own & _company_forms(other):
        return False
    dominant = dominant_domains.get(other.company_name) if other.company_name else None
    return dominant is None or any(same_domain(d, dominant) for d in minor.domains)


def _identifier_confidence(base: float, q: Profile, c: Profile) -> float:
    """An email or profile match, weakened when both records name the person differently."""
    first = compatible(q.first, c.first, first=True) or (
        _name_penalty(q, c, first=True) is not None
    )
    last = compatible(q.last, c.last, first=False) or (_name_penalty(q, c, first=False) is not None)
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
        slip = bool(q.first and c.first) and short_slip(q.first[0], c.first[0])
        first = SHORT_NAME_SLIP if slip and _same_company_identifier(q, c) else None
    elif last is None and first == 0.0:
        slip = short_slip("".join(q.last), "".join(c.last))
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
