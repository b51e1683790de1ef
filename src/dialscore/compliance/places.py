"""Where a number is: its time zone and, for a US number, its state, from libphonenumber's
time zone data and the states of US area codes its geocoding data names (a table made from
it, ``us_area_codes.toml``), narrowed by the contact's address."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Final, NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dialscore.phones import UNKNOWN_ZONE, NumberArea, number_area, zoned_by_area_code

# US territories have country codes of their own in ISO 3166 and libphonenumber; the federal
# rule covers them, so they are read as the US and the territory as its subdivision.
US_TERRITORIES: Final = frozenset({"PR", "GU", "VI", "AS", "MP"})


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


# Keyed by the text as given: a job's contacts spell their states a few ways.
@lru_cache(maxsize=4096)
def state_code(text: str | None) -> str | None:
    """A US state's code from a contact's ``stateProvince`` ("NY", "new york"), else None."""
    if not text:
        return None
    return _names().get(_plain(text))


def _plain(name: str) -> str:
    return " ".join(name.replace(".", " ").split()).lower()


class NumberPlace(NamedTuple):
    """What the numbering plan says about where a number is. A tuple: it is part of the key
    every number's bearings are looked up by, and a tuple hashes in C, about four times
    faster than a frozen dataclass's generated ``__hash__``."""

    # ISO 3166 country the rules are looked up by (US for its territories); None: not known.
    country: str | None
    # The state of a US number's area code, from libphonenumber's geocoding data.
    area_state: str | None
    # The IANA zones the number's block spans; empty when not known.
    zones: tuple[str, ...]


@lru_cache(maxsize=1)
def area_code_states() -> dict[str, str]:
    """The state of each US area code (P206), by +1 and the code ("+1212"): the packaged
    table made from libphonenumber's geocoding data (``scripts/us_area_codes.py``)."""
    text = resources.files("dialscore.compliance").joinpath("us_area_codes.toml").read_text()
    return {f"+1{code}": state for code, state in tomllib.loads(text).items()}


def _place(e164: str) -> tuple[NumberPlace, str | None]:
    """Where a number is, and what its place is kept under (``_kept_under``); None for an
    invalid number (what the answer for an invalid number says is not true of its
    neighbours)."""
    area = number_area(e164)
    if area is None:
        return NumberPlace(None, None, ()), None
    if area.region in US_TERRITORIES:
        place = NumberPlace("US", area.region, area.zones)
    elif area.region != "US":
        place = NumberPlace(area.region, None, area.zones)
    else:
        # A US area code lies in one state, the one its numbers are named after (P206).
        state = area_code_states().get(_nanp_area(e164)) if area.geographic else None
        place = NumberPlace("US", state, area.zones)
    return place, _kept_under(e164, area, place) if area.valid else None


def _kept_under(e164: str, area: NumberArea, place: NumberPlace) -> str:
    """The key of a valid number's place (P207): a NANP number's area code when it is a
    number of the US whose area code's numbers all have its zones, and either a state (its
    area code's, P206) or no place finer than its country (toll-free: a whole area code of
    one type); else a NANP number's NPA NXX block, the finest the data goes; else the number."""
    area_code = _nanp_area(e164)
    if not area_code:
        return e164
    if (
        place.country == "US"
        and zoned_by_area_code(e164)
        and (place.area_state is not None or not area.geographic)
    ):
        return area_code
    return e164[:_NANP_KEY]


def _nanp_area(e164: str) -> str:
    """+1 and a NANP number's area code ("+1212"); "" for a number outside NANP."""
    return e164[:_AREA_CODE_KEY] if e164.startswith("+1") and len(e164) == 12 else ""


def state_in_description(description: str) -> str | None:
    """The state in a name of libphonenumber's geocoding data: "New York, NY" or "Florida";
    None for a name of no state ("United States", "")."""
    return state_code(description.rsplit(", ", 1)[-1]) or state_code(description)


# NANP time zone and geocoding data go no finer than +1 NPA NXX (7 digits): valid numbers
# sharing those digits share the answer, so the first 8 characters of E.164 are the key, or
# the first 5 (+1 NPA) for an area code all of whose numbers share it (``_kept_under``).
_NANP_KEY: Final = 8
_CACHE_SIZE: Final = 65536
_places: dict[str, NumberPlace] = {}
# +1 NPA: the first 5 characters of E.164.
_AREA_CODE_KEY: Final = 5


def number_place(e164: str) -> NumberPlace:
    """Where the numbering plan puts a number given in E.164."""
    area_code = _nanp_area(e164)
    if area_code:
        known = _places.get(area_code) or _places.get(e164[:_NANP_KEY])
    else:
        known = _places.get(e164)
    if known is not None:
        return known
    place, kept_under = _place(e164)
    if kept_under is not None:
        if len(_places) >= _CACHE_SIZE:
            _places.clear()
        _places[kept_under] = place
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


def number_zone(e164: str, state_province: str | None, time_zone: str | None) -> str | None:
    """The IANA zone of a number given in E.164, narrowed by its contact's ``stateProvince``
    and ``timeZone`` as a verdict narrows it (P171); None when it is not one."""
    place = number_place(e164)
    contact_state = state_code(state_province) if place.country == "US" else None
    return narrow_zone(place.zones, contact_state, time_zone)


def forget_places() -> None:
    """Empties what this module keeps (the places by block, the states of area codes and of
    contacts' addresses): the first verdict of each number block then costs what it costs in
    a new process."""
    _places.clear()
    area_code_states.cache_clear()
    state_code.cache_clear()
