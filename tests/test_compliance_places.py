"""Where a number is, and what the engine keeps between verdicts: the faster paths give what
libphonenumber's public functions give, and each cache key tells apart what differs
(dialscore.compliance.places, .verdict, .best_hours; dialscore.phones.number_area)."""

from __future__ import annotations

import importlib.util
import random
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import phonenumbers
import pytest
from phonenumbers import geocoder
from phonenumbers import timezone as number_zones

from dialscore.compliance import (
    CallTally,
    assess,
    load_rules,
    places,
    present,
    tally_calls,
    written,
)
from dialscore.compliance.places import (
    US_TERRITORIES,
    NumberPlace,
    area_code_states,
    state_code,
    state_in_description,
)
from dialscore.phones import UNKNOWN_ZONE, analyse

NOW = datetime(2026, 11, 27, 15, 0, tzinfo=UTC)


def _reference_place(e164: str) -> NumberPlace:
    """Where a number is, from libphonenumber's public functions alone (the reference port):
    what places._place must give."""
    parsed = phonenumbers.parse(e164, None)
    region = phonenumbers.region_code_for_number(parsed)
    zones = tuple(z for z in number_zones.time_zones_for_number(parsed) if z != UNKNOWN_ZONE)
    if region in US_TERRITORIES:
        return NumberPlace("US", region, zones)
    if region != "US":
        return NumberPlace(region, None, zones)
    description = geocoder.description_for_number(parsed, "en")
    area_state = state_code(description.rsplit(", ", 1)[-1]) or state_code(description)
    return NumberPlace("US", area_state, zones)


def _numbers(count: int, seed: int = 172) -> list[str]:
    """NANP numbers across every area code (valid and invalid), toll-free ones, territories'
    and a few outside NANP."""
    rng = random.Random(seed)
    found = [f"+1{rng.randint(200, 999)}{rng.randint(0, 999):03d}{rng.randint(0, 9999):04d}"]
    for _ in range(count):
        found.append(f"+1{rng.randint(200, 999)}{rng.randint(200, 999)}{rng.randint(0, 9999):04d}")
    found += [f"+1{npa}{rng.randint(200, 999)}0123" for npa in range(200, 1000)]
    found += ["+18005550123", "+17875550123", "+16715550123", "+13405550123"]
    found += ["+442071234567", "+33123456789", "+61212345678", "+80012345678", "+12"]
    return found


def test_a_numbers_place_is_what_libphonenumbers_public_functions_say() -> None:
    for e164 in _numbers(3000):
        place, kept_under = places._place(e164)
        valid = kept_under is not None
        try:
            expected = _reference_place(e164)
            reference_valid = phonenumbers.is_valid_number(phonenumbers.parse(e164, None))
        except phonenumbers.NumberParseException:
            assert (place, valid) == (NumberPlace(None, None, ()), False)
            continue
        assert valid == reference_valid, e164
        assert (analyse(e164) is not None) == valid, e164
        if valid:  # an invalid number's place is not kept, nor used beyond its zones
            assert place == expected, e164


def _area_codes_script() -> Any:
    script = Path(__file__).resolve().parent.parent / "scripts" / "us_area_codes.py"
    spec = importlib.util.spec_from_file_location("us_area_codes", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_area_code_has_the_state_the_geocoding_data_names() -> None:
    # P206: the packaged table, against the first valid number of each of its codes, as
    # scripts/us_area_codes.py made it (its --check walks every code: about 30 s).
    script = _area_codes_script()
    table = area_code_states()
    assert len(table) > 300
    assert table["+1212"] == "NY" and table["+1415"] == "CA" and "+1800" not in table
    for code, state in table.items():
        number = script.first_valid_number(int(code[2:]))
        assert number is not None, code
        named = state_in_description(geocoder.description_for_valid_number(number, "en"))
        assert named == state, code


def test_the_service_does_not_load_the_geocoding_data() -> None:
    # About 100 MiB in each process that imports it; the states come from the table.
    code = "import sys, dialscore.app, dialscore.worker.runtime; print(sorted(sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert "'dialscore.compliance.places'" in loaded
    assert "phonenumbers.geocoder" not in loaded and "phonenumbers.geodata" not in loaded


def test_a_place_is_kept_by_area_code_or_by_block_for_valid_numbers_only() -> None:
    places.forget_places()
    invalid = "+12125550123"[:5] + "0550123"  # NXX starting with 0: not a valid block
    assert places._place(invalid)[1] is None
    places.number_place(invalid)
    assert invalid[:5] not in places._places and invalid[:8] not in places._places
    # Every number of 212 has the zone of its area code: one place for the area code.
    valid = places.number_place("+12125550123")
    assert places._places["+1212"] == valid
    assert places.number_place("+12129870199") is valid
    # Idaho's 208 is split between Mountain and Pacific time by NXX: one place per block.
    idaho = places.number_place("+12083320123")
    assert places._places["+1208332"] == idaho and "+1208" not in places._places
    # A toll-free area code: its numbers are of one type, placed by the country code alone.
    free = places.number_place("+18005550123")
    assert places._places["+1800"] == free and free.area_state is None
    assert places.number_place("+18009870123") is free


def test_places_kept_by_area_code_are_those_of_each_number() -> None:
    # Numbers of every area code, several of most, in turn: the place a number gets (kept
    # from another number of its area code or block, or worked out) is libphonenumber's.
    places.forget_places()
    checked = 0
    toll_free = [f"+1{npa}{nxx}0123" for npa in (800, 833, 844, 877, 888) for nxx in (201, 987)]
    for e164 in _numbers(6000, seed=207) + toll_free:
        if analyse(e164) is None:
            continue
        assert places.number_place(e164) == _reference_place(e164), e164
        checked += 1
    assert checked > 3000
    assert any(len(key) == 5 for key in places._places)


def test_counts_with_equal_cells_but_other_numbers_are_other_best_hours() -> None:
    rules = load_rules()
    calls = {(day, hour): (3, 0) for day in range(5) for hour in range(9, 17)}
    busy = dict(calls) | {(2, 15): (3, 3)}
    quiet = dict(calls) | {(2, 15): (3, 0), (1, 10): (3, 3)}
    one = assess("+12125550123", now=NOW, rules=rules, line_type="mobile", call_counts=busy)
    other = assess(
        "+12125550123", now=NOW, rules=rules, line_type="mobile", call_counts=CallTally(quiet)
    )
    assert one.best_call_hours != other.best_call_hours
    # The same counts as a dict and as a CallTally are the same key, and the same answer.
    again = assess(
        "+12125550123", now=NOW, rules=rules, line_type="mobile", call_counts=CallTally(busy)
    )
    assert again.best_call_hours == one.best_call_hours
    # Another line type, the same counts: its own prior.
    direct = assess(
        "+12125550123", now=NOW, rules=rules, line_type="direct", call_counts=CallTally(busy)
    )
    assert direct.best_call_hours != one.best_call_hours


def test_a_call_tally_cannot_change() -> None:
    counts = {(0, 9): (1, 1)}
    tally = CallTally(counts)
    counts[(0, 9)] = (5, 0)  # the tally copied them
    assert tally == {(0, 9): (1, 1)} and tally[(0, 9)] == (1, 1)
    assert not hasattr(tally, "__setitem__")
    assert hash(tally) == hash(CallTally({(0, 9): (1, 1)}))
    made = tally_calls([(NOW, True), (NOW + timedelta(minutes=5), False)], places.ZoneInfo("UTC"))
    assert isinstance(made, CallTally) and made == {(4, 15): (2, 1)}


def test_present_hands_out_a_new_dict_whose_window_and_hours_are_shared() -> None:
    # P207: the phone's fields are a new dict (the caller merges it into the entry); the
    # window and best hours are the memo's, shared by every phone that has them.
    rules = load_rules()
    first = present(assess("+12125550123", now=NOW, rules=rules, line_type="mobile"))
    again = present(assess("+12125550199", now=NOW, rules=rules, line_type="mobile"))
    assert again == first and again is not first
    assert again["callWindow"] is first["callWindow"]
    assert again["bestCallHours"] is first["bestCallHours"]
    first["callableNow"] = None
    assert (
        present(assess("+12125550123", now=NOW, rules=rules, line_type="mobile"))["callableNow"]
        == again["callableNow"]
    )


@pytest.mark.parametrize("offset", [0, -5, 9])
def test_an_instants_text_is_the_same_in_any_zone(offset: int) -> None:
    # The text cache is keyed by the instant: equal instants in other zones, equal text.
    from dialscore.compliance.verdict import _instant

    at = datetime(2026, 11, 28, 13, 0, 7, 250, tzinfo=UTC)
    assert _instant(at.astimezone(timezone(timedelta(hours=offset)))) == "2026-11-28T13:00:07Z"
    assert _instant(at + timedelta(seconds=1)) == "2026-11-28T13:00:08Z"


def test_present_gives_a_new_dict_of_the_fields_written_once() -> None:
    rules = load_rules()
    made = assess("+13055550123", now=NOW, rules=rules, line_type="direct")
    first, second = present(made), present(made)
    # A new dict each time, equal to the one written with the verdict, which is shared.
    assert first == second == written(made)
    assert first is not second and first is not written(made)
    # Written once: the same number at the same instant has the very fields again.
    again = assess("+13055550123", now=NOW, rules=rules, line_type="direct")
    assert written(again) is written(made)
    assert present(made)["callWindow"] == {
        "start": "08:00",
        "end": "20:00",
        "rule": "US-FL",
        "source": "Fla. Stat. 501.616(6)(a), (b)",
    }
