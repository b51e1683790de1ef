"""The baseline scorer: line type from libphonenumber metadata to a reachability status.

Pure: a contact's phone fields in, phone entries with statuses, leadStatus and bestPhone out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import phonenumbers
from phonenumbers import NumberParseException, PhoneMetadata, PhoneNumberFormat, PhoneNumberType
from phonenumbers.phonenumberutil import _number_type_helper

from dialscore.scoring.regions import region_for

PHONE_SLOTS = ("phone", "phone2", "phone3", "phone4", "phone5")
# Reachability tier, optionally with one modifier (D15).
PHONE_STATUSES = (
    "p1", "p1 - h", "p1 - ivr", "p1 - dnc", "p1 - sf",
    "p2", "p2 - h", "p2 - ivr", "p2 - sf",
    "p3", "p3 - h", "p3 - ivr", "p3 - sf",
    "na", "na - h", "na - ivr", "na - auth", "na - dnc",
)  # fmt: skip
PHONE_TYPES = ("mobile", "direct", "hq", "other")
DEFAULT_REGION = "US"
ENRICHED_TYPE = "Service Enriched Phone"

_TYPE_SYNONYMS = {
    "mobile": "mobile",
    "cell": "mobile",
    "cellular": "mobile",
    "mobile phone": "mobile",
    "cell phone": "mobile",
    "wireless": "mobile",
    "direct": "direct",
    "work": "direct",
    "office": "direct",
    "direct dial": "direct",
    "landline": "direct",
    "business": "direct",
    "hq": "hq",
    "main": "hq",
    "company": "hq",
    "switchboard": "hq",
    "headquarters": "hq",
    "other": "other",
}

_SWITCHBOARD_TYPES = {PhoneNumberType.TOLL_FREE, PhoneNumberType.SHARED_COST}
_LOW_TYPES = {
    PhoneNumberType.VOIP,
    PhoneNumberType.PERSONAL_NUMBER,
    PhoneNumberType.PAGER,
    PhoneNumberType.UAN,
    PhoneNumberType.VOICEMAIL,
    PhoneNumberType.PREMIUM_RATE,
}


@dataclass(frozen=True)
class ParsedPhone:
    raw: str
    position: int
    slot: str
    type_hint: str | None
    e164: str | None
    country: str | None
    region: str | None
    number_type: int | None
    extension: str | None

    @property
    def valid(self) -> bool:
        return self.e164 is not None

    @property
    def number(self) -> str:
        return self.e164 or self.raw


def normalise_type(value: str | None) -> str | None:
    if value is None:
        return None
    return _TYPE_SYNONYMS.get(value.strip().lower(), "other")


def _region_hint(value: str | None) -> str:
    if value:
        code = value.strip().upper()
        if len(code) == 2 and code in phonenumbers.SUPPORTED_REGIONS:
            return code
    return DEFAULT_REGION


@dataclass(frozen=True)
class _Analysis:
    e164: str
    country: str | None
    region: str | None
    number_type: int
    extension: str | None


@lru_cache(maxsize=65_536)
def _analyse(text: str, region_hint: str) -> _Analysis | None:
    """Validity, country and line type of one number, resolving its region only once.

    ``is_valid_number`` and ``number_type`` each look the region up again; together with
    ``region_code_for_number`` that tripled the cost of every number. This is the same test
    ``is_valid_number`` makes: the number matches a type pattern of its own region."""
    try:
        parsed = phonenumbers.parse(text, region_hint)
    except NumberParseException:
        return None
    country = phonenumbers.region_code_for_number(parsed)
    if country is None:
        return None
    metadata = PhoneMetadata.metadata_for_region_or_calling_code(parsed.country_code or 0, country)
    if metadata is None:
        return None
    line_type = _number_type_helper(phonenumbers.national_significant_number(parsed), metadata)
    if line_type == PhoneNumberType.UNKNOWN:
        return None
    return _Analysis(
        e164=phonenumbers.format_number(parsed, PhoneNumberFormat.E164),
        country=None if country == "001" else country,
        region=region_for(parsed.country_code or 0, country),
        number_type=line_type,
        extension=parsed.extension or None,
    )


def parse_phone(
    raw: str, *, position: int, slot: str, type_hint: str | None, country_hint: str | None
) -> ParsedPhone:
    """Parses one submitted number; a number without '+' is read in its country (default US)."""
    text = raw.strip()
    analysis = _analyse(text, _region_hint(country_hint))
    hint = normalise_type(type_hint)
    if analysis is None:
        return ParsedPhone(text, position, slot, hint, None, None, None, None, None)
    return ParsedPhone(
        raw=text,
        position=position,
        slot=slot,
        type_hint=hint,
        e164=analysis.e164,
        country=analysis.country,
        region=analysis.region,
        number_type=analysis.number_type,
        extension=analysis.extension,
    )


def parse_contact_phones(fields: dict[str, str], enriched: Sequence[str] = ()) -> list[ParsedPhone]:
    """The contact's submitted numbers in slot order, empty slots skipped, then the numbers
    enrichment found (D19: positions continue, type ``Service Enriched Phone N``)."""
    phones: list[ParsedPhone] = []
    for slot in PHONE_SLOTS:
        raw = fields.get(slot)
        if raw is None or not raw.strip():
            continue
        phones.append(
            parse_phone(
                raw,
                position=len(phones) + 1,
                slot=slot,
                type_hint=fields.get(f"{slot}Type"),
                country_hint=fields.get(f"{slot}Country"),
            )
        )
    for index, raw in enumerate(enriched, start=1):
        parsed = parse_phone(
            raw, position=len(phones) + 1, slot="", type_hint=None, country_hint=None
        )
        phones.append(replace(parsed, type_hint=f"{ENRICHED_TYPE} {index}"))
    return phones


def display_type(phone: ParsedPhone) -> str | None:
    if phone.type_hint is not None:
        return phone.type_hint
    if phone.number_type == PhoneNumberType.MOBILE:
        return "mobile"
    if phone.number_type in _SWITCHBOARD_TYPES:
        return "hq"
    if phone.number_type == PhoneNumberType.FIXED_LINE:
        return "direct"
    return "other" if phone.valid else None


def baseline_status(phone: ParsedPhone) -> str:
    if not phone.valid:
        return "na"
    if phone.number_type in _SWITCHBOARD_TYPES or phone.type_hint == "hq":
        return "p2 - h"
    if phone.number_type == PhoneNumberType.MOBILE:
        return "p1"
    if phone.number_type == PhoneNumberType.FIXED_LINE_OR_MOBILE and phone.type_hint == "mobile":
        return "p1"
    if phone.number_type in _LOW_TYPES:
        return "p3"
    return "p2"


def phone_entry(phone: ParsedPhone, status: str | None) -> dict[str, Any]:
    return {
        "number": phone.number,
        "status": status,
        "type": display_type(phone),
        "country": phone.country,
        "region": phone.region,
        "position": phone.position,
        "ivrPath": None,
    }


# -- contact-level results (D16, D17) -----------------------------------------------------------

_TIER_RANK = {"p1": 0, "p2": 1, "p3": 2}
_MODIFIER_RANK = {None: 0, "sf": 1, "ivr": 2, "h": 3}


def split_status(status: str) -> tuple[str, str | None]:
    tier, _, modifier = status.partition(" - ")
    return tier, modifier or None


def lead_status(phones: list[dict[str, Any]]) -> str:
    if not phones:
        return "No Numbers Found"
    statuses = [p["status"] for p in phones]
    if any(s is None for s in statuses):
        return "Uncontacted"
    tiers = [split_status(s)[0] for s in statuses]
    best = min((_TIER_RANK[t] for t in tiers if t in _TIER_RANK), default=None)
    if best is None:
        return "Needs Attention"
    return ("P1", "P2", "P3")[best]


def best_phone(phones: list[dict[str, Any]]) -> dict[str, Any] | None:
    candidates = []
    for entry in phones:
        status = entry["status"]
        if status is None:
            continue
        tier, modifier = split_status(status)
        if tier not in _TIER_RANK or modifier == "dnc":
            continue
        rank = (
            _TIER_RANK[tier],
            _MODIFIER_RANK.get(modifier, len(_MODIFIER_RANK)),
            0 if entry["type"] == "mobile" else 1,
            entry["position"],
        )
        candidates.append((rank, entry))
    if not candidates:
        return None
    entry = min(candidates, key=lambda c: c[0])[1]
    return {"number": entry["number"], "status": entry["status"], "ivrPath": entry["ivrPath"]}


@dataclass(frozen=True)
class ContactScore:
    phones: list[dict[str, Any]]
    lead_status: str
    best_phone: dict[str, Any] | None


def unscored(phones: Sequence[ParsedPhone]) -> ContactScore:
    entries = [phone_entry(p, None) for p in phones]
    return ContactScore(entries, "Uncontacted", None)


def score_contact(fields: dict[str, str], enriched: Sequence[str] = ()) -> ContactScore:
    parsed = parse_contact_phones(fields, enriched)
    phones = [phone_entry(p, baseline_status(p)) for p in parsed]
    return ContactScore(phones, lead_status(phones), best_phone(phones))
