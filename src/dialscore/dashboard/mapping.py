"""The choices of an upload's column mapping: a contact field, a phone of some type, kept as it
is, or left out; and which of the contact's phone slots each phone column fills. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from dialscore.dashboard.words import words
from dialscore.scoring.numbers import PHONE_SLOTS

EXTRA = "extra"
IGNORE = "ignore"
PHONE_PREFIX = "phone:"
# What a phone column may be chosen as; UNKNOWN leaves the type to the number itself.
UNKNOWN = "unknown"
PHONE_KINDS = ("mobile", "direct", "hq", "other", UNKNOWN)
# A column of the numbers' country, for numbers written without "+".
PHONE_COUNTRY = "phoneCountry"


def phone_choice(kind: str) -> str:
    return PHONE_PREFIX + kind


def phone_kind(choice: str) -> str | None:
    """``mobile`` for ``phone:mobile``; None for a choice that is not a phone."""
    if choice.startswith(PHONE_PREFIX) and choice[len(PHONE_PREFIX) :] in PHONE_KINDS:
        return choice[len(PHONE_PREFIX) :]
    return None


def phone_columns(mapping: Sequence[str]) -> list[tuple[str, int, str]]:
    """``(slot, column index, kind)`` of each column chosen as a phone, in column order: the
    first fills ``phone``, the next ``phone2`` and so on (at most five, ``mapping_errors``)."""
    found = [(i, kind) for i, c in enumerate(mapping) if (kind := phone_kind(c)) is not None]
    return [(slot, i, kind) for slot, (i, kind) in zip(PHONE_SLOTS, found, strict=False)]


def who_and_number(cells: Sequence[str], mapping: Sequence[str]) -> tuple[str, str]:
    """A row's person (first and last name, else the company) and first number, as the
    mapping reads them: what a list of rows left out shows beside each reason."""
    chosen: dict[str, int] = {}
    for i, choice in enumerate(mapping):
        chosen.setdefault(choice, i)

    def cell(choice: str) -> str:
        i = chosen.get(choice)
        return cells[i].strip() if i is not None and i < len(cells) else ""

    name = " ".join(part for part in (cell("firstName"), cell("lastName")) if part)
    numbers = (cells[i].strip() for _, i, _ in phone_columns(mapping) if i < len(cells))
    return name or cell("companyAccount"), next((n for n in numbers if n), "")


@cache
def offered() -> frozenset[str]:
    """Every choice a column may take."""
    fields = set(words().fields) | {PHONE_COUNTRY, EXTRA, IGNORE}
    return frozenset(fields | {phone_choice(kind) for kind in PHONE_KINDS})


def choice_label(choice: str) -> str:
    w = words()
    kind = phone_kind(choice)
    if kind is not None:
        return w.phone_choices[kind]
    if choice == PHONE_COUNTRY:
        return w.phone_country
    return w.mapping_choices.get(choice) or w.field(choice)


def grouped_choices() -> list[tuple[str, list[tuple[str, str]]]]:
    """The choices of the mapping list, ``(group, [(value, label)])``, in the order offered:
    the phones first, then the field groups, then keeping or leaving a column out."""
    w = words()
    groups: dict[str, list[tuple[str, str]]] = {group: [] for group in w.field_groups}
    groups[w.phone_group] += [(phone_choice(k), w.phone_choices[k]) for k in PHONE_KINDS]
    groups[w.phone_group].append((PHONE_COUNTRY, w.phone_country))
    for name, (label, group) in w.fields.items():
        groups[group].append((name, label))
    kept = [(value, label) for value, label in w.mapping_choices.items()]
    return [*groups.items(), (w.other_choices, kept)]


def mapping_errors(header: Sequence[str], mapping: Sequence[str]) -> dict[int, str]:
    """Per column index, why its choice cannot stand: an unknown choice, a field chosen for
    two columns, a sixth phone (a contact has five); and, at index -1, a mapping that uses
    no contact field at all."""
    w = words()
    errors: dict[int, str] = {}
    first: dict[str, int] = {}
    phones = 0
    for i, choice in enumerate(mapping):
        if choice in (EXTRA, IGNORE):
            continue
        if choice not in offered():
            kept, left_out = w.mapping_choices[EXTRA], w.mapping_choices[IGNORE]
            errors[i] = (
                f"Choose what the column holds, \u201c{kept}\u201d or \u201c{left_out}\u201d."
            )
        elif phone_kind(choice) is not None:
            phones += 1
            if phones > len(PHONE_SLOTS):
                errors[i] = (
                    f"A contact has at most {len(PHONE_SLOTS)} phones: choose "
                    f"\u201c{w.mapping_choices[EXTRA]}\u201d for this column or another one."
                )
            first.setdefault("phone", i)
        elif choice in first:
            errors[i] = (
                f"\u201c{choice_label(choice)}\u201d is already chosen for the column "
                f"\u201c{header[first[choice]]}\u201d."
            )
        else:
            first[choice] = i
    if not first:
        errors[-1] = "Choose what at least one column holds: a name, a phone, a company …"
    return errors
