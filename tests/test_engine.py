"""The baseline scorer as a pure function: parsing, regions, types, statuses (D15 to D19)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dialscore.phones import APAC, EMEA, normalise_type, region_for
from dialscore.scoring.engine import (
    best_phone,
    lead_status,
    phone_entry,
    score_contact,
    score_phone,
    split_status,
    unscored,
)
from dialscore.scoring.evidence import NO_EVIDENCE
from dialscore.scoring.numbers import (
    ENRICHED_TYPE,
    ParsedPhone,
    display_type,
    enriched_numbers,
    parse_contact_phones,
    parse_phone,
)
from tests.support import PHONE_STATUSES

PHONE_ENTRY_KEYS = {
    "number", "status", "type", "country", "region", "position", "ivrPath", "connectRate",
    "reasons",
}  # fmt: skip


def baseline_status(phone: ParsedPhone) -> str:
    """The status of a number with no evidence beyond its digits and type hint."""
    return score_phone(phone, NO_EVIDENCE, now=0.0).status


UK_MOBILE = "+447400123456"
UK_FIXED = "+442079460958"
UK_TOLL_FREE = "+448009151738"
US_NUMBER = "+14155552671"  # NANP numbers are "fixed line or mobile" in the metadata
US_TOLL_FREE = "+18005551234"


def parse(raw: str, *, hint: str | None = None, country: str | None = None) -> ParsedPhone:
    return parse_phone(raw, position=1, slot="phone", type_hint=hint, country_hint=country)


def entry(position: int, status: str | None, kind: str = "direct", **extra: Any) -> dict[str, Any]:
    """A phone entry built by hand, as the worker stores it."""
    return {
        "number": f"+1415555{position:04d}",
        "status": status,
        "type": kind,
        "country": "US",
        "region": "US",
        "position": position,
        "ivrPath": None,
        **extra,
    }


# -- parse_phone ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    ["+14155552671", "+1 (415) 555-2671", "4155552671", "(415) 555-2671", "415.555.2671"],
)
def test_us_numbers_are_normalised_to_e164_with_or_without_plus(raw: str) -> None:
    phone = parse(raw)
    assert phone.valid
    assert phone.e164 == "+14155552671"
    assert phone.number == "+14155552671"
    assert phone.country == "US"


def test_number_without_plus_is_read_as_us_even_if_it_looks_british() -> None:
    # 020 7946 0958 is a London number in GB format; without a hint it is not a US number.
    assert parse("020 7946 0958").e164 is None
    assert parse("020 7946 0958", country="GB").e164 == UK_FIXED


@pytest.mark.parametrize("hint", ["GB", "gb", " GB "])
def test_phone_country_hint_is_honoured(hint: str) -> None:
    phone = parse("07400 123456", country=hint)
    assert phone.e164 == UK_MOBILE
    assert phone.country == "GB"
    assert phone.region == "EMEA"


def test_unknown_country_hint_falls_back_to_us() -> None:
    assert parse("4155552671", country="XX").e164 == US_NUMBER
    assert parse("4155552671", country="").e164 == US_NUMBER


def test_explicit_country_code_wins_over_hint() -> None:
    phone = parse("+14155552671", country="GB")
    assert phone.e164 == US_NUMBER
    assert phone.country == "US"


@pytest.mark.parametrize("raw", ["", "12", "abc", "not a number", "+10000000000", "+1 555"])
def test_invalid_numbers_have_no_e164_and_keep_their_text(raw: str) -> None:
    phone = parse(f"  {raw} ")
    assert not phone.valid
    assert phone.e164 is None
    assert phone.country is None
    assert phone.region is None
    assert phone.number == raw.strip()


@pytest.mark.parametrize(
    "raw",
    ["+1 415 555 2671 ext. 12", "+1 415 555 2671 x12", "(415) 555-2671 ext 12", "4155552671#12"],
)
def test_extension_is_split_from_the_number(raw: str) -> None:
    phone = parse(raw)
    assert phone.e164 == US_NUMBER
    assert phone.extension == "12"


def test_number_without_extension_has_none() -> None:
    assert parse(US_NUMBER).extension is None


@given(st.text(max_size=40), st.sampled_from([None, "US", "GB", "DE", "zz", ""]))
@settings(max_examples=300, deadline=None)
def test_parse_phone_never_raises_and_is_consistent(raw: str, hint: str | None) -> None:
    phone = parse(raw, country=hint)
    if phone.valid:
        assert phone.e164 is not None
        assert phone.e164.startswith("+")
        assert phone.e164[1:].isdigit()
        assert phone.country is not None
        assert len(phone.country) == 2
        assert baseline_status(phone) != "na"
    else:
        assert (phone.country, phone.region, phone.number_type) == (None, None, None)
        assert baseline_status(phone) == "na"


@given(st.integers(min_value=2_000_000_000, max_value=9_999_999_999))
@settings(max_examples=200, deadline=None)
def test_ten_digit_numbers_read_the_same_with_and_without_plus_one(digits: int) -> None:
    assert parse(str(digits)).e164 == parse(f"+1{digits}").e164


# -- regions (D18) --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "country", "region"),
    [
        (US_NUMBER, "US", "US"),
        ("+16135550123", "CA", "US"),  # Canada is NANP: region US, country CA
        (UK_FIXED, "GB", "EMEA"),
        (UK_MOBILE, "GB", "EMEA"),
        ("+4930123456", "DE", "EMEA"),
        ("+27211234567", "ZA", "EMEA"),
        ("+971501234567", "AE", "EMEA"),
        ("+81312345678", "JP", "APAC"),
        ("+61212345678", "AU", "APAC"),
        ("+919876543210", "IN", "APAC"),
        ("+6591234567", "SG", "APAC"),
        ("+5511987654321", "BR", None),
        ("+525512345678", "MX", None),
    ],
)
def test_country_and_region_of_a_number(raw: str, country: str, region: str | None) -> None:
    phone = parse(raw)
    assert phone.valid
    assert phone.country == country
    assert phone.region == region
    entry_ = phone_entry(phone, score_phone(phone, NO_EVIDENCE, now=0.0))
    assert entry_["country"] == country
    assert entry_["region"] == region


def test_region_for_uses_calling_code_one_before_country() -> None:
    assert region_for(1, "CA") == "US"
    assert region_for(1, "JM") == "US"
    assert region_for(44, "GB") == "EMEA"
    assert region_for(81, "JP") == "APAC"
    assert region_for(55, "BR") is None
    assert region_for(0, None) is None


def test_region_tables_are_disjoint_alpha2_codes() -> None:
    assert not EMEA & APAC
    for code in EMEA | APAC:
        assert len(code) == 2
        assert code.isupper()
    assert {"US", "CA", "BR", "MX"}.isdisjoint(EMEA | APAC)


# -- types ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given_type", "expected"),
    [
        ("mobile", "mobile"),
        (" Mobile ", "mobile"),
        ("CELL", "mobile"),
        ("cell phone", "mobile"),
        ("wireless", "mobile"),
        ("direct", "direct"),
        ("Work", "direct"),
        ("office", "direct"),
        ("landline", "direct"),
        ("direct dial", "direct"),
        ("hq", "hq"),
        ("Main", "hq"),
        ("switchboard", "hq"),
        ("Headquarters", "hq"),
        ("company", "hq"),
        ("other", "other"),
        ("fax", "other"),
        ("", "other"),
        (None, None),
    ],
)
def test_phone_type_synonyms(given_type: str | None, expected: str | None) -> None:
    assert normalise_type(given_type) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (UK_MOBILE, "mobile"),
        (UK_FIXED, "direct"),
        (UK_TOLL_FREE, "hq"),
        (US_TOLL_FREE, "hq"),
        (US_NUMBER, "other"),
        ("not a number", None),
    ],
)
def test_display_type_inferred_from_line_type(raw: str, expected: str | None) -> None:
    assert display_type(parse(raw)) == expected


def test_display_type_prefers_the_submitted_type() -> None:
    assert display_type(parse(US_NUMBER, hint="Cell")) == "mobile"
    assert display_type(parse(UK_MOBILE, hint="work")) == "direct"
    assert display_type(parse("junk", hint="mobile")) == "mobile"


# -- baseline statuses (D15) ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "hint", "expected"),
    [
        (UK_MOBILE, None, "p1"),
        ("+4915192837465", None, "p1"),
        (US_NUMBER, "mobile", "p1"),
        (US_NUMBER, "cell", "p1"),
        (US_NUMBER, None, "p2"),
        (US_NUMBER, "direct", "p2"),
        (UK_FIXED, None, "p2"),
        (UK_FIXED, "mobile", "p2"),  # the metadata says fixed line: no mobile evidence
        (UK_TOLL_FREE, None, "p2 - h"),
        (US_TOLL_FREE, None, "p2 - h"),
        ("+4918019283", None, "p2 - h"),  # shared cost
        (US_NUMBER, "hq", "p2 - h"),
        (UK_MOBILE, "switchboard", "p1"),  # a hint never overrides the numbering plan
        ("+445619283746", None, "p2"),  # VoIP: office lines, often
        ("+447019283746", None, "p3"),  # personal number
        ("+449019283746", None, "p3"),  # premium rate
        ("not a number", None, "na"),
        ("+10000000000", "mobile", "na"),
    ],
)
def test_baseline_status(raw: str, hint: str | None, expected: str) -> None:
    status = baseline_status(parse(raw, hint=hint))
    assert status == expected
    assert status in PHONE_STATUSES


def test_split_status() -> None:
    assert split_status("p1") == ("p1", None)
    assert split_status("p2 - h") == ("p2", "h")
    assert split_status("na - auth") == ("na", "auth")


def test_score_contact_builds_entries_in_slot_order() -> None:
    score = score_contact(
        {
            "phone": UK_MOBILE,
            "phone2": "020 7946 0958",
            "phone2Country": "GB",
            "phone3": US_TOLL_FREE,
            "phone4": US_NUMBER,
            "phone4Type": "hq",
            "phone5": "not a number",
        }
    )
    phones = score.phones
    assert [set(p) for p in phones] == [PHONE_ENTRY_KEYS] * 5
    assert [p["position"] for p in phones] == [1, 2, 3, 4, 5]
    assert [p["number"] for p in phones] == [
        UK_MOBILE,
        UK_FIXED,
        US_TOLL_FREE,
        US_NUMBER,
        "not a number",
    ]
    assert [p["status"] for p in phones] == ["p1", "p2", "p2 - h", "p2 - h", "na"]
    assert [p["type"] for p in phones] == ["mobile", "direct", "hq", "hq", None]
    assert [p["region"] for p in phones] == ["EMEA", "EMEA", "US", "US", None]
    assert all(p["ivrPath"] is None for p in phones)
    assert score.lead_status == "P1"
    assert score.best_phone == {"number": UK_MOBILE, "status": "p1", "ivrPath": None}


def test_empty_slots_are_skipped_and_positions_stay_dense() -> None:
    phones = parse_contact_phones({"phone": "  ", "phone3": US_NUMBER, "phone5": UK_MOBILE})
    assert [(p.slot, p.position) for p in phones] == [("phone3", 1), ("phone5", 2)]


def test_contact_without_phones() -> None:
    score = score_contact({"firstName": "Ann", "lastName": "Lee"})
    assert score.phones == []
    assert score.lead_status == "No Numbers Found"
    assert score.best_phone is None


def test_contact_with_only_invalid_numbers_needs_attention() -> None:
    score = score_contact({"phone": "123", "phone2": "nope"})
    assert [p["status"] for p in score.phones] == ["na", "na"]
    assert score.lead_status == "Needs Attention"
    assert score.best_phone is None


def test_unscored_contact_is_uncontacted() -> None:
    result = unscored(parse_contact_phones({"phone": US_NUMBER}))
    assert result.lead_status == "Uncontacted"
    assert result.best_phone is None
    assert [p["status"] for p in result.phones] == [None]
    assert result.phones[0]["number"] == US_NUMBER


# -- enriched phones (D19) ------------------------------------------------------------------


def test_enriched_phones_are_appended_with_continuing_positions() -> None:
    score = score_contact(
        {"phone": US_NUMBER, "phone2": "", "phone3": UK_FIXED},
        enriched=[(UK_MOBILE, None), ("+14155552672", None), ("garbage", None)],
    )
    phones = score.phones
    assert [p["position"] for p in phones] == [1, 2, 3, 4, 5]
    assert [p["number"] for p in phones] == [
        US_NUMBER,
        UK_FIXED,
        UK_MOBILE,
        "+14155552672",
        "garbage",
    ]
    assert [p["type"] for p in phones[2:]] == [
        "Service Enriched Phone 1",
        "Service Enriched Phone 2",
        "Service Enriched Phone 3",
    ]
    assert [p["status"] for p in phones] == ["p2", "p2", "p1", "p2", "na"]
    assert phones[2]["country"] == "GB"
    assert phones[2]["region"] == "EMEA"
    assert score.lead_status == "P1"
    assert score.best_phone is not None
    assert score.best_phone["number"] == UK_MOBILE


def test_enriched_numbers_count_from_one_for_a_contact_without_phones() -> None:
    phones = parse_contact_phones({}, enriched=[("+14155552672", None)])
    assert [(p.position, display_type(p)) for p in phones] == [(1, f"{ENRICHED_TYPE} 1")]
    assert ENRICHED_TYPE == "Service Enriched Phone"


def test_the_type_a_source_gave_a_found_number_is_its_hint_not_its_label() -> None:
    """The directory says the number is a mobile: scored as one given as mobile, while the
    contact's list still calls it "Service Enriched Phone 1" (D19)."""
    hinted, plain = (
        score_contact({}, enriched=[("+14155552672", hint)]).phones[0] for hint in ("mobile", None)
    )
    assert hinted["type"] == plain["type"] == f"{ENRICHED_TYPE} 1"
    assert "given as mobile; line type not confirmed" in hinted["reasons"]
    assert "line type unknown (mobile or fixed)" in plain["reasons"]


def test_enriched_numbers_read_back_with_their_types() -> None:
    phones = [
        {"number": US_NUMBER, "type": "direct"},
        {"number": "+14155552672", "type": f"{ENRICHED_TYPE} 1"},
        {"number": "+14155552673", "type": f"{ENRICHED_TYPE} 2"},
    ]
    assert enriched_numbers(phones, ["mobile", None]) == [
        ("+14155552672", "mobile"),
        ("+14155552673", None),
    ]
    # Contacts scored before the types were kept: no hints.
    assert enriched_numbers(phones, None) == [("+14155552672", None), ("+14155552673", None)]


def test_more_than_five_phones_after_enrichment() -> None:
    fields = {slot: f"+1415555{i:04d}" for i, slot in enumerate(("phone", "phone2"), start=1)}
    enriched = [(f"+1415555{i:04d}", None) for i in range(10, 15)]
    phones = score_contact(fields, enriched).phones
    assert len(phones) == 7
    assert [p["position"] for p in phones] == list(range(1, 8))
    assert phones[-1]["type"] == "Service Enriched Phone 5"


# -- leadStatus (D16) -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        (["p1"], "P1"),
        (["p3", "p2 - h", "na"], "P2"),
        (["na", "p3 - ivr"], "P3"),
        (["p1 - dnc", "p3"], "P1"),  # modifiers are ignored
        (["p2 - sf", "p1 - h"], "P1"),
        (["na", "na - auth", "na - dnc", "na - ivr", "na - h"], "Needs Attention"),
        ([], "No Numbers Found"),
        ([None], "Uncontacted"),
        ([None, None], "Uncontacted"),
    ],
)
def test_lead_status(statuses: list[str | None], expected: str) -> None:
    phones = [entry(i, s) for i, s in enumerate(statuses, start=1)]
    assert lead_status(phones) == expected


# -- bestPhone (D17) ------------------------------------------------------------------------


def _best_position(phones: list[dict[str, Any]]) -> int | None:
    best = best_phone(phones)
    if best is None:
        return None
    matches = [p["position"] for p in phones if p["number"] == best["number"]]
    assert len(matches) == 1
    assert best["status"] == next(p["status"] for p in phones if p["number"] == best["number"])
    return matches[0]


def test_best_phone_prefers_the_better_tier_over_position() -> None:
    assert _best_position([entry(1, "p3"), entry(2, "p2"), entry(3, "p1")]) == 3


def test_best_phone_prefers_tier_over_modifier() -> None:
    assert _best_position([entry(1, "p2"), entry(2, "p1 - h")]) == 2


def test_best_phone_modifier_order_none_sf_ivr_h() -> None:
    phones = [entry(1, "p1 - h"), entry(2, "p1 - ivr"), entry(3, "p1 - sf"), entry(4, "p1")]
    assert _best_position(phones) == 4
    assert _best_position(phones[:3]) == 3
    assert _best_position(phones[:2]) == 2
    assert _best_position(phones[:1]) == 1


def test_best_phone_prefers_modifier_over_mobile() -> None:
    phones = [entry(1, "p2 - sf", "mobile"), entry(2, "p2", "direct")]
    assert _best_position(phones) == 2


def test_best_phone_prefers_mobile_within_tier_and_modifier() -> None:
    phones = [entry(1, "p2", "direct"), entry(2, "p2", "hq"), entry(3, "p2", "mobile")]
    assert _best_position(phones) == 3


def test_best_phone_breaks_ties_by_position_not_list_order() -> None:
    phones = [entry(3, "p2", "direct"), entry(2, "p2", "other"), entry(4, "p2", "direct")]
    assert _best_position(phones) == 2


def test_best_phone_excludes_na_and_dnc() -> None:
    phones = [
        entry(1, "p1 - dnc", "mobile"),
        entry(2, "na", "mobile"),
        entry(3, "na - auth", "mobile"),
        entry(4, "p3 - h", "hq"),
    ]
    assert _best_position(phones) == 4


@pytest.mark.parametrize(
    "statuses",
    [[], ["na"], ["p1 - dnc"], ["na - dnc", "na - ivr", "p1 - dnc", "na - h"], [None]],
)
def test_best_phone_is_null_when_none_qualifies(statuses: list[str | None]) -> None:
    assert best_phone([entry(i, s) for i, s in enumerate(statuses, start=1)]) is None


def test_best_phone_carries_number_status_and_ivr_path_only() -> None:
    phones = [entry(1, "p2 - ivr", ivrPath="1,3,#")]
    assert best_phone(phones) == {
        "number": "+14155550001",
        "status": "p2 - ivr",
        "ivrPath": "1,3,#",
    }


# -- properties -----------------------------------------------------------------------------

TIERS = {"p1": 0, "p2": 1, "p3": 2}
MODIFIERS = {None: 0, "sf": 1, "ivr": 2, "h": 3}
TYPES = ("mobile", "direct", "hq", "other", "Service Enriched Phone 1", None)


def spec_rank(phone: dict[str, Any]) -> tuple[int, int, int, int] | None:
    """D17 ranking written independently of the engine; None when not eligible."""
    tier, _, modifier = phone["status"].partition(" - ")
    if tier not in TIERS or modifier == "dnc":
        return None
    return (
        TIERS[tier],
        MODIFIERS[modifier or None],
        0 if phone["type"] == "mobile" else 1,
        phone["position"],
    )


@st.composite
def scored_phones(draw: st.DrawFn) -> list[dict[str, Any]]:
    statuses = draw(st.lists(st.sampled_from(PHONE_STATUSES), max_size=8))
    types = draw(st.lists(st.sampled_from(TYPES), min_size=len(statuses), max_size=len(statuses)))
    positions = draw(st.permutations(range(1, len(statuses) + 1)))
    return [
        entry(position, status, kind)
        for position, status, kind in zip(positions, statuses, types, strict=True)
    ]


@given(scored_phones())
@settings(max_examples=500, deadline=None)
def test_best_phone_is_eligible_and_unbeaten(phones: list[dict[str, Any]]) -> None:
    best = best_phone(phones)
    ranked = [(rank, p) for p in phones if (rank := spec_rank(p)) is not None]
    if not ranked:
        assert best is None
        return
    assert best is not None
    chosen = next(p for p in phones if p["number"] == best["number"])
    assert best["status"] == chosen["status"]
    tier, _, modifier = best["status"].partition(" - ")
    assert tier != "na"
    assert modifier != "dnc"
    chosen_rank = spec_rank(chosen)
    assert chosen_rank is not None
    assert all(not rank < chosen_rank for rank, _ in ranked)


@given(scored_phones())
@settings(max_examples=500, deadline=None)
def test_lead_status_agrees_with_the_best_tier(phones: list[dict[str, Any]]) -> None:
    status = lead_status(phones)
    if not phones:
        assert status == "No Numbers Found"
        return
    tiers = [p["status"].partition(" - ")[0] for p in phones]
    if all(t == "na" for t in tiers):
        assert status == "Needs Attention"
        assert best_phone(phones) is None
        return
    best_tier = min((t for t in tiers if t != "na"), key=TIERS.__getitem__)
    assert status == best_tier.upper()
    best = best_phone(phones)
    if best is not None:
        # bestPhone skips dnc, so its tier can only be equal or worse than leadStatus.
        assert TIERS[best["status"].partition(" - ")[0]] >= TIERS[best_tier]
    else:
        assert all(
            p["status"].endswith(" - dnc") for p in phones if not p["status"].startswith("na")
        )
