"""The compliance verdict with a fixed clock: zones, daylight saving, Sundays, holidays, caps
and ambiguous numbers (dialscore.compliance)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from dialscore.compliance import Rules, assess, load_rules, present

NEW_YORK = "+12125550123"
SAN_FRANCISCO = "+14155550123"
NEW_ORLEANS = "+15045550123"
MIAMI = "+13055550123"
HOUSTON = "+17135550123"
IDAHO = "+12085550123"  # area code 208: Mountain (Boise) and Pacific time
TOLL_FREE = "+18005550123"


@pytest.fixture(scope="module")
def rules() -> Rules:
    return load_rules()


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_one_instant_is_inside_new_yorks_window_and_before_san_franciscos(rules: Rules) -> None:
    now = at("2026-11-27T15:00")  # 10:00 in New York, 07:00 in San Francisco
    east = present(assess(NEW_YORK, now=now, rules=rules))
    west = present(assess(SAN_FRANCISCO, now=now, rules=rules))
    assert east["timeZone"] == "America/New_York"
    assert east["callableNow"] is True
    assert east["nextCallableAt"] == "2026-11-27T15:00:00Z"
    assert east["callWindow"] == {
        "start": "08:00",
        "end": "21:00",
        "rule": "US",
        "source": "47 CFR 64.1200(c)(1); 16 CFR 310.4(c)",
    }
    assert west["timeZone"] == "America/Los_Angeles"
    assert west["callableNow"] is False
    assert west["nextCallableAt"] == "2026-11-27T16:00:00Z"  # 08:00 PST


def test_the_window_ends_at_its_end(rules: Rules) -> None:
    # 21:00 in New York: the federal window is over, the next opens at 08:00 tomorrow.
    verdict = assess(NEW_YORK, now=at("2026-11-28T02:00"), rules=rules)
    assert verdict.callable_now is False
    assert present(verdict)["nextCallableAt"] == "2026-11-28T13:00:00Z"


def test_spring_forward_opens_at_8_daylight_time(rules: Rules) -> None:
    # Saturday 7 March 2026, 22:00 EST; clocks go forward on Sunday 8 March at 02:00.
    verdict = assess(NEW_YORK, now=at("2026-03-08T03:00"), rules=rules)
    assert verdict.callable_now is False
    assert present(verdict)["nextCallableAt"] == "2026-03-08T12:00:00Z"  # 08:00 EDT


def test_fall_back_opens_at_8_standard_time(rules: Rules) -> None:
    # Saturday 31 October 2026, 21:30 EDT; clocks go back on Sunday 1 November at 02:00.
    verdict = assess(NEW_YORK, now=at("2026-11-01T01:30"), rules=rules)
    assert verdict.callable_now is False
    assert present(verdict)["nextCallableAt"] == "2026-11-01T13:00:00Z"  # 08:00 EST


def test_louisiana_forbids_sundays(rules: Rules) -> None:
    now = at("2026-11-29T16:00")  # Sunday, 10:00 in New Orleans
    verdict = assess(NEW_ORLEANS, now=now, rules=rules)
    shown = present(verdict)
    assert verdict.jurisdictions == ("US-LA", "US")
    assert shown["callWindow"] is None
    assert shown["callableNow"] is False
    assert shown["nextCallableAt"] == "2026-11-30T14:00:00Z"  # Monday 08:00 CST
    assert verdict.reason is not None and "45:811" in verdict.reason
    # The federal rule alone allows it: New York on the same Sunday.
    assert assess(NEW_YORK, now=now, rules=rules).callable_now is True


def test_texas_opens_at_noon_on_sundays(rules: Rules) -> None:
    verdict = present(assess(HOUSTON, now=at("2026-11-29T16:00"), rules=rules))
    assert verdict["callableNow"] is False
    assert verdict["callWindow"] == {
        "start": "12:00",
        "end": "21:00",
        "rule": "US-TX",
        "source": "Tex. Bus. & Com. Code 301.051",
    }
    assert verdict["nextCallableAt"] == "2026-11-29T18:00:00Z"


def test_louisiana_forbids_a_federal_holiday(rules: Rules) -> None:
    thanksgiving = at("2026-11-26T17:00")  # Thursday 26 November, 11:00 in New Orleans
    verdict = present(assess(NEW_ORLEANS, now=thanksgiving, rules=rules))
    assert verdict["callWindow"] is None
    assert verdict["callableNow"] is False
    assert verdict["nextCallableAt"] == "2026-11-27T14:00:00Z"  # Friday 08:00 CST
    # Florida has no holiday rule.
    assert assess(MIAMI, now=thanksgiving, rules=rules).callable_now is True


def test_a_holiday_before_a_sunday_rolls_to_monday(rules: Rules) -> None:
    # Christmas 2027 is a Saturday; Louisiana's observed day is Friday 24, then Sunday.
    verdict = present(assess(NEW_ORLEANS, now=at("2027-12-24T15:00"), rules=rules))
    assert verdict["callableNow"] is False
    assert verdict["nextCallableAt"] == "2027-12-27T14:00:00Z"


def test_floridas_cap_of_three_calls_in_24_hours(rules: Rules) -> None:
    calls = [at("2026-11-26T17:00"), at("2026-11-26T18:00"), at("2026-11-26T19:00")]
    now = at("2026-11-27T14:00")  # 09:00 in Miami, inside the window
    verdict = assess(MIAMI, now=now, rules=rules, recent_calls=calls)
    assert verdict.callable_now is False
    assert verdict.reason is not None and "3 calls in 24 hours" in verdict.reason
    # The first call leaves the 24 hours at 17:00 UTC: 12:00 in Miami, inside the window.
    assert present(verdict)["nextCallableAt"] == "2026-11-27T17:00:00Z"
    # Two calls leave room for a third; calls older than 24 hours do not count.
    assert assess(MIAMI, now=now, rules=rules, recent_calls=calls[1:]).callable_now is True
    old = [call - timedelta(days=1) for call in calls]
    assert assess(MIAMI, now=now, rules=rules, recent_calls=old).callable_now is True
    # New York has no cap.
    assert assess(NEW_YORK, now=now, rules=rules, recent_calls=calls * 3).callable_now is True


def test_a_cap_lifting_after_the_window_waits_for_the_next_window(rules: Rules) -> None:
    # Three calls between 19:00 and 19:50 in Miami; the cap lifts at 19:00 the next day,
    # inside the 8 pm window.
    calls = [at("2026-11-27T00:00"), at("2026-11-27T00:30"), at("2026-11-27T00:50")]
    verdict = assess(MIAMI, now=at("2026-11-27T13:30"), rules=rules, recent_calls=calls)
    assert present(verdict)["nextCallableAt"] == "2026-11-28T00:00:00Z"
    calls = [at("2026-11-27T00:59")] * 3  # lifts at 19:59, one minute before the window ends
    verdict = assess(MIAMI, now=at("2026-11-27T13:30"), rules=rules, recent_calls=calls)
    assert present(verdict)["nextCallableAt"] == "2026-11-28T00:59:00Z"


def test_an_ambiguous_number_is_narrowed_by_the_contacts_state(rules: Rules) -> None:
    now = at("2026-11-27T15:00")
    unknown = present(assess(TOLL_FREE, now=now, rules=rules))
    assert unknown["timeZone"] is None
    assert unknown["callableNow"] is None
    assert unknown["nextCallableAt"] is None
    assert unknown["callWindow"] is None
    narrowed = present(assess(TOLL_FREE, now=now, rules=rules, state_province="New York"))
    assert narrowed["timeZone"] == "America/New_York"
    assert narrowed["callableNow"] is True
    # The contact's state brings its rules: Louisiana's for a toll-free number there.
    louisiana = assess(TOLL_FREE, now=now, rules=rules, state_province="LA")
    assert louisiana.time_zone == "America/Chicago"
    assert louisiana.jurisdictions == ("US-LA", "US")


def test_an_area_code_across_two_zones(rules: Rules) -> None:
    now = at("2026-11-27T15:30")  # 08:30 in Boise, 07:30 in Coeur d'Alene
    assert assess(IDAHO, now=now, rules=rules).time_zone is None
    # Idaho itself spans both zones: the state does not narrow it; an explicit zone does.
    assert assess(IDAHO, now=now, rules=rules, state_province="ID").time_zone is None
    boise = assess(IDAHO, now=now, rules=rules, time_zone="America/Boise")
    assert boise.time_zone == "America/Boise"
    assert boise.callable_now is True
    assert assess(IDAHO, now=now, rules=rules, time_zone="Not/AZone").time_zone is None


def test_the_contacts_state_and_the_area_codes_both_apply(rules: Rules) -> None:
    # A Florida number of a contact living in Texas: Florida's 8 pm end, Texas's 9 am start.
    verdict = present(assess(MIAMI, now=at("2026-11-27T15:00"), rules=rules, state_province="TX"))
    assert verdict["callWindow"] == {
        "start": "09:00",
        "end": "20:00",
        "rule": "US-TX, US-FL",
        "source": "Tex. Bus. & Com. Code 301.051; Fla. Stat. 501.616(6)(a), (b)",
    }


def test_a_number_outside_the_rules_countries_is_not_judged(rules: Rules) -> None:
    verdict = assess("+442071234567", now=at("2026-11-27T15:00"), rules=rules)
    assert verdict.time_zone == "Europe/London"
    assert verdict.callable_now is None
    assert verdict.reason is not None and "GB" in verdict.reason


def test_present_is_json_ready(rules: Rules) -> None:
    import json

    shown = present(assess(MIAMI, now=at("2026-11-27T15:00"), rules=rules, line_type="mobile"))
    assert json.loads(json.dumps(shown)) == shown
    assert set(shown) == {
        "timeZone",
        "callWindow",
        "callableNow",
        "nextCallableAt",
        "bestCallHours",
    }


def test_numbers_of_one_block_in_different_states_keep_their_own_rules() -> None:
    # One NPA NXX block, one place: the contact's state still decides which rules apply.
    rules = load_rules()
    now = at("2026-11-28T01:30")  # 20:30 in New York: inside the federal window, not Florida's
    in_new_york = assess("+12125550123", now=now, rules=rules, state_province="NY")
    in_florida = assess("+12125550199", now=now, rules=rules, state_province="FL")
    again = assess("+12125550123", now=now, rules=rules, state_province="NY")
    assert in_new_york.callable_now is True and again.callable_now is True
    assert in_florida.callable_now is False
    assert in_florida.jurisdictions == ("US-FL", "US")
    assert in_new_york.jurisdictions == ("US",)


def test_a_remembered_window_is_the_local_days_across_midnight() -> None:
    rules = load_rules()
    # Friday 23:30 in New York, then Saturday 00:30: each local date has its own window.
    before = assess(NEW_YORK, now=at("2026-11-28T04:30"), rules=rules)
    after = assess(NEW_YORK, now=at("2026-11-28T05:30"), rules=rules)
    assert before.callable_now is False and after.callable_now is False
    assert present(before)["nextCallableAt"] == "2026-11-28T13:00:00Z"
    assert present(after)["nextCallableAt"] == "2026-11-28T13:00:00Z"
    # And the day before, asked after the later one, is still its own.
    earlier = assess(NEW_YORK, now=at("2026-11-27T15:00"), rules=rules)
    assert earlier.callable_now is True


def test_numbers_under_the_same_rules_and_zone_share_one_verdict() -> None:
    # The verdict is kept by jurisdictions, zone, line type, counts and instant (P207): a New
    # York number and a Boston one are judged alike; a Miami one (Florida's rules) is not.
    rules = load_rules()
    now = at("2026-11-27T15:00")
    new_york = assess(NEW_YORK, now=now, rules=rules, line_type="mobile")
    boston = assess("+16175550123", now=now, rules=rules, line_type="mobile")
    assert boston is new_york and boston.jurisdictions == ("US",)
    assert assess(MIAMI, now=now, rules=rules, line_type="mobile").jurisdictions == (
        "US-FL",
        "US",
    )
    assert assess("+16175550123", now=now, rules=rules, line_type="direct") is not new_york
    # Calls that leave room under Florida's cap: the verdict of a number without calls.
    plain = assess(MIAMI, now=now, rules=rules)
    calls = [now - timedelta(hours=2), now - timedelta(hours=1)]
    assert assess(MIAMI, now=now, rules=rules, recent_calls=calls) is plain
    capped = assess(MIAMI, now=now, rules=rules, recent_calls=[*calls, now - timedelta(hours=3)])
    assert capped.callable_now is False and plain.callable_now is True
    # Without a zone, a number that spans several says so.
    unsure = assess(TOLL_FREE, now=now, rules=rules)
    assert unsure.reason is not None and "several time zones" in unsure.reason
