"""The scoring engine's rules one by one: every status, modifier and hard rule (D15), the
line-type sources and their order, the call estimator, leadStatus (D16) and bestPhone (D17) on
the engine's own output, and the company and person keys behind shared-number evidence. Pure."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import String

from dialscore.jobs.schemas import NewContact
from dialscore.models import ContactNumber
from dialscore.scoring import lines
from dialscore.scoring.engine import (
    P1_FLOOR,
    P2_FLOOR,
    WRONG_NUMBER_DAYS,
    PhoneScore,
    connect_rate,
    score_parsed,
    score_phone,
    tally_calls,
)
from dialscore.scoring.evidence import (
    BLOCK_CATEGORIES,
    NO_EVIDENCE,
    OUTCOMES,
    VERIFIED_LINE_TYPES,
    Call,
    NumberEvidence,
    Verification,
)
from dialscore.scoring.numbers import (
    ParsedPhone,
    fictional_reason,
    parse_contact_phones,
    parse_phone,
)
from dialscore.scoring.service import company_key, person_key
from dialscore.submissions.rules import MAX_FIELD_LENGTH, prepare
from tests.support import PHONE_STATUSES

DAY = 86_400.0
# A UTC midnight, and "now" two and a half days later.
MIDNIGHT = 20_254 * DAY
NOW = MIDNIGHT + 2.5 * DAY

US = "+14155552671"  # NANP: "fixed line or mobile" in the metadata
US_OTHER = "+12127363100"
US_TOLL_FREE = "+18005551234"
UK_MOBILE = "+447400123456"
UK_FIXED = "+442079460958"
DE_SHARED_COST = "+4918019283"


def parse(raw: str, hint: str | None = None) -> ParsedPhone:
    return parse_phone(raw, position=1, slot="phone", type_hint=hint, country_hint=None)


def score(raw: str, hint: str | None = None, *, now: float = NOW, **evidence: Any) -> PhoneScore:
    return score_phone(parse(raw, hint), NumberEvidence(**evidence), now)


def ago(days: float) -> float:
    return NOW - days * DAY


def calls(*outcomes: str, days_ago: float = 0.0) -> tuple[Call, ...]:
    return tuple(Call(outcome, ago(days_ago)) for outcome in outcomes)


def fresh_rate(kind: str) -> float:
    """The estimate for a number of that line type before any call."""
    return lines.belief(kind, (), NOW).connect_rate


def tier_of(probability: float) -> str:
    """The tier of an estimate, from the published floors."""
    if probability >= P1_FLOOR:
        return "p1"
    if probability >= P2_FLOOR:
        return "p2"
    return "p3"


def tier(status: str) -> str:
    return status.partition(" - ")[0]


def modifier(status: str) -> str | None:
    return status.partition(" - ")[2] or None


def has_reason(result: PhoneScore, text: str) -> bool:
    return any(text in reason for reason in result.reasons)


def test_midnight_is_a_utc_day_boundary() -> None:
    moment = datetime.fromtimestamp(MIDNIGHT, UTC)
    assert (moment.hour, moment.minute, moment.second) == (0, 0, 0)


# -- invalid and fictional numbers --------------------------------------------------------------


@pytest.mark.parametrize("raw", ["not a number", "12", "+10000000000", "+1 555", ""])
def test_invalid_number_is_na_with_a_reason(raw: str) -> None:
    result = score(raw, block="wireless", calls=calls("connected", "connected"))
    assert result.status == "na"
    assert result.reasons == ("not a valid phone number",)
    assert result.probability == 0.0
    assert result.ivr_path is None


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("+14155550100", "fictional number (555-0100)"),
        ("+14155550150", "fictional number (555-0150)"),
        ("+14155550199", "fictional number (555-0199)"),
        ("+18005550100", "fictional number (555-0100)"),  # toll-free area code too
        ("+14155551212", "fictional number (555-1212)"),
        ("+14154111234", "N11 service code, not a subscriber line"),
        ("+14159111234", "N11 service code, not a subscriber line"),
        ("+14157777777", "placeholder number (all digits the same)"),
        ("+442077777777", "placeholder number (all digits the same)"),
        ("+447788888888", "placeholder number (all digits the same)"),
        ("+16502345678", "placeholder number (running digits)"),  # NANP: last 7 digits
        ("+14153456789", "placeholder number (running digits)"),
        ("+14158901234", "placeholder number (running digits)"),  # runs wrap round 9 to 0
        ("+14157654321", "placeholder number (running digits)"),  # running down
        ("+14159876543", "placeholder number (running digits)"),
        ("+447712345678", "placeholder number (running digits)"),  # elsewhere: last 8 digits
        ("+447787654321", "placeholder number (running digits)"),
        ("+493012345678", "placeholder number (running digits)"),
    ],
)
def test_fictional_numbers_are_na_with_their_reason(raw: str, reason: str) -> None:
    phone = parse(raw)
    assert phone.valid, "the metadata calls it valid; the fiction rule must catch it"
    assert fictional_reason(phone) == reason
    # Not even a wireless block and connects make a fictional number reachable.
    result = score_phone(
        phone, NumberEvidence(block="wireless", calls=calls("connected", "right_party")), NOW
    )
    assert result.status == "na"
    assert result.reasons[0] == reason
    assert result.probability == 0.0


def test_n11_area_code_is_a_service_code() -> None:
    # libphonenumber already rejects N11 area codes; the rule is checked on its own.
    assert not parse("+14112345678").valid
    for area in ("211", "411", "911"):
        phone = parse(US)._replace(raw=f"+1{area}2345679", e164=f"+1{area}2345679")
        assert fictional_reason(phone) == "N11 service code, not a subscriber line"


@pytest.mark.parametrize(
    "raw",
    [
        "+14155550200",  # just past the fiction range
        "+14155550099",  # just before it
        "+14155552671",  # an ordinary 555 number
        "+14155551213",  # next to directory assistance
        "+14152345699",  # a five-digit run, not the whole subscriber number
        "+447912121212",  # a repeated two-digit pattern
        "+442071234567",  # elsewhere the last 8 digits count: 71234567 does not run
        "+442087777777",  # ... nor are they all the same
        "+4930123456",
        "+14154121234",  # 412 exchange, next to the 411 service code
    ],
)
def test_near_misses_stay_valid(raw: str) -> None:
    phone = parse(raw)
    assert phone.valid
    assert fictional_reason(phone) is None
    assert score_phone(phone, NO_EVIDENCE, NOW).status != "na"


def test_nanp_uses_the_last_seven_digits_elsewhere_the_last_eight() -> None:
    # 02345678 does not run, 2345678 does: a NANP number is judged on its last seven digits.
    assert fictional_reason(parse("+16502345678")) is not None
    # 71234567 does not run, 1234567 does: elsewhere the last eight digits count.
    assert fictional_reason(parse("+442071234567")) is None


def test_fictional_number_keeps_dnc_and_ivr_modifiers() -> None:
    assert score("+14155550123", dnc_lists=("federal",)).status == "na - dnc"
    assert score("+14155550123", calls=(Call("ivr", ago(1), "1"),)).status == "na - ivr"


# -- line type: sources, order, priors and first-score tiers -------------------------------------


@pytest.mark.parametrize(
    ("raw", "hint", "evidence", "kind", "reason"),
    [
        (US, None, {"block": "wireless"}, "mobile", "number block: wireless"),
        (US, None, {"block": "landline"}, "landline", "number block: landline"),
        (US, None, {"block": "voip"}, "voip", "number block: voip"),
        (US, None, {}, "unknown", "line type unknown (mobile or fixed)"),
        (US, "mobile", {}, "mobile (hint)", "given as mobile; line type not confirmed"),
        (US, "cell", {}, "mobile (hint)", "given as mobile; line type not confirmed"),
        (US, "direct", {}, "landline", "given as a direct line; line type not confirmed"),
        (US, "other", {}, "unknown", "line type unknown (mobile or fixed)"),
        # A hint never overrides a block or the numbering metadata.
        (US, "mobile", {"block": "landline"}, "landline", "number block: landline"),
        (US, "mobile", {"block": "voip"}, "voip", "number block: voip"),
        (US, "direct", {"block": "wireless"}, "mobile", "number block: wireless"),
        (UK_FIXED, "mobile", {}, "landline", "fixed line (numbering plan)"),
        (UK_MOBILE, "direct", {}, "mobile", "mobile line (numbering plan)"),
        ("+445619283746", "mobile", {}, "voip", "VoIP number (numbering plan)"),
        ("+449019283746", None, {}, "special", "premium or similar number (numbering plan)"),
        # A block is stronger than the metadata.
        (UK_MOBILE, None, {"block": "voip"}, "voip", "number block: voip"),
        # A verification is stronger than a block; "unknown" from a provider is no answer.
        (
            US,
            None,
            {"block": "wireless", "verification": Verification("acme", "landline")},
            "landline",
            "line type landline (acme)",
        ),
        (
            US,
            "direct",
            {"block": "landline", "verification": Verification("acme", "mobile")},
            "mobile",
            "line type mobile (acme)",
        ),
        (
            UK_MOBILE,
            None,
            {"verification": Verification("acme", "voip")},
            "voip",
            "line type voip (acme)",
        ),
        (
            US,
            None,
            {"block": "wireless", "verification": Verification("acme", "unknown")},
            "mobile",
            "number block: wireless",
        ),
        (
            US,
            None,
            {"verification": Verification("acme", "premium")},
            "special",
            "line type premium (acme)",
        ),
    ],
)
def test_line_type_source_and_first_score_tier(
    raw: str, hint: str | None, evidence: dict[str, Any], kind: str, reason: str
) -> None:
    result = score(raw, hint, **evidence)
    assert reason in result.reasons[0]
    assert result.status == tier_of(fresh_rate(kind))
    assert result.probability == pytest.approx(fresh_rate(kind))
    assert has_reason(result, "no calls reported")


def test_priors_put_each_kind_in_its_expected_first_tier() -> None:
    # D15: a valid mobile line with no negative evidence is p1, a line that is
    # not mobile is p2, unverified or weak evidence p3.
    assert fresh_rate("mobile") >= P1_FLOOR
    assert fresh_rate("mobile (hint)") >= P1_FLOOR
    assert fresh_rate("mobile (hint)") < fresh_rate("mobile")
    assert P2_FLOOR <= fresh_rate("unknown") < P1_FLOOR
    assert P2_FLOOR <= fresh_rate("landline") < P1_FLOOR
    assert P2_FLOOR <= fresh_rate("switchboard") < P1_FLOOR
    assert P2_FLOOR <= fresh_rate("voip") < P1_FLOOR
    assert fresh_rate("special") < P2_FLOOR


@pytest.mark.parametrize(
    ("raw", "hint", "evidence", "status"),
    [
        (US, None, {"block": "wireless"}, "p1"),
        (US, None, {"block": "landline"}, "p2"),
        (US, None, {"block": "voip"}, "p2"),
        (US, None, {}, "p2"),
        (US, "mobile", {}, "p1"),
        (US, "mobile", {"block": "landline"}, "p2"),
        (UK_MOBILE, None, {}, "p1"),
        (UK_FIXED, "mobile", {}, "p2"),
        (US_TOLL_FREE, None, {}, "p2 - h"),
        (DE_SHARED_COST, None, {}, "p2 - h"),
        (US, None, {"verification": Verification("acme", "toll_free")}, "p2 - h"),
        (US, None, {"verification": Verification("acme", "shared_cost")}, "p2 - h"),
    ],
)
def test_first_score_statuses(
    raw: str, hint: str | None, evidence: dict[str, Any], status: str
) -> None:
    assert score(raw, hint, **evidence).status == status


@pytest.mark.parametrize(
    ("raw", "label"), [(US_TOLL_FREE, "toll-free"), (DE_SHARED_COST, "shared-cost")]
)
def test_toll_free_and_shared_cost_are_switchboards(raw: str, label: str) -> None:
    result = score(raw)
    assert result.status == "p2 - h"
    assert result.reasons[0] == f"{label} number"
    assert "a company switchboard" in result.reasons
    assert result.probability == pytest.approx(fresh_rate("switchboard"))


def test_verified_not_working_number_is_na() -> None:
    result = score(US, block="wireless", verification=Verification("acme", "mobile", valid=False))
    assert result.status == "na"
    assert result.reasons[0] == "not a working number (acme)"
    assert result.probability == 0.0


def test_verified_toll_free_names_the_provider() -> None:
    result = score(US, verification=Verification("acme", "toll_free"))
    assert result.reasons[0] == "line type toll-free (acme)"


# -- the estimator ----------------------------------------------------------------------------


def rate(kind: str, history: tuple[Call, ...], now: float = NOW, shared: bool = False) -> float:
    return lines.belief(kind, history, now, shared=shared).connect_rate


def test_estimate_without_calls_is_the_expected_rate_of_a_fresh_number() -> None:
    live = 1 - sum(lines.START.values())
    for kind, live_rate in lines.LIVE_RATES.items():
        expected = live * live_rate + lines.START["screening"] * lines.SCREENING_RATE
        assert rate(kind, ()) == pytest.approx(expected)


@pytest.mark.parametrize("outcome", ["connected", "right_party"])
def test_connects_raise_the_estimate(outcome: str) -> None:
    assert rate("unknown", calls(outcome)) > rate("unknown", ())


@pytest.mark.parametrize(
    "outcome", ["voicemail", "no_answer", "busy", "screened", "wrong_number", "disconnected"]
)
def test_failed_calls_lower_the_estimate(outcome: str) -> None:
    assert rate("unknown", calls(outcome)) < rate("unknown", ())


def test_a_line_found_dead_counts_once_a_day() -> None:
    same_day = (Call("disconnected", MIDNIGHT + 60), Call("disconnected", MIDNIGHT + 3600))
    assert rate("mobile", same_day) == pytest.approx(rate("mobile", same_day[:1]))


def test_a_number_not_called_for_years_is_less_likely_to_still_be_theirs() -> None:
    connects = calls("connected", "connected")
    assert rate("mobile", connects, NOW + 3 * 365 * DAY) < rate("mobile", connects)
    assert rate("landline", (), NOW) == rate("landline", (), NOW + 3 * 365 * DAY)


def test_a_screened_call_is_evidence_not_a_pin() -> None:
    # Screened 306 days ago, connected 303 days ago: a phone that let the call through.
    history = (Call("screened", ago(306)), Call("connected", ago(303)))
    result = score(US, block="wireless", calls=history)
    assert tier(result.status) == "p1"
    assert result.probability > 0.2


def test_a_mobile_failing_all_last_year_does_not_read_as_fresh() -> None:
    history = tuple(Call("no_answer", ago(365 - 18 * i)) for i in range(20))
    fresh = score(US, block="wireless")
    failed = score(US, block="wireless", calls=history)
    assert tier(fresh.status) == "p1"
    assert tier(failed.status) in ("p2", "p3")
    assert failed.probability < fresh.probability / 2


# -- tiers move with the calls ----------------------------------------------------------------


def test_unknown_line_with_recent_connects_becomes_p1() -> None:
    assert score(US).status == "p2"
    result = score(US, calls=calls(*["connected"] * 5))
    assert result.status == "p1"
    assert result.probability == pytest.approx(rate("unknown", calls(*["connected"] * 5)))
    assert has_reason(result, "5 reported calls, 5 connected")


def test_old_connects_lift_an_unknown_line_less_than_recent_ones() -> None:
    recent = score(US, calls=calls(*["connected"] * 3))
    old = score(US, calls=calls(*["connected"] * 3, days_ago=730))
    assert recent.status == "p1"
    assert old.probability < recent.probability


def test_mobile_with_recent_no_answers_drops() -> None:
    history = calls(*["no_answer"] * 10)
    result = score(US, block="wireless", calls=history)
    assert tier(result.status) == "p2"
    assert result.probability == pytest.approx(rate("mobile", history))
    assert has_reason(result, "10 reported calls, 0 connected")


def test_landline_with_connects_reaches_p1_and_voip_with_connects_leaves_p3() -> None:
    history = calls("connected", "connected", "connected", "connected", "connected")
    assert score(US, block="landline", calls=history).status == "p1"
    assert score(US, block="voip", calls=calls("connected")).status != "p3"


# -- hard rules -------------------------------------------------------------------------------


def test_disconnected_on_two_different_utc_days_is_na() -> None:
    history = (Call("disconnected", MIDNIGHT - 600), Call("disconnected", MIDNIGHT + 600))
    result = score(US, block="wireless", calls=history)
    assert result.status == "na"
    assert result.reasons[0] == "reported disconnected on two different days"
    assert result.probability == 0.0


def test_disconnected_twice_on_one_utc_day_is_not_na() -> None:
    history = (Call("disconnected", MIDNIGHT + 60), Call("disconnected", MIDNIGHT + DAY - 60))
    result = score(US, block="wireless", calls=history)
    assert tier(result.status) != "na"
    assert not has_reason(result, "disconnected on two different days")


def test_no_answers_after_the_disconnects_keep_it_na() -> None:
    history = (
        Call("disconnected", ago(2)),
        Call("disconnected", ago(1)),
        Call("no_answer", ago(0.5)),
        Call("busy", ago(0.1)),
    )
    assert score(US, calls=history).status == "na"


@pytest.mark.parametrize("outcome", ["connected", "right_party", "voicemail"])
def test_an_answer_after_the_disconnects_is_not_na(outcome: str) -> None:
    history = (Call("disconnected", ago(2)), Call("disconnected", ago(1)), Call(outcome, ago(0.5)))
    assert tier(score(US, calls=history).status) != "na"


def test_disconnects_separated_by_an_answer_do_not_add_up() -> None:
    history = (
        Call("disconnected", ago(2)),
        Call("connected", ago(1.5)),
        Call("disconnected", ago(1)),
    )
    assert tier(score(US, calls=history).status) != "na"


# Reports older than WRONG_NUMBER_DAYS are the line model's evidence alone (D28).
OLD = WRONG_NUMBER_DAYS + 20


def test_repeated_wrong_numbers_are_na_auth() -> None:
    history = calls("connected", "wrong_number", "wrong_number", days_ago=OLD)
    result = score(US, block="wireless", calls=history)
    assert result.status == "na - auth"
    assert has_reason(result, "likely someone else's number now")
    assert not has_reason(result, "reported a wrong number on")
    assert result.probability == 0.0


def test_one_wrong_number_weighs_against_the_number() -> None:
    result = score(US, block="wireless", calls=calls("wrong_number", days_ago=OLD))
    assert result.probability < score(US, block="wireless").probability / 2
    assert has_reason(result, "likely someone else's number now")


@pytest.mark.parametrize("later", ["right_party", "voicemail_name_match"])
def test_a_later_ownership_call_clears_a_wrong_number(later: str) -> None:
    wrong = score(US, block="wireless", calls=(Call("wrong_number", ago(3)),))
    history = (Call("wrong_number", ago(3)), Call(later, ago(1)))
    result = score(US, block="wireless", calls=history)
    assert tier(result.status) in ("p1", "p2")
    assert result.probability > 2 * wrong.probability
    assert not has_reason(result, "someone else")


def test_an_old_wrong_number_is_outweighed_by_later_connects() -> None:
    history = (Call("wrong_number", ago(500)), *calls("connected", "connected", days_ago=300))
    assert tier(score(US, block="wireless", calls=history).status) == "p1"


def test_a_wrong_number_about_someone_else_does_not_condemn_the_line() -> None:
    about_other = tuple(Call("wrong_number", ago(d), person="other") for d in (5, 3))
    about_this = tuple(Call("wrong_number", ago(d), person="same") for d in (5, 3))
    others = score(US_OTHER, "hq", calls=about_other)
    assert tier(others.status) != "na"
    assert not has_reason(others, "someone else")
    assert score(US_OTHER, "hq", calls=about_this).status == "na - auth"


def test_unattributed_wrong_numbers_on_a_shared_line_weigh_half() -> None:
    history = calls("wrong_number", "wrong_number")
    alone = lines.belief("switchboard", history, NOW)
    shared = lines.belief("switchboard", history, NOW, shared=True)
    assert shared.other < alone.other
    assert shared.connect_rate > alone.connect_rate


# -- a number reported as the wrong one (D28) ----------------------------------------------------

# 2025-06-16 15:00 UTC, 21 hours before NOW.
REPORTED_AT = MIDNIGHT + DAY + 15 * 3600
REPORTED_ON = "reported a wrong number on 2025-06-16"


def reported(
    person: str | None = "same", at: float = REPORTED_AT, outcome: str = "wrong_number"
) -> Call:
    """A call reported for a contact: this one ("same"), another ("other"), or one whose name
    is not known (None)."""
    return Call(outcome, at, person=person, named=True)


def unnamed(at: float = REPORTED_AT, outcome: str = "wrong_number") -> Call:
    """A call reported for no contact."""
    return Call(outcome, at)


def forced(result: PhoneScore) -> bool:
    """Whether a wrong-number report made the status (D28), not the estimate."""
    return result.reasons[0].startswith("reported a wrong number on")


def test_reported_at_is_the_day_the_reason_names() -> None:
    moment = datetime.fromtimestamp(REPORTED_AT, UTC)
    assert (moment.date().isoformat(), moment.hour) == ("2025-06-16", 15)
    assert NOW - DAY < REPORTED_AT < NOW


def test_a_fresh_wrong_number_for_this_contact_is_na_auth_with_its_date() -> None:
    # A mobile that connected well all year: whatever its estimate.
    connects = tuple(Call("connected", ago(d)) for d in range(300, 10, -30))
    assert score(US, block="wireless", calls=connects).status == "p1"
    result = score(US, block="wireless", calls=(*connects, reported("same")))
    assert result.status == "na - auth"
    assert result.reasons[0] == REPORTED_ON
    assert result.probability == 0.0
    assert connect_rate(result) is None
    # On a line that reaches several people too: the report named this contact.
    shared = score(US, "hq", shared_with=3, carried_by_others=True, calls=(reported("same"),))
    assert shared.status == "na - auth"
    assert shared.reasons[0] == REPORTED_ON


def test_a_fresh_wrong_number_for_no_contact_on_a_number_no_one_else_carries_is_na_auth() -> None:
    result = score(US, block="wireless", calls=(unnamed(),))
    assert result.status == "na - auth"
    assert result.reasons[0] == REPORTED_ON
    assert result.probability == 0.0


@pytest.mark.parametrize(
    "others", [{"carried_by_others": True}, {"shared_with": 1, "carried_by_others": True}]
)
def test_a_wrong_number_for_no_contact_on_a_number_others_carry_is_not_forced(
    others: dict[str, Any],
) -> None:
    result = score(US, block="wireless", calls=(unnamed(),), **others)
    assert not forced(result)
    assert tier(result.status) != "na"
    # The line model weighs it, as a call about no one in particular.
    assert result.reasons[-1].startswith("1 reported call, 0 connected")


@pytest.mark.parametrize("person", ["other", None])
def test_a_wrong_number_for_another_contact_is_not_forced(person: str | None) -> None:
    # None: reported for a contact whose name is not known, which is not this contact.
    result = score(US, block="wireless", calls=(reported(person),))
    assert not forced(result)
    assert tier(result.status) != "na"


@pytest.mark.parametrize("days", [WRONG_NUMBER_DAYS + 1, 400])
def test_a_wrong_number_older_than_180_days_is_evidence_only(days: float) -> None:
    for call in (reported("same", ago(days)), unnamed(ago(days))):
        result = score(US, block="wireless", calls=(call,))
        assert not forced(result)
        # The line model's estimate, low but not na.
        assert tier(result.status) in ("p2", "p3")
        assert has_reason(result, "likely someone else's number now")
        assert result.reasons[-1].startswith("1 reported call, 0 connected")


def test_a_wrong_number_180_days_old_still_counts() -> None:
    result = score(US, block="wireless", calls=(reported("same", ago(WRONG_NUMBER_DAYS)),))
    assert result.status == "na - auth"


@pytest.mark.parametrize("later", ["connected", "right_party", "voicemail_name_match"])
def test_a_later_call_that_finds_the_contact_lifts_the_report(later: str) -> None:
    for report, found in [
        (reported("same"), reported("same", REPORTED_AT + 3600, later)),
        (unnamed(), unnamed(REPORTED_AT + 3600, later)),
        (reported("same"), unnamed(REPORTED_AT + 3600, later)),
        (unnamed(), reported("same", REPORTED_AT + 3600, later)),
    ]:
        result = score(US, block="wireless", calls=(report, found))
        assert not forced(result), (report, found)
        assert result.status != "na - auth"


@pytest.mark.parametrize(
    "later",
    [
        reported("other", REPORTED_AT + 3600, "connected"),
        reported(None, REPORTED_AT + 3600, "right_party"),
        reported("same", REPORTED_AT + 3600, "voicemail"),
        reported("same", REPORTED_AT - 3600, "connected"),
    ],
)
def test_calls_that_do_not_find_the_contact_after_it_leave_the_report(later: Call) -> None:
    history = tuple(sorted((reported("same"), later), key=lambda c: c.at))
    result = score(US, block="wireless", calls=history)
    assert result.status == "na - auth"
    assert result.reasons[0] == REPORTED_ON


def test_on_a_number_others_carry_a_connect_for_no_contact_does_not_lift_the_report() -> None:
    history = (reported("same"), unnamed(REPORTED_AT + 3600, "connected"))
    result = score(US, block="wireless", calls=history, carried_by_others=True)
    assert result.status == "na - auth"


def test_the_reason_names_the_latest_report_that_stands() -> None:
    history = (
        reported("same", ago(60)),
        reported("same", ago(40), "right_party"),
        reported("same"),
        reported("same", REPORTED_AT + 600, "no_answer"),
    )
    result = score(US, block="wireless", calls=history)
    assert result.status == "na - auth"
    assert result.reasons[0] == REPORTED_ON


def test_a_reported_wrong_number_wins_over_dnc_and_keeps_the_other_reasons() -> None:
    history = (Call("ivr", REPORTED_AT - 3600, "1"), reported("same"))
    result = score(US, block="landline", dnc_lists=("federal",), calls=history)
    assert result.status == "na - auth"
    assert result.reasons[:4] == (
        REPORTED_ON,
        "number block: landline",
        "on do-not-call list federal",
        "dial tree (path 1)",
    )
    # The estimate it overrides.
    assert result.reasons[-1].startswith("2 reported calls, 0 connected: estimated connect rate")
    assert result.ivr_path == "1"
    assert result.probability == 0.0


@pytest.mark.parametrize(
    ("raw", "evidence", "status"),
    [
        ("+14155550123", {}, "na"),
        (US, {"verification": Verification("acme", "mobile", valid=False)}, "na"),
    ],
)
def test_hard_evidence_that_the_number_does_not_work_comes_first(
    raw: str, evidence: dict[str, Any], status: str
) -> None:
    assert score(raw, calls=(reported("same"),), **evidence).status == status


def test_a_number_found_disconnected_after_the_report_is_na() -> None:
    history = (
        reported("same"),
        Call("disconnected", REPORTED_AT + 3600),
        Call("disconnected", NOW),
    )
    result = score(US, calls=history)
    assert result.status == "na"
    assert result.reasons[0] == "reported disconnected on two different days"


def test_a_reported_wrong_number_leaves_the_contacts_other_numbers_to_dial() -> None:
    result = contact_score(
        {"phone": US, "phone2": UK_MOBILE},
        {US: NumberEvidence(block="wireless", calls=(reported("same"),))},
    )
    first, second = result.phones
    assert (first["status"], first["connectRate"]) == ("na - auth", None)
    assert first["reasons"][0] == REPORTED_ON
    assert second["status"] == "p1"
    assert result.lead_status == "P1"
    assert result.best_phone == {"number": UK_MOBILE, "status": "p1", "ivrPath": None}


def test_dnc_request_marks_dnc() -> None:
    on_mobile = score(US, block="wireless", calls=calls("connected", "dnc_request"))
    assert on_mobile.status == "p1 - dnc"
    assert "the person asked not to be called" in on_mobile.reasons
    on_landline = score(US, block="landline", calls=calls("dnc_request"))
    assert on_landline.status == "na - dnc"
    assert "the person asked not to be called" in on_landline.reasons


def test_gatekeeper_twice_is_h_once_is_not() -> None:
    history = calls(*["connected"] * 4)
    once = score(US, block="wireless", calls=(*history, Call("gatekeeper", ago(1))))
    assert modifier(once.status) is None
    assert not has_reason(once, "gatekeeper")
    twice = score(US, block="wireless", calls=(*history, *calls("gatekeeper", "gatekeeper")))
    assert modifier(twice.status) == "h"
    assert "answered by a gatekeeper 2 times" in twice.reasons


def test_ivr_takes_the_path_of_the_latest_call_carrying_one() -> None:
    history = (
        Call("ivr", ago(5), "1"),
        Call("ivr", ago(3), "2,4"),
        Call("ivr", ago(2)),
        Call("no_answer", ago(1)),
    )
    result = score(US, block="wireless", calls=history)
    assert modifier(result.status) == "ivr"
    assert result.ivr_path == "2,4"
    assert "dial tree (path 2,4)" in result.reasons


def test_ivr_without_a_known_path() -> None:
    result = score(US, calls=calls("ivr"))
    assert modifier(result.status) == "ivr"
    assert result.ivr_path is None
    assert "dial tree" in result.reasons


def test_a_reported_path_wins_over_the_directory_path() -> None:
    result = score(US, calls=(Call("ivr", ago(1), "9"),), directory_ivr_path="1,2")
    assert result.ivr_path == "9"
    assert modifier(result.status) == "ivr"


def test_screened_in_the_last_five_calls_is_sf() -> None:
    base = calls(*["connected"] * 4, days_ago=2)
    recent = score(
        US, block="wireless", calls=(*base, Call("screened", ago(1)), *calls("busy") * 4)
    )
    assert recent.status == f"{tier(recent.status)} - sf"
    assert has_reason(recent, "calls are screened")
    older = score(US, block="wireless", calls=(*base, Call("screened", ago(1)), *calls("busy") * 5))
    assert modifier(older.status) is None
    assert not has_reason(older, "calls are screened")


def test_a_phone_that_keeps_screening_is_sf_and_drops() -> None:
    result = score(US, block="wireless", calls=calls("screened", "screened", "voicemail"))
    assert result.status == "p2 - sf"
    assert has_reason(result, "calls are likely screened")


# -- do-not-call lists and modifier precedence -------------------------------------------------


def test_dnc_list_on_a_p1_number_is_p1_dnc() -> None:
    result = score(US, block="wireless", dnc_lists=("state_ca", "federal"))
    assert result.status == "p1 - dnc"
    assert "on do-not-call list federal, state_ca" in result.reasons


@pytest.mark.parametrize(
    ("evidence", "tier_without"),
    [
        ({"block": "landline"}, "p2"),
        ({"block": "voip"}, "p2"),
        ({"verification": Verification("acme", "personal")}, "p3"),
    ],
)
def test_dnc_list_on_a_p2_or_p3_number_is_na_dnc(
    evidence: dict[str, Any], tier_without: str
) -> None:
    assert score(US, **evidence).status == tier_without
    result = score(US, **evidence, dnc_lists=("federal",))
    assert result.status == "na - dnc"
    assert "on do-not-call list federal" in result.reasons


PRECEDENCE_CALLS = (
    # Enough connects to stay p1 even from the low priors of switchboards and screened lines.
    *calls(*["connected"] * 30, days_ago=3),
    Call("ivr", ago(2), "1"),
    Call("gatekeeper", ago(2)),
    Call("gatekeeper", ago(1)),
    Call("screened", ago(0.5)),
)


@pytest.mark.parametrize(
    ("drop", "dnc", "status"),
    [
        ((), True, "p1 - dnc"),
        ((), False, "p1 - ivr"),
        (("ivr",), False, "p1 - h"),
        (("ivr", "gatekeeper"), False, "p1 - sf"),
        (("ivr", "gatekeeper", "screened"), False, "p1"),
        (("gatekeeper", "screened"), True, "p1 - dnc"),
        (("screened",), False, "p1 - ivr"),
        (("ivr",), True, "p1 - dnc"),
    ],
)
def test_modifier_precedence_dnc_ivr_h_sf(drop: tuple[str, ...], dnc: bool, status: str) -> None:
    history = tuple(c for c in PRECEDENCE_CALLS if c.outcome not in drop)
    result = score(US, block="wireless", calls=history, dnc_lists=("federal",) if dnc else ())
    assert result.status == status


def test_lower_modifiers_still_give_their_reasons() -> None:
    result = score(US, block="wireless", calls=PRECEDENCE_CALLS, dnc_lists=("federal",))
    assert "dial tree (path 1)" in result.reasons
    assert "answered by a gatekeeper 2 times" in result.reasons
    assert "calls are screened" in result.reasons


# -- switchboards -----------------------------------------------------------------------------


def test_typed_hq_is_h() -> None:
    result = score(US, "hq")
    assert result.status == "p2 - h"
    assert "given as a company line" in result.reasons
    # A hint never overrides the numbering plan: a mobile stays one.
    assert score(UK_MOBILE, "switchboard").status == "p1"


def test_an_hq_hint_does_not_override_a_wireless_block() -> None:
    result = score(US, "hq", block="wireless")
    assert result.status == "p1"
    assert "given as a company line" not in result.reasons
    assert modifier(score(US, "hq", block="landline").status) == "h"


def test_an_hq_hint_alone_keeps_the_line_types_estimate() -> None:
    # Many numbers typed hq are the person's own line (P89): the hint gives h, not the
    # switchboard's prior; something else saying so does.
    assert score(UK_FIXED, "hq").probability == pytest.approx(fresh_rate("landline"))
    assert score(US, "hq").probability == pytest.approx(fresh_rate("unknown"))
    for corroborated in ({"company_line": True}, {"shared_with": 2}):
        result = score(UK_FIXED, "hq", **corroborated)
        assert result.probability == pytest.approx(fresh_rate("switchboard"))
        assert modifier(result.status) == "h"


def test_company_main_line_is_h() -> None:
    result = score(US, company_line=True)
    assert result.status == "p2 - h"
    assert "a company's main line" in result.reasons


def test_directory_ivr_path_is_ivr_with_the_path() -> None:
    result = score(US, company_line=True, directory_ivr_path="1,0")
    assert result.status == "p2 - ivr"
    assert result.ivr_path == "1,0"
    assert "dial tree (path 1,0)" in result.reasons
    assert "a company's main line" in result.reasons


@pytest.mark.parametrize(
    ("others", "reason"), [(1, "shared with 1 other person"), (3, "shared with 3 other people")]
)
def test_shared_number_is_h(others: int, reason: str) -> None:
    result = score(US, block="wireless", shared_with=others)
    assert modifier(result.status) == "h"
    assert reason in result.reasons
    # A shared number is a switchboard whatever its line: the switchboard prior applies.
    assert result.probability == pytest.approx(fresh_rate("switchboard"))


def test_not_shared_is_not_h() -> None:
    result = score(US, block="wireless", shared_with=0)
    assert result.status == "p1"
    assert not has_reason(result, "shared")


# -- properties -------------------------------------------------------------------------------

SAMPLE_NUMBERS = (
    US, US_OTHER, US_TOLL_FREE, UK_MOBILE, UK_FIXED, DE_SHARED_COST,
    "+445619283746", "+449019283746", "+14155550123", "+14157777777", "+14154111234",
    "+447712345678", "not a number", "12", "+4915192837465", "+81312345678",
)  # fmt: skip
HINTS = (None, "mobile", "direct", "hq", "other", "cell", "switchboard")


@st.composite
def number_evidence(draw: st.DrawFn) -> NumberEvidence:
    history = draw(
        st.lists(
            st.builds(
                Call,
                st.sampled_from(OUTCOMES),
                st.floats(min_value=NOW - 800 * DAY, max_value=NOW + 30 * DAY),
                st.one_of(st.none(), st.sampled_from(["1", "2,3", "0#"])),
                st.sampled_from(["same", "other", None]),
                st.booleans(),
            ).map(lambda c: replace(c, named=c.named or c.person is not None)),
            max_size=12,
        )
    )
    verification = draw(
        st.one_of(
            st.none(),
            st.builds(
                Verification,
                st.just("acme"),
                st.sampled_from(VERIFIED_LINE_TYPES),
                st.none(),
                st.booleans(),
            ),
        )
    )
    shared_with = draw(st.integers(min_value=0, max_value=4))
    return NumberEvidence(
        block=draw(st.one_of(st.none(), st.sampled_from(BLOCK_CATEGORIES))),
        dnc_lists=tuple(draw(st.lists(st.sampled_from(["federal", "state"]), unique=True))),
        calls=tuple(sorted(history, key=lambda c: c.at)),
        shared_with=shared_with,
        carried_by_others=shared_with > 0 or draw(st.booleans()),
        company_line=draw(st.booleans()),
        directory_ivr_path=draw(st.one_of(st.none(), st.just("1,0"))),
        verification=verification,
    )


@given(st.sampled_from(SAMPLE_NUMBERS), st.sampled_from(HINTS), number_evidence())
@settings(max_examples=600, deadline=None)
def test_scores_are_always_well_formed(
    raw: str, hint: str | None, evidence: NumberEvidence
) -> None:
    phone = parse(raw, hint)
    result = score_phone(phone, evidence, NOW)
    assert result.status in PHONE_STATUSES
    assert result.reasons
    assert all(isinstance(r, str) and r.strip() for r in result.reasons)
    assert 0.0 <= result.probability <= 1.0
    status_tier = tier(result.status)
    if status_tier != "na":
        # Outside na, the tier is the estimate cut at the published floors.
        assert status_tier == tier_of(result.probability)
    elif result.status != "na - dnc":
        assert result.probability == 0.0
    if modifier(result.status) == "dnc":
        assert evidence.dnc_lists or any(c.outcome == "dnc_request" for c in evidence.calls)
    if phone.valid and evidence.dnc_lists and result.status != "na - auth":
        # dnc is the strongest modifier: a listed number always says so.
        assert modifier(result.status) == "dnc"
    if result.ivr_path is not None:
        assert result.ivr_path in {c.ivr_path for c in evidence.calls} | {
            evidence.directory_ivr_path
        }


@given(st.sampled_from(SAMPLE_NUMBERS), st.sampled_from(HINTS), number_evidence())
@settings(max_examples=600, deadline=None)
def test_na_always_has_probability_zero(
    raw: str, hint: str | None, evidence: NumberEvidence
) -> None:
    result = score_phone(parse(raw, hint), evidence, NOW)
    if tier(result.status) == "na":
        assert result.probability == 0.0


@given(st.sampled_from(SAMPLE_NUMBERS), st.sampled_from(HINTS), st.data())
@settings(max_examples=300, deadline=None)
def test_a_fresh_wrong_number_for_this_contact_as_the_latest_call_is_always_na_auth(
    raw: str, hint: str | None, data: st.DataObject
) -> None:
    evidence = data.draw(number_evidence())
    phone = parse(raw, hint)
    latest = max([NOW - DAY, *(c.at + 1 for c in evidence.calls)])
    report = reported("same", latest)
    result = score_phone(phone, replace(evidence, calls=(*evidence.calls, report)), NOW)
    works = evidence.verification is None or evidence.verification.valid
    if phone.valid and fictional_reason(phone) is None and works:
        assert result.status == "na - auth"
        day = datetime.fromtimestamp(latest, UTC).date().isoformat()
        assert result.reasons[0] == f"reported a wrong number on {day}"
    else:
        assert tier(result.status) == "na"


def test_na_dnc_from_a_listed_landline_has_probability_zero() -> None:
    result = score(US, block="landline", dnc_lists=("federal",))
    assert result.status == "na - dnc"
    assert result.probability == 0.0


# -- leadStatus (D16) and bestPhone (D17) on the engine's output -------------------------------


def contact_score(fields: dict[str, str], evidence: dict[str, NumberEvidence]) -> Any:
    return score_parsed(parse_contact_phones(fields), evidence, NOW)


def test_lead_status_ignores_modifiers_and_best_phone_skips_dnc() -> None:
    result = contact_score(
        {"phone": US, "phone2": US_OTHER, "phone3": "+13127946000"},
        {
            US: NumberEvidence(block="wireless", dnc_lists=("federal",)),
            US_OTHER: NumberEvidence(block="landline"),
            "+13127946000": NumberEvidence(verification=Verification("acme", "pager")),
        },
    )
    assert [p["status"] for p in result.phones] == ["p1 - dnc", "p2", "p3"]
    assert result.lead_status == "P1"
    assert result.best_phone == {"number": US_OTHER, "status": "p2", "ivrPath": None}


def test_only_dnc_and_na_numbers_leave_no_best_phone() -> None:
    result = contact_score(
        {"phone": US, "phone2": US_OTHER},
        {
            US: NumberEvidence(block="wireless", dnc_lists=("federal",)),
            US_OTHER: NumberEvidence(calls=calls("wrong_number", "wrong_number")),
        },
    )
    assert [p["status"] for p in result.phones] == ["p1 - dnc", "na - auth"]
    assert result.lead_status == "P1"
    assert result.best_phone is None


def test_all_na_needs_attention() -> None:
    result = contact_score(
        {"phone": "nope", "phone2": "+14155550123", "phone3": US},
        {US: NumberEvidence(calls=(Call("disconnected", ago(2)), Call("disconnected", ago(1))))},
    )
    assert [p["status"] for p in result.phones] == ["na", "na", "na"]
    assert result.lead_status == "Needs Attention"
    assert result.best_phone is None


def test_no_phones_is_no_numbers_found() -> None:
    result = contact_score({"firstName": "Ann"}, {})
    assert result.lead_status == "No Numbers Found"
    assert result.best_phone is None


def test_lead_status_is_the_best_tier() -> None:
    result = contact_score(
        {"phone": US, "phone2": US_OTHER},
        {US: NumberEvidence(block="voip"), US_OTHER: NumberEvidence(block="landline")},
    )
    assert result.lead_status == "P2"
    pager = NumberEvidence(verification=Verification("acme", "pager"))
    pager_only = contact_score({"phone": US}, {US: pager})
    assert pager_only.lead_status == "P3"


def test_best_phone_prefers_no_modifier_then_sf_ivr_h() -> None:
    connects = calls(*["connected"] * 30, days_ago=2)
    numbers = [US, US_OTHER, "+13127946000", "+16172531000"]
    evidence = {
        numbers[0]: NumberEvidence(block="wireless", shared_with=1, calls=connects),
        numbers[1]: NumberEvidence(block="wireless", calls=(*connects, Call("ivr", ago(1), "3"))),
        numbers[2]: NumberEvidence(block="wireless", calls=(*connects, Call("screened", ago(1)))),
        numbers[3]: NumberEvidence(block="wireless", calls=connects),
    }
    fields = dict(zip(("phone", "phone2", "phone3", "phone4"), numbers, strict=True))
    result = contact_score(fields, evidence)
    assert [p["status"] for p in result.phones] == ["p1 - h", "p1 - ivr", "p1 - sf", "p1"]
    assert result.best_phone == {"number": numbers[3], "status": "p1", "ivrPath": None}
    del fields["phone4"]
    result = contact_score(fields, evidence)
    assert result.best_phone == {"number": numbers[2], "status": "p1 - sf", "ivrPath": None}
    del fields["phone3"]
    result = contact_score(fields, evidence)
    assert result.best_phone == {"number": numbers[1], "status": "p1 - ivr", "ivrPath": "3"}


def test_best_phone_prefers_a_better_tier_over_a_modifier() -> None:
    result = contact_score(
        {"phone": US, "phone2": US_OTHER},
        {US: NumberEvidence(block="landline"), US_OTHER: NumberEvidence(block="wireless")},
    )
    assert result.best_phone is not None
    assert result.best_phone["number"] == US_OTHER


def test_best_phone_prefers_mobile_within_a_tier_then_position() -> None:
    # Both p2 (a landline block beats the mobile hint), but the second is typed mobile.
    fields = {"phone": US, "phone2": US_OTHER, "phone2Type": "mobile"}
    evidence = {US: NumberEvidence(block="landline"), US_OTHER: NumberEvidence(block="landline")}
    result = contact_score(fields, evidence)
    assert [p["status"] for p in result.phones] == ["p2", "p2"]
    assert [p["type"] for p in result.phones] == ["other", "mobile"]
    assert result.best_phone is not None
    assert result.best_phone["number"] == US_OTHER
    same_type = contact_score({"phone": US, "phone2": US_OTHER}, evidence)
    assert same_type.best_phone is not None
    assert same_type.best_phone["number"] == US


def test_phone_entries_carry_reasons_and_ivr_path() -> None:
    result = contact_score(
        {"phone": US}, {US: NumberEvidence(company_line=True, directory_ivr_path="2")}
    )
    (entry,) = result.phones
    assert entry["status"] == "p2 - ivr"
    assert entry["ivrPath"] == "2"
    assert "a company's main line" in entry["reasons"]
    assert result.best_phone == {"number": US, "status": "p2 - ivr", "ivrPath": "2"}


# -- company and person keys ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "key"),
    [
        ({"companyAccount": "Acme"}, "name:acme"),
        ({"companyAccount": "Acme, Inc."}, "name:acme"),
        ({"companyAccount": "ACME Corporation"}, "name:acme"),
        ({"companyAccount": "Acme Holdings Ltd."}, "name:acme"),
        ({"companyAccount": "  acme   llc "}, "name:acme"),
        ({"companyAccount": "Acme-Co"}, "name:acme"),
        ({"companyAccount": "Müller AG"}, "name:muller"),
        ({"companyAccount": "Société Générale"}, "name:societe generale"),
        ({"companyAccount": "Widgets & Sons Pty Ltd"}, "name:widgets and sons"),
        ({"companyAccount": "The Acme Company"}, "name:acme"),
        ({"companyAccount": "Acme.com, Inc."}, "name:acme"),
        # A name that is only a suffix keeps its last word.
        ({"companyAccount": "Company Inc"}, "name:company"),
        ({"companyAccount": "Inc."}, "name:inc"),
        # The name wins over domains.
        ({"companyAccount": "Acme", "website": "other.com"}, "name:acme"),
        # Without a name: the website's domain, then the email's.
        ({"companyAccount": "  ", "website": "https://www.Acme.com/about"}, "domain:acme.com"),
        ({"website": "acme.com:8080"}, "domain:acme.com"),
        ({"website": "http://acme.co.uk"}, "domain:acme.co.uk"),
        ({"email": "ann@acme.com"}, "domain:acme.com"),
        ({"email": "Ann@ACME.com"}, "domain:acme.com"),
        ({"website": "acme.com", "email": "ann@other.com"}, "domain:acme.com"),
        ({"website": "", "email": "ann@acme.com"}, "domain:acme.com"),
        # Free mail says nothing about the company.
        ({"email": "ann@gmail.com"}, None),
        ({"email": "ann@GMail.com"}, None),
        ({"email": "ann@hotmail.com", "website": "localhost"}, None),
        ({"website": "www.gmail.com"}, None),
        # Nor does a host of many companies' pages; a company page names the company.
        ({"website": "https://acme.wordpress.com", "email": "ann@acme.com"}, "domain:acme.com"),
        ({"website": "https://www.linkedin.com/company/acme-inc"}, "page:acme-inc"),
        ({"companyLinkedInUrl": "linkedin.com/company/1035", "email": "a@gmail.com"}, "page:1035"),
        # The version 1 form's company fields.
        ({"companyInfo": {"companyAccount": "Acme Inc."}}, "name:acme"),
        ({}, None),
        ({"companyAccount": "!!!"}, None),
    ],
)
def test_company_key(fields: dict[str, Any], key: str | None) -> None:
    assert company_key(fields) == key


def test_company_key_ignores_non_strings() -> None:
    assert company_key({"companyAccount": 42, "email": "ann@acme.com"}) == "domain:acme.com"
    assert company_key({"companyAccount": None, "website": None}) is None


@pytest.mark.parametrize(
    ("dotted", "plain"),
    [
        ("Société Générale S.A.", "Société Générale"),
        ("Philips B.V.", "Philips"),
        ("Acme L.L.C.", "Acme"),
    ],
)
def test_company_key_drops_dotted_legal_suffixes(dotted: str, plain: str) -> None:
    assert company_key({"companyAccount": dotted}) == company_key({"companyAccount": plain})


@pytest.mark.parametrize(
    ("fields", "key"),
    [
        ({"firstName": "Ann", "lastName": "Lee"}, "ann lee"),
        ({"firstName": " ANN ", "lastName": "lee "}, "ann lee"),
        ({"firstName": "Zoë", "lastName": "O'Brien"}, "zoe obrien"),
        ({"firstName": "Dr. Seán", "lastName": "Ørsted Jr."}, "sean orsted"),
        ({"firstName": "Mary-Ann", "lastName": "Smith"}, "mary ann smith"),
        ({"firstName": "Ann"}, "ann"),
        ({"lastName": "Lee"}, "lee"),
        ({}, ""),
    ],
)
def test_person_key(fields: dict[str, Any], key: str) -> None:
    assert person_key(fields) == key


def test_person_key_tells_people_apart() -> None:
    assert person_key({"firstName": "Ann", "lastName": "Lee"}) != person_key(
        {"firstName": "Bob", "lastName": "Lee"}
    )


@pytest.mark.parametrize(
    ("with_empty", "without"),
    [
        ({"firstName": "", "lastName": "Lee"}, {"lastName": "Lee"}),
        ({"firstName": "Ann", "lastName": ""}, {"firstName": "Ann"}),
        ({"firstName": "Ann", "lastName": "  "}, {"firstName": "Ann"}),
    ],
)
def test_person_key_ignores_empty_name_parts(
    with_empty: dict[str, str], without: dict[str, str]
) -> None:
    assert person_key(with_empty) == person_key(without)


def column_length(column: Any) -> int:
    kind = column.type
    assert isinstance(kind, String)
    assert kind.length is not None
    return kind.length


def test_keys_of_accepted_fields_fit_their_columns() -> None:
    long_text = "x" * MAX_FIELD_LENGTH
    company = company_key({"companyAccount": long_text})
    person = person_key({"firstName": long_text, "lastName": long_text})
    assert company is not None
    company_column = column_length(ContactNumber.__table__.c.company_key)
    person_column = column_length(ContactNumber.__table__.c.person_key)
    assert len(company) <= company_column
    assert len(person) <= person_column


def test_submissions_accept_fields_longer_than_the_key_columns() -> None:
    long_text = "x" * MAX_FIELD_LENGTH
    (prepared,) = prepare(
        "scoring",
        [{"firstName": long_text, "lastName": long_text, "companyAccount": long_text, "phone": US}],
    )
    assert isinstance(prepared, NewContact)
    assert prepared.fields["companyAccount"] == long_text


# -- the client's rate scale (P90) ---------------------------------------------------------------


def test_a_tally_without_calls_scales_nothing() -> None:
    assert lines.Tally().scale() == lines.NO_SCALE == lines.RateScale(1.0, 1.0)


def test_a_few_calls_hardly_move_the_scale_and_many_stay_within_bounds() -> None:
    low, high = lines.SCALE_BOUNDS
    few = lines.Counts(observed=3, expected=1, calls=5)
    assert 1.0 < few.factor() < 1.1
    assert lines.Counts(observed=0, expected=500, calls=4000).factor() == low
    assert lines.Counts(observed=5000, expected=500, calls=4000).factor() == high
    fewer = lines.Counts(observed=240, expected=300, calls=3000).factor()
    assert fewer == pytest.approx((240 + 20) / (300 + 20))


def test_mobiles_and_other_lines_are_scaled_apart() -> None:
    # P212: a client's mobiles may answer as everyone's do while its office lines do not.
    tally = lines.Tally()
    for day in range(1, 40):
        lines.belief("mobile", calls("no_answer", days_ago=day), NOW, tally=tally)
        lines.belief("landline", calls("connected", days_ago=day), NOW, tally=tally)
    scale = tally.scale()
    assert scale.mobile < 1.0 < scale.other
    assert (tally.mobile.calls, tally.other.calls, tally.calls) == (39, 39, 78)
    assert scale.of("mobile") == scale.of("mobile (hint)") == scale.mobile
    assert scale.of("landline") == scale.of("unknown") == scale.of("switchboard") == scale.other


def test_the_tally_predicts_each_call_from_the_calls_before_it() -> None:
    tally = lines.Tally()
    history = (Call("no_answer", ago(20)), Call("connected", ago(10)))
    lines.belief("mobile", history, NOW, tally=tally)
    first = fresh_rate("mobile")
    after_a_miss = lines.belief("mobile", history[:1], ago(10)).connect_rate
    assert tally.calls == 2
    assert tally.observed == 1
    assert tally.expected == pytest.approx(first + after_a_miss)


def test_calls_about_someone_else_are_not_tallied() -> None:
    tally = lines.Tally()
    history = (Call("connected", ago(10), person="other"), Call("no_answer", ago(5)))
    lines.belief("landline", history, NOW, tally=tally)
    assert (tally.calls, tally.observed) == (1, 0)


def test_the_scale_moves_the_estimate_and_says_so() -> None:
    plain = score(UK_MOBILE)
    mobiles_lower = lines.RateScale(mobile=0.6)
    lower = score_phone(parse(UK_MOBILE), NumberEvidence(), NOW, rate_scale=mobiles_lower)
    assert plain.status == "p1"
    assert lower.status == "p2"
    assert lower.probability == pytest.approx(plain.probability * 0.6, rel=0.05)
    assert "(mobiles' rates x 0.60, from this client's calls)" in lower.reasons[-1]
    assert "client's calls" not in plain.reasons[-1]
    # A fixed line has the other factor.
    fixed = score_phone(parse(UK_FIXED), NumberEvidence(), NOW, rate_scale=mobiles_lower)
    assert fixed == score(UK_FIXED)
    higher = score_phone(
        parse(UK_FIXED), NumberEvidence(), NOW, rate_scale=lines.RateScale(other=1.4)
    )
    assert higher.probability == pytest.approx(score(UK_FIXED).probability * 1.4, rel=0.05)
    assert "(the rates of lines other than mobiles x 1.40, from" in higher.reasons[-1]
    # The hard rules do not move.
    everything_higher = lines.RateScale(1.5, 1.5)
    invalid = score_phone(
        parse("+10000000000"), NumberEvidence(), NOW, rate_scale=everything_higher
    )
    assert invalid.status == "na"


# -- redials (P213) ------------------------------------------------------------------------------


def test_a_redial_that_connects_teaches_nothing_of_the_rate() -> None:
    missed = Call("voicemail", ago(10))
    redialled = (missed, Call("connected", ago(10) + 120))
    next_day = (missed, Call("connected", ago(9)))
    alone = lines.belief("mobile", (missed,), NOW)
    after_redial = lines.belief("mobile", redialled, NOW)
    after_next_day = lines.belief("mobile", next_day, NOW)
    # The redial's connect does not lift the rate as a call of its own does ...
    assert after_redial.connect_rate < after_next_day.connect_rate
    assert after_redial.connect_rate == pytest.approx(alone.connect_rate, rel=0.05)
    # ... but it says the line is alive and the person's.
    assert after_redial.dead < alone.dead
    assert after_redial.other < alone.other


def test_a_redial_is_not_tallied_and_ten_minutes_later_is_a_call_of_its_own() -> None:
    missed = Call("no_answer", ago(10))
    redial = lines.Tally()
    lines.belief("mobile", (missed, Call("connected", ago(10) + 599)), NOW, tally=redial)
    assert (redial.calls, redial.observed) == (1, 0)
    later = lines.Tally()
    lines.belief("mobile", (missed, Call("connected", ago(10) + 600)), NOW, tally=later)
    assert (later.calls, later.observed) == (2, 1)


def test_a_call_soon_after_a_connect_is_no_redial() -> None:
    # Only a call that did not connect is redialled.
    connected = Call("connected", ago(10))
    again = (connected, Call("connected", ago(10) + 60))
    tally = lines.Tally()
    twice = lines.belief("mobile", again, NOW, tally=tally)
    assert tally.calls == 2
    assert twice.connect_rate > lines.belief("mobile", (connected,), NOW).connect_rate


def test_a_phone_that_lets_only_redials_through_falls_from_p1() -> None:
    # Week after week the first call goes to voicemail and a redial a minute later connects:
    # one call reaches the person rarely, whatever the redials did.
    history = tuple(
        call
        for week in reversed(range(8))
        for call in (
            Call("voicemail", ago(7 * week + 1)),
            Call("connected", ago(7 * week + 1) + 60),
        )
    )
    assert score(UK_MOBILE).status == "p1"
    result = score(UK_MOBILE, calls=history)
    assert tier(result.status) in ("p2", "p3")
    # As low as the first calls alone make it; the redials only say the line is the
    # person's still.
    first_calls = score(UK_MOBILE, calls=history[::2])
    assert first_calls.probability <= result.probability < first_calls.probability * 1.1


def test_the_calls_of_a_number_reported_as_the_wrong_one_are_tallied() -> None:
    # The hard rule (D28) decides the status, not what the model learns from the calls.
    history = (Call("connected", ago(3)), unnamed())
    assert score(UK_MOBILE, calls=history).status == "na - auth"
    tally = tally_calls([(UK_MOBILE, NumberEvidence(calls=history))], NOW)
    assert (tally.calls, tally.observed) == (2, 1)


def test_tally_calls_skips_numbers_without_calls() -> None:
    history = (Call("connected", ago(3)),)
    tally = tally_calls(
        [(UK_MOBILE, NumberEvidence(calls=history)), (UK_FIXED, NumberEvidence())],
        NOW,
    )
    assert (tally.calls, tally.observed) == (1, 1)
    assert tally.expected == pytest.approx(fresh_rate("mobile"))
