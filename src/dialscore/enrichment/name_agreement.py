"""How far two people's names agree: first and last names (middle names, initials,
nicknames, compound surnames, typos, keyboard slips), also read as a record's own email
address or LinkedIn profile spells them. Pure; the penalties are the matcher's."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rapidfuzz.distance import OSA

from dialscore.identity.names import (
    SURNAME_PARTICLES,
    fold,
    given_name_forms,
    name_tokens,
    short_forms,
)

# What each weaker agreement of names takes off a name+company match's confidence.
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

_NOT_LETTERS = re.compile(r"[^a-z]+")
# Names a record's email address or profile spells, each with what reading it costs.
Spelled = tuple[tuple[str, float], ...]


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
    core_a = {w for w in a if w not in SURNAME_PARTICLES and len(w) >= 3}
    core_b = {w for w in b if w not in SURNAME_PARTICLES and len(w) >= 3}
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
        short for formal in given_name_forms(spelled) for short in short_forms(formal)
    }
    if len(typed) == 1:
        return any(form[0] == typed for form in forms)
    return any(_near(typed, form) for form in forms)


def spelled_names(
    first: tuple[str, ...], last: tuple[str, ...], email: str | None, slug: str | None
) -> tuple[Spelled, Spelled]:
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


def short_slip(a: str, b: str) -> bool:
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


def compatible(a: Sequence[str], b: Sequence[str], *, first: bool) -> bool:
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
