"""A contact's phone numbers as submitted, in slot order with the numbers enrichment
found, and the fictional numbers that the metadata still calls valid. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from dialscore.phones import LineType, analyse, country_or_default, normalise_type

PHONE_SLOTS = ("phone", "phone2", "phone3", "phone4", "phone5")
# Each slot with the names of its type and country fields.
_SLOT_FIELDS = tuple((slot, f"{slot}Type", f"{slot}Country") for slot in PHONE_SLOTS)
ENRICHED_TYPE = "Service Enriched Phone"

_SWITCHBOARD_TYPES = {LineType.TOLL_FREE, LineType.SHARED_COST}


class ParsedPhone(NamedTuple):
    """A submitted or found number as read. A named tuple, not a frozen dataclass (which
    sets each field through ``object.__setattr__``): one is made for every number of every
    submission."""

    raw: str
    position: int
    slot: str
    type_hint: str | None
    e164: str | None
    country: str | None
    region: str | None
    number_type: LineType | None
    extension: str | None
    # What the contact's phone list calls it, when not its type: "Service Enriched Phone N".
    label: str | None = None

    @property
    def valid(self) -> bool:
        return self.e164 is not None

    @property
    def number(self) -> str:
        return self.e164 or self.raw


def parse_phone(
    raw: str, *, position: int, slot: str, type_hint: str | None, country_hint: str | None
) -> ParsedPhone:
    """Parses one submitted number; a number without '+' is read in its country (default US)."""
    text = raw.strip()
    number = analyse(text, country_or_default(country_hint))
    hint = normalise_type(type_hint)
    if number is None:
        return ParsedPhone(text, position, slot, hint, None, None, None, None, None)
    return ParsedPhone(
        raw=text,
        position=position,
        slot=slot,
        type_hint=hint,
        e164=number.e164,
        country=number.country,
        region=number.region,
        number_type=number.line_type,
        extension=number.extension,
    )


# A number enrichment found, with the type its source gave it (mobile, direct, …) if any.
EnrichedNumber = tuple[str, str | None]


def parse_contact_phones(
    fields: dict[str, str], enriched: Sequence[EnrichedNumber] = ()
) -> list[ParsedPhone]:
    """The contact's submitted numbers in slot order, empty slots skipped, then the numbers
    enrichment found (D19: positions continue, type ``Service Enriched Phone N``; the
    source's type, when it gave one, is the number's type hint for scoring)."""
    phones: list[ParsedPhone] = []
    for slot, type_field, country_field in _SLOT_FIELDS:
        raw = fields.get(slot)
        if raw is None or not raw.strip():
            continue
        phones.append(
            parse_phone(
                raw,
                position=len(phones) + 1,
                slot=slot,
                type_hint=fields.get(type_field),
                country_hint=fields.get(country_field),
            )
        )
    for index, (raw, hint) in enumerate(enriched, start=1):
        parsed = parse_phone(
            raw, position=len(phones) + 1, slot="", type_hint=hint, country_hint=None
        )
        phones.append(parsed._replace(label=f"{ENRICHED_TYPE} {index}"))
    return phones


def enriched_numbers(
    phones: Sequence[Mapping[str, Any]], types: Sequence[str | None] | None
) -> list[EnrichedNumber]:
    """The numbers enrichment added to a scored contact's phone entries, in order, with the
    types their sources gave (``types``, kept beside the entries; None: none kept)."""
    numbers = [
        str(p["number"])
        for p in phones
        if p.get("number") and str(p.get("type") or "").startswith(ENRICHED_TYPE)
    ]
    hints = list(types or ())
    hints += [None] * (len(numbers) - len(hints))
    return list(zip(numbers, hints[: len(numbers)], strict=True))


def display_type(phone: ParsedPhone) -> str | None:
    if phone.label is not None:
        return phone.label
    if phone.type_hint is not None:
        return phone.type_hint
    if phone.number_type == LineType.MOBILE:
        return "mobile"
    if phone.number_type in _SWITCHBOARD_TYPES:
        return "hq"
    if phone.number_type == LineType.FIXED_LINE:
        return "direct"
    return "other" if phone.valid else None


# -- fictional numbers ------------------------------------------------------------------------

_RUN_UP = "01234567890123456789"
_RUN_DOWN = "98765432109876543210"
# N11 codes: 211 to 911.
_N11 = frozenset(f"{digit}11" for digit in "23456789")


def fictional_reason(phone: ParsedPhone) -> str | None:
    """Why a number the metadata calls valid is still not a real line, or None.

    NANP: 555-0100 to 555-0199 (reserved for fiction), 555-1212 (directory assistance), N11
    exchanges (service codes); anywhere: all digits the same, or a running sequence."""
    if phone.e164 is None:
        return None
    national = phone.e164[2:] if phone.e164.startswith("+1") else None
    if national is not None and len(national) == 10:
        exchange, line = national[3:6], national[6:]
        if exchange == "555" and ("0100" <= line <= "0199" or line == "1212"):
            return f"fictional number (555-{line})"
        if exchange in _N11 or national[:3] in _N11:
            return "N11 service code, not a subscriber line"
    # The subscriber part: NANP's exchange and line (7 digits), elsewhere the last 8 digits.
    subscriber = phone.e164[-7:] if national is not None else phone.e164[-8:]
    if len(set(subscriber)) == 1:
        return "placeholder number (all digits the same)"
    if subscriber in _RUN_UP or subscriber in _RUN_DOWN:
        return "placeholder number (running digits)"
    return None
