"""Phone numbers: parsing, validity, line type, country, sales region and E.164. Pure.

The one place that reads phone numbers, for submissions, scoring, the importers and
enrichment alike, and the one module that imports a libphonenumber port (D30). Every install
has ``phonenumbers``, the maintained port and the reference. When the ``fast`` extra is
installed (``pip install "dialscore[fast]"``), ``rphonenumbers`` stands in for it: a Rust port
with the same API and metadata release, several times faster, used only while
``tests/test_phones.py`` finds both agreeing on validity, type, country and E.164 for generated
text and for every region's example numbers.

``DIALSCORE_PHONE_LIBRARY``, read once when this module is first imported, chooses: ``auto``
(the default: rphonenumbers when it can be imported, else phonenumbers), ``phonenumbers`` or
``rphonenumbers`` (an error when it cannot be imported). ``LIBRARY`` names the one in use."""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from types import ModuleType
from typing import TYPE_CHECKING, Final, NamedTuple

# The reference port's time zone data, for number_area (the fast port has none of its own).
# Not its geocoding data: about 100 MiB once imported, for the states of US area codes, which
# dialscore.compliance keeps in a table made from it (P206).
import phonenumbers as _reference
from phonenumbers import timezone as _number_zones
from phonenumbers.tzdata import TIMEZONE_DATA as _ZONE_DATA

LIBRARY_ENV: Final = "DIALSCORE_PHONE_LIBRARY"
REFERENCE: Final = "phonenumbers"
FAST: Final = "rphonenumbers"
LIBRARY_CHOICES: Final = ("auto", REFERENCE, FAST)


def load_library(choice: str) -> tuple[str, ModuleType]:
    """The name and module of the library ``choice`` (one of ``LIBRARY_CHOICES``) asks for."""
    wanted = choice.strip().lower() or "auto"
    if wanted not in LIBRARY_CHOICES:
        raise ValueError(f"{LIBRARY_ENV} is one of {', '.join(LIBRARY_CHOICES)}, not {choice!r}")
    if wanted != REFERENCE:
        try:
            import rphonenumbers
        except ImportError as error:
            if wanted == FAST:
                raise ImportError(
                    f"{LIBRARY_ENV}={FAST}, which cannot be imported (it comes with "
                    f'pip install "dialscore[fast]"): {error}'
                ) from error
        else:
            return FAST, rphonenumbers
    import phonenumbers

    return REFERENCE, phonenumbers


if TYPE_CHECKING:
    # Checked against the reference's API, which the fast library copies.
    import phonenumbers as numbering

    LIBRARY: str
else:
    LIBRARY, numbering = load_library(os.environ.get(LIBRARY_ENV, "auto"))

# D5: a number written without "+" is read as a NANP (US) number unless told otherwise.
DEFAULT_COUNTRY = "US"
# The line types a contact's phone may be given as (P8), and the words clients use for them.
PHONE_TYPES = ("mobile", "direct", "hq", "other")
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

INVALID = "not a valid phone number"
UNREADABLE = "not a phone number"
WITH_EXTENSION = "a number with an extension"


class LineType(StrEnum):
    """What the numbering plan says a number is (libphonenumber's number types)."""

    FIXED_LINE = "fixed_line"
    MOBILE = "mobile"
    # NANP numbers: the plan does not tell landlines and mobiles apart.
    FIXED_LINE_OR_MOBILE = "fixed_line_or_mobile"
    TOLL_FREE = "toll_free"
    PREMIUM_RATE = "premium_rate"
    SHARED_COST = "shared_cost"
    VOIP = "voip"
    PERSONAL_NUMBER = "personal_number"
    PAGER = "pager"
    UAN = "uan"
    VOICEMAIL = "voicemail"


_LINE_TYPES = {getattr(numbering.PhoneNumberType, kind.name): kind for kind in LineType}


def _is_valid(parsed: numbering.PhoneNumber) -> bool:
    """``is_valid_number``, asked of the default country first: most numbers read are US
    ones, and checking one region is about four times faster than finding which of the 25
    regions of +1 a number belongs to (a number valid in the US is valid)."""
    return numbering.is_valid_number_for_region(parsed, DEFAULT_COUNTRY) or bool(
        numbering.is_valid_number(parsed)
    )


class PhoneNumber(NamedTuple):
    """A valid number as the numbering plan describes it (a named tuple, as ``ParsedPhone``
    is: made for every new number read)."""

    e164: str
    # ISO 3166 alpha-2; None for a non-geographic number (a global service, +800 …).
    country: str | None
    # D18: US for NANP numbers, EMEA or APAC by country, else None.
    region: str | None
    line_type: LineType
    extension: str | None


def country_or_default(value: str | None) -> str:
    """The ISO alpha-2 country a number without ``+`` is read in: ``value`` when it names
    one (P3), else the default."""
    if value:
        code = value.strip().upper()
        if len(code) == 2 and code in numbering.SUPPORTED_REGIONS:
            return code
    return DEFAULT_COUNTRY


@lru_cache(maxsize=65_536)
def analyse(text: str, country: str = DEFAULT_COUNTRY) -> PhoneNumber | None:
    """The number ``text`` spells, read in ``country`` when it has no ``+``; None when it is
    not a valid number. ``country`` must be a supported region (``country_or_default``)."""
    try:
        parsed = numbering.parse(text, country)
    except numbering.NumberParseException:
        return None
    if not _is_valid(parsed):
        return None
    line_type = _LINE_TYPES.get(numbering.number_type(parsed))
    found = numbering.region_code_for_number(parsed)
    if line_type is None or found is None:
        return None
    return PhoneNumber(
        e164=numbering.format_number(parsed, numbering.PhoneNumberFormat.E164),
        country=None if found == numbering.REGION_CODE_FOR_NON_GEO_ENTITY else found,
        region=region_for(parsed.country_code or 0, found),
        line_type=line_type,
        extension=parsed.extension or None,
    )


@lru_cache(maxsize=65_536)
def readable(number: str, home: str = DEFAULT_COUNTRY) -> str:
    """A number as a person in ``home`` writes it: national format for a number of that
    country, international format for others; the text itself when it is not a number."""
    try:
        parsed = numbering.parse(number, home)
    except numbering.NumberParseException:
        return number
    if not _is_valid(parsed):
        return number
    same = numbering.region_code_for_number(parsed) == home
    style = (
        numbering.PhoneNumberFormat.NATIONAL if same else numbering.PhoneNumberFormat.INTERNATIONAL
    )
    text: str = numbering.format_number(parsed, style)
    return text


def query_number(text: str, country: str | None = None) -> str | None:
    """The E.164 form of a number given in a URL's query (read in ``country`` when it has no
    ``+``; an unencoded '+' arrives as a space), None when it is not a valid number."""
    if text[:1] == " " and text.strip()[:1].isdigit():
        text = "+" + text.strip()
    phone = analyse(text.strip(), country_or_default(country))
    return None if phone is None else phone.e164


def e164_or_reason(text: str, country: str = DEFAULT_COUNTRY) -> tuple[str | None, str]:
    """The E.164 form of a number an importer reads, else None and why: not a number at
    all, not a valid one, or one with an extension (a list of lines holds none)."""
    try:
        parsed = numbering.parse(text, country)
    except numbering.NumberParseException:
        return None, UNREADABLE
    if parsed.extension:
        return None, WITH_EXTENSION
    if not _is_valid(parsed):
        return None, INVALID
    e164: str = numbering.format_number(parsed, numbering.PhoneNumberFormat.E164)
    return e164, ""


def normalise_type(value: str | None) -> str | None:
    """A type label as one of ``PHONE_TYPES`` (P8); None when none is given."""
    if value is None:
        return None
    return _TYPE_SYNONYMS.get(value.strip().lower(), "other")


# -- sales regions (D18) ----------------------------------------------------------------------


def _codes(*groups: str) -> frozenset[str]:
    return frozenset(code for group in groups for code in group.split())


EMEA = _codes(
    # Europe
    "AD AL AT AX BA BE BG BY CH CY CZ DE DK EE ES FI FO FR GB GG GI GR HR HU IE IM IS IT JE",
    "LI LT LU LV MC MD ME MK MT NL NO PL PT RO RS RU SE SI SJ SK SM UA VA XK",
    # Middle East, Caucasus and Central Asia
    "AE AM AZ BH GE IL IQ IR JO KG KW KZ LB OM PS QA SA SY TJ TM TR UZ YE",
    # Africa
    "AO BF BI BJ BW CD CF CG CI CM CV DJ DZ EG EH ER ET GA GH GM GN GQ GW KE KM LR LS LY MA",
    "MG ML MR MU MW MZ NA NE NG RE RW SC SD SH SL SN SO SS ST SZ TD TG TN TZ UG YT ZA ZM ZW",
)

APAC = _codes(
    "AF AU BD BN BT CC CK CN CX FJ FM HK ID IN IO JP KH KI KP KR LA LK MH MM MN MO MV MY NC",
    "NF NP NR NU NZ PF PG PH PK PN PW SB SG TH TK TL TO TV TW VN VU WF WS",
)


def region_for(country_code: int, country: str | None) -> str | None:
    """The sales region of a number of ``country_code`` in ``country`` (D18)."""
    if country_code == 1:
        return "US"
    if country in EMEA:
        return "EMEA"
    if country in APAC:
        return "APAC"
    return None


# -- where a number is (dialscore.compliance, P172) -------------------------------------------
# libphonenumber's time zone and geocoding data are read with the reference port whichever
# port is in use: the fast port has none of its own (its modules of those names are the
# reference's, slower on its objects). Validity and line type, the costly part, are asked of
# the port in use.

# libphonenumber's name for a zone it does not know.
UNKNOWN_ZONE: Final = "Etc/Unknown"


def _nanp_digits(e164: str) -> int | None:
    """A NANP number's ten digits (+1, the area code not starting with 0 or 1), else None."""
    if len(e164) == 12 and e164.startswith("+1") and e164[2:].isdigit() and e164[2] not in "01":
        return int(e164[2:])
    return None


@dataclass(frozen=True, slots=True)
class NumberArea:
    """Where the numbering plan puts a number: libphonenumber's region and time zone data."""

    valid: bool
    # ISO 3166 alpha-2, REGION_CODE_FOR_NON_GEO_ENTITY, or None when no region fits.
    region: str | None
    # The IANA zones of the number's block (NPA NXX for NANP, else its country's), without
    # UNKNOWN_ZONE.
    zones: tuple[str, ...]
    # Whether the number is valid and of a type libphonenumber places by its digits (fixed
    # line, a NANP number), not by its country code alone (toll-free, most mobiles abroad).
    geographic: bool


def number_area(e164: str) -> NumberArea | None:
    """Where the numbering plan puts a number given in E.164; None when it is not a number.
    A valid number's type is asked once (``analyse``, of the port in use): libphonenumber's
    time zone function would ask it again before the lookup made here, which is what it makes
    for a number of a geographic type; a valid number of another type has its country code's
    zones (asked once per code), and an invalid number's are asked as they are."""
    digits = _nanp_digits(e164)
    if digits is not None:
        parsed = _reference.PhoneNumber(country_code=1, national_number=digits)
    else:
        try:
            parsed = _reference.parse(e164, None)
        except _reference.NumberParseException:
            return None
    # Validity and type as every reader of numbers has them (the port in use, cached).
    known = analyse(e164)
    region: str | None
    if known is None:
        valid, region, geographic = False, _reference.region_code_for_number(parsed), False
    else:
        valid = True
        region = known.country or _reference.REGION_CODE_FOR_NON_GEO_ENTITY
        geographic = _reference.is_number_type_geographical(
            getattr(_reference.PhoneNumberType, known.line_type.name), parsed.country_code or 0
        )
    if geographic:
        zones = _known_zones(_number_zones.time_zones_for_geographical_number(parsed))
    elif valid:
        zones = _country_zones(parsed)
    else:
        zones = _known_zones(_number_zones.time_zones_for_number(parsed))
    return NumberArea(valid, region, zones, geographic)


@lru_cache(maxsize=1)
def _split_area_codes() -> frozenset[str]:
    """The NANP area codes (three digits) libphonenumber's time zone data does not give one
    answer for every number of: its prefixes under the code disagree, or leave exchanges to
    the answer for all of NANP (neither the code itself nor each first digit of an NXX, 2 to
    9, has an entry). A code without any entry has NANP's answer for all its numbers."""
    under: dict[str, set[tuple[str, ...]]] = {}
    for key, zones in _ZONE_DATA.items():
        if len(key) >= 4 and key[0] == "1":
            under.setdefault(key[1:4], set()).add(zones)
    return frozenset(
        code
        for code, answers in under.items()
        if len(answers) > 1
        or not (
            "1" + code in _ZONE_DATA or all(f"1{code}{digit}" in _ZONE_DATA for digit in "23456789")
        )
    )


def zoned_by_area_code(e164: str) -> bool:
    """Whether libphonenumber's time zone data gives every number of a NANP number's area
    code the same zones, as it does for nearly all of them; False for the few split between
    zones by NXX (Idaho's 208, Alaska's 907 …) and for numbers outside NANP."""
    return _nanp_digits(e164) is not None and e164[2:5] not in _split_area_codes()


def _known_zones(found: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(zone for zone in found if zone != UNKNOWN_ZONE)


# The zones of a valid number of a type that is not geographic (a toll-free or, in most
# countries, a mobile number) are its country code's: kept by country code, the first such
# number of each asks libphonenumber (which would work out the number's type again).
_zones_by_country_code: dict[int, tuple[str, ...]] = {}


def _country_zones(parsed: _reference.PhoneNumber) -> tuple[str, ...]:
    code = parsed.country_code or 0
    zones = _zones_by_country_code.get(code)
    if zones is None:
        zones = _zones_by_country_code[code] = _known_zones(
            _number_zones.time_zones_for_number(parsed)
        )
    return zones


def masked_number(number: str) -> str:
    """Enough of a number to tell log lines apart, not enough to dial it."""
    return f"{number[:3]}…{number[-2:]}" if len(number) > 6 else "…"
