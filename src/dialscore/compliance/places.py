"""Where a number is: its time zone and, for a US number, its state, from libphonenumber's
time zone and geocoding data narrowed by the contact's address."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

# The reference port, imported here until dialscore.phones (the one module meant to import a
# port, D30) offers time zones and geocoding; then the fast port serves them too (P172).
import phonenumbers
from phonenumbers import geocoder
from phonenumbers import timezone as number_zones

# US territories have country codes of their own in ISO 3166 and libphonenumber; the federal
# rule covers them, so they are read as the US and the territory as its subdivision.
US_TERRITORIES: Final = frozenset({"PR", "GU", "VI", "AS", "MP"})
UNKNOWN_ZONE: Final = "Etc/Unknown"


@dataclass(frozen=True, slots=True)
class UsState:
    code: str
    name: str
    zones: frozenset[str]
    aliases: tuple[str, ...]


@lru_cache(maxsize=1)
def us_states() -> dict[str, UsState]:
    """The packaged table of US states and territories, by code."""
    text = resources.files("dialscore.compliance").joinpath("us_states.toml").read_text("utf-8")
    table = tomllib.loads(text)
    return {
        code: UsState(
            code, entry["name"], frozenset(entry["zones"]), tuple(entry.get("aliases", ()))
        )
        for code, entry in table.items()
    }


@lru_cache(maxsize=1)
def _names() -> dict[str, str]:
    names: dict[str, str] = {}
    for state in us_states().values():
        names[state.code.lower()] = state.code
        for name in (state.name, *state.aliases):
            names[_plain(name)] = state.code
    return names


def state_code(text: str | None) -> str | None:
    """A US state's code from a contact's ``stateProvince`` ("NY", "new york"), else None."""
    if not text:
        return None
    return _names().get(_plain(text))


def _plain(name: str) -> str:
    return " ".join(name.replace(".", " ").split()).lower()


@dataclass(frozen=True, slots=True)
class NumberPlace:
    """What the numbering plan says about where a number is."""

    # ISO 3166 country the rules are looked up by (US for its territories); None: not known.
    country: str | None
    # The state of a US number's area code, from libphonenumber's geocoding data.
    area_state: str | None
    # The IANA zones the number's block spans; empty when not known.
    zones: tuple[str, ...]


def _read(e164: str) -> phonenumbers.PhoneNumber | None:
    """The number in E.164 as libphonenumber's object. A NANP number (+1 and ten digits, the
    area code not starting with 0 or 1) is built from its digits: what parsing would give,
    without the parsing."""
    if len(e164) == 12 and e164.startswith("+1") and e164[2:].isdigit() and e164[2] not in "01":
        return phonenumbers.PhoneNumber(country_code=1, national_number=int(e164[2:]))
    try:
        return phonenumbers.parse(e164, None)
    except phonenumbers.NumberParseException:
        return None


def _place(e164: str) -> tuple[NumberPlace, bool]:
    """Where a number is, and whether it is valid (what the answer for an invalid number says
    is not true of its neighbours)."""
    parsed = _read(e164)
    if parsed is None:
        return NumberPlace(None, None, ()), False
    # Most numbers are US ones: one region's check, not a search of the 25 regions of +1.
    region: str | None
    if phonenumbers.is_valid_number_for_region(parsed, "US"):
        valid, region = True, "US"
    else:
        valid = bool(phonenumbers.is_valid_number(parsed))
        region = phonenumbers.region_code_for_number(parsed)
    # A valid number's type, asked once: libphonenumber's time zone and geocoding functions
    # would each ask it again before the lookups below, which are what they do for a number
    # of a geographic type; for the others (and invalid ones) they are called as they are.
    geographic = valid and phonenumbers.is_number_type_geographical(
        phonenumbers.number_type(parsed), parsed.country_code or 0
    )
    if geographic:
        found = number_zones.time_zones_for_geographical_number(parsed)
    else:
        found = number_zones.time_zones_for_number(parsed)
    zones = tuple(z for z in found if z != UNKNOWN_ZONE)
    if region in US_TERRITORIES:
        return NumberPlace("US", region, zones), valid
    if region != "US":
        return NumberPlace(region, None, zones), valid
    if geographic:
        description = geocoder.description_for_valid_number(parsed, "en")
    else:
        description = geocoder.description_for_number(parsed, "en")
    # "New York, NY" or "Florida"; "" or "United States" for a non-geographic code.
    area_state = state_code(description.rsplit(", ", 1)[-1]) or state_code(description)
    return NumberPlace("US", area_state, zones), valid


# NANP time zone and geocoding data go no finer than +1 NPA NXX (7 digits): valid numbers
# sharing those digits share the answer, so the first 8 characters of E.164 are the key.
_NANP_KEY: Final = 8
_CACHE_SIZE: Final = 65536
_places: dict[str, NumberPlace] = {}


def number_place(e164: str) -> NumberPlace:
    """Where the numbering plan puts a number given in E.164."""
    key = e164[:_NANP_KEY] if e164.startswith("+1") and len(e164) == 12 else e164
    known = _places.get(key)
    if known is not None:
        return known
    place, valid = _place(e164)
    if valid:
        if len(_places) >= _CACHE_SIZE:
            _places.clear()
        _places[key] = place
    return place


@lru_cache(maxsize=1024)
def zone_named(name: str | None) -> ZoneInfo | None:
    """The IANA zone of a name, or None when it is not one."""
    if not name or name == UNKNOWN_ZONE:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def narrow_zone(
    zones: tuple[str, ...], contact_state: str | None, contact_zone: str | None
) -> str | None:
    """The number's one zone; when it spans several (or none), the contact's explicit
    ``timeZone``, else the one of them in use in the contact's state; None when still not
    one (P171)."""
    if len(zones) == 1:
        return zones[0]
    if zone_named(contact_zone) is not None:
        return contact_zone
    if contact_state is not None and zones:
        state = us_states().get(contact_state)
        if state is not None:
            left = [zone for zone in zones if zone in state.zones]
            if len(left) == 1:
                return left[0]
    return None
