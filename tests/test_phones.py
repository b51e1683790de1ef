"""dialscore.phones against phonenumbers, the reference: validity, line type, country and E.164
agree on generated text and on libphonenumber's example number of every region and type."""

from __future__ import annotations

import phonenumbers
import pytest
import rphonenumbers
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dialscore import phones
from dialscore.phones import LineType

REGIONS = sorted(phonenumbers.SUPPORTED_REGIONS)
# What clients put between digits, and letters, marks and other scripts' digits that a parser
# must refuse or read.
_ALPHABET = "0123456789" * 3 + "+-(). /x#*,;" + "\u00a0\u2013\uff11\u0661aZé"


def reference(text: str, country: str) -> tuple[str, str | None, LineType, str | None] | None:
    """What phonenumbers says of ``text`` read in ``country``: E.164, country, line type
    and extension of a valid number; None for anything else."""
    try:
        parsed = phonenumbers.parse(text, country)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_valid_number(parsed):
        return None
    found = phonenumbers.region_code_for_number(parsed)
    return (
        phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.E164),
        None if found == "001" else found,
        LineType(phonenumbers.PhoneNumberType.to_string(phonenumbers.number_type(parsed)).lower()),
        parsed.extension or None,
    )


def ours(text: str, country: str) -> tuple[str, str | None, LineType, str | None] | None:
    phones.analyse.cache_clear()
    number = phones.analyse(text, country)
    if number is None:
        return None
    return number.e164, number.country, number.line_type, number.extension


def test_backend_carries_the_reference_metadata_release() -> None:
    """Both libraries read the same libphonenumber release, so they can agree exactly; an
    upgrade of one without the other fails here first."""
    assert rphonenumbers.__phonenumbers_version__ == phonenumbers.__version__


@pytest.mark.parametrize("region", REGIONS)
def test_example_numbers_of_every_type_agree(region: str) -> None:
    checked = 0
    for kind in range(phonenumbers.PhoneNumberType.UNKNOWN):
        example_number = phonenumbers.example_number_for_type(region, kind)
        if example_number is None:
            continue
        for style in (
            phonenumbers.PhoneNumberFormat.E164,
            phonenumbers.PhoneNumberFormat.INTERNATIONAL,
            phonenumbers.PhoneNumberFormat.NATIONAL,
        ):
            text = phonenumbers.format_number(example_number, style)
            expected = reference(text, region)
            assert ours(text, region) == expected, (region, kind, text)
            checked += 1
    assert checked > 0


def test_non_geographic_example_numbers_agree() -> None:
    for code in sorted(phonenumbers.COUNTRY_CODES_FOR_NON_GEO_REGIONS):
        example_number = phonenumbers.example_number_for_non_geo_entity(code)
        if example_number is None:
            continue
        text = phonenumbers.format_number(example_number, phonenumbers.PhoneNumberFormat.E164)
        expected = reference(text, "US")
        assert expected is not None and expected[1] is None
        assert ours(text, "US") == expected


@given(
    text=st.text(alphabet=_ALPHABET, max_size=30),
    country=st.sampled_from(REGIONS),
)
@settings(max_examples=1500, deadline=None)
@example(text="(415) 555-2671", country="US")
@example(text="+44 20 7946 0958 ext. 12", country="US")
@example(text="030 1234567", country="DE")
def test_generated_text_agrees(text: str, country: str) -> None:
    assert ours(text, country) == reference(text, country)


@given(
    code=st.sampled_from(sorted(phonenumbers.COUNTRY_CODE_TO_REGION_CODE)),
    national=st.text(alphabet="0123456789", min_size=4, max_size=14),
    separator=st.sampled_from(["", " ", "-", "."]),
)
@settings(max_examples=1500, deadline=None)
def test_generated_international_numbers_agree(code: int, national: str, separator: str) -> None:
    """Digits after a real country code: the shape where validity is decided by the
    metadata's patterns, not by the parser."""
    text = f"+{code}{separator}{national}"
    assert ours(text, "US") == reference(text, "US")


@given(text=st.text(alphabet=_ALPHABET, max_size=30))
@settings(max_examples=500, deadline=None)
def test_importers_reading_agrees(text: str) -> None:
    """``e164_or_reason`` accepts exactly the valid numbers without an extension."""
    e164, reason = phones.e164_or_reason(text)
    expected = reference(text, "US")
    if expected is None or expected[3] is not None:
        assert e164 is None and reason
    else:
        assert (e164, reason) == (expected[0], "")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("n/a", phones.UNREADABLE),
        ("+1 415 555 2671 ext 9", phones.WITH_EXTENSION),
        ("+1 999 555 2671", phones.INVALID),
    ],
)
def test_importers_reading_says_why(text: str, reason: str) -> None:
    assert phones.e164_or_reason(text) == (None, reason)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, "US"), ("", "US"), ("gb", "GB"), (" DE ", "DE"), ("XX", "US"), ("GBR", "US")],
)
def test_country_or_default(value: str | None, expected: str) -> None:
    assert phones.country_or_default(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("Cell", "mobile"),
        (" wireless ", "mobile"),
        ("Direct Dial", "direct"),
        ("landline", "direct"),
        ("Switchboard", "hq"),
        ("fax", "other"),
    ],
)
def test_type_labels_are_normalised(value: str | None, expected: str | None) -> None:
    assert phones.normalise_type(value) == expected


@pytest.mark.parametrize(
    ("text", "region"),
    [("+14155552671", "US"), ("+442079460958", "EMEA"), ("+81312345678", "APAC"),
     ("+5511987654321", None)],
)  # fmt: skip
def test_sales_region(text: str, region: str | None) -> None:
    number = phones.analyse(text)
    assert number is not None
    assert number.region == region
