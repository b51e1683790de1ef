"""Normalisation and rejection of submitted contacts (D5, D6, D7), as pure functions."""

from __future__ import annotations

from typing import Any

import pytest

from dialscore.jobs.schemas import Kind, NewContact
from dialscore.submissions.rules import Rejected, prepare

US = "+14155552671"
US2 = "+14155552672"
UK_MOBILE = "+447400123456"


def one(kind: Kind, contact: Any) -> NewContact | Rejected:
    results = prepare(kind, [contact])
    assert len(results) == 1
    return results[0]


def accepted(kind: Kind, contact: Any) -> NewContact:
    result = one(kind, contact)
    assert isinstance(result, NewContact), result
    return result


def reason_of(kind: Kind, contact: Any) -> str:
    result = one(kind, contact)
    assert isinstance(result, Rejected), result
    reason = result.record["rejectedReason"]
    assert isinstance(reason, str)
    return reason


def person(first: str = "Ann", last: str = "Lee", phone: str = US, **extra: Any) -> dict[str, Any]:
    return {"firstName": first, "lastName": last, "phone": phone, **extra}


# -- scoring rejections (D5) ----------------------------------------------------------------


def test_a_complete_contact_is_accepted() -> None:
    result = accepted("scoring", person(email="ann@example.com"))
    assert result.fields == {
        "firstName": "Ann",
        "lastName": "Lee",
        "email": "ann@example.com",
        "phone": US,
    }
    assert result.unmapped == {}
    assert [p.e164 for p in result.phones] == [US]


@pytest.mark.parametrize(
    ("contact", "reason"),
    [
        ({"lastName": "Lee", "phone": US}, "firstName is required"),
        (person(first=""), "firstName is required"),
        (person(first="   "), "firstName is required"),
        ({"firstName": None, "lastName": "Lee", "phone": US}, "firstName is required"),
        ({"firstName": "Ann", "phone": US}, "lastName is required"),
        (person(last="\t"), "lastName is required"),
        ({"phone": US}, "firstName is required"),  # the first failing rule is reported
        ({"firstName": "Ann", "lastName": "Lee"}, "at least one valid phone number is required"),
        (person(phone="12345"), "at least one valid phone number is required"),
        (
            person(phone="junk", phone2="", phone3="+10000000000"),
            "at least one valid phone number is required",
        ),
    ],
)
def test_scoring_rejection_reasons(contact: dict[str, Any], reason: str) -> None:
    assert reason_of("scoring", contact) == reason


def test_one_valid_number_among_invalid_ones_is_enough() -> None:
    result = accepted("scoring", person(phone="junk", phone4="(415) 555-2671"))
    assert [p.valid for p in result.phones] == [False, True]


def test_number_without_plus_is_read_as_us() -> None:
    result = accepted("scoring", person(phone="415-555-2671"))
    assert result.phones[0].e164 == US


def test_phone_country_hint_makes_a_national_number_valid() -> None:
    assert reason_of("scoring", person(phone="07400 123456")) == (
        "at least one valid phone number is required"
    )
    result = accepted("scoring", person(phone="07400 123456", phoneCountry="GB"))
    assert result.phones[0].e164 == UK_MOBILE


def test_rejected_record_echoes_its_input() -> None:
    contact = {"lastName": "Lee", "phone": US, "mystery": {"a": 1}, "title": "CTO"}
    result = one("scoring", contact)
    assert isinstance(result, Rejected)
    assert result.record == {**contact, "rejectedReason": "firstName is required"}


def test_results_keep_the_submitted_order() -> None:
    results = prepare(
        "scoring", [person(first="A"), {"firstName": "B"}, person(first="C", phone=US2)]
    )
    assert [type(r) for r in results] == [NewContact, Rejected, NewContact]
    first, _, third = results
    assert isinstance(first, NewContact)
    assert isinstance(third, NewContact)
    assert (first.fields["firstName"], third.fields["firstName"]) == ("A", "C")


def test_a_contact_that_is_not_an_object_is_rejected() -> None:
    result = one("scoring", ["Ann", "Lee"])
    assert isinstance(result, Rejected)
    assert result.record["rejectedReason"] == "each contact must be a JSON object"
    assert result.record["input"] == ["Ann", "Lee"]


# -- duplicates (D5) ------------------------------------------------------------------------

DUPLICATE = "duplicate of an earlier contact in this request"


def kinds(results: list[NewContact | Rejected]) -> list[str]:
    return ["ok" if isinstance(r, NewContact) else str(r.record["rejectedReason"]) for r in results]


def test_duplicate_by_names_ignoring_case_and_spaces_and_phone_format() -> None:
    results = prepare(
        "scoring",
        [
            person("Mary Ann", "Lee", US),
            person("  mary   ann ", "LEE", "(415) 555-2671"),
            person("MARY ANN", "lee ", "415.555.2671"),
        ],
    )
    assert kinds(results) == ["ok", DUPLICATE, DUPLICATE]
    duplicate = results[1]
    assert isinstance(duplicate, Rejected)
    assert duplicate.record["firstName"] == "  mary   ann "


def test_duplicate_compares_the_set_of_phones_not_their_slots() -> None:
    results = prepare(
        "scoring",
        [
            person(phone=US, phone2=UK_MOBILE),
            person(phone=UK_MOBILE, phone3=US),
            person(phone=US, phone2=US, phone5=UK_MOBILE),
        ],
    )
    assert kinds(results) == ["ok", DUPLICATE, DUPLICATE]


@pytest.mark.parametrize(
    "second",
    [
        person(first="Anne"),
        person(last="Li"),
        person(phone=US2),
        person(phone=US, phone2=US2),
    ],
)
def test_not_a_duplicate_when_names_or_phone_set_differ(second: dict[str, Any]) -> None:
    assert kinds(prepare("scoring", [person(), second])) == ["ok", "ok"]


def test_a_rejected_contact_is_not_an_original_for_duplicates() -> None:
    results = prepare("scoring", [person(last=""), person(), person()])
    assert kinds(results) == ["lastName is required", "ok", DUPLICATE]


def test_duplicates_only_within_one_request() -> None:
    assert kinds(prepare("scoring", [person()])) == ["ok"]
    assert kinds(prepare("scoring", [person()])) == ["ok"]


# -- values and limits (D7) -----------------------------------------------------------------


def test_numbers_become_strings() -> None:
    result = accepted("scoring", person(phone=4155552671, contactCrmId=12345, title=1.5))
    assert result.fields["phone"] == "4155552671"
    assert result.fields["contactCrmId"] == "12345"
    assert result.fields["title"] == "1.5"
    assert result.phones[0].e164 == US


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("title", {"a": 1}),
        ("title", ["CTO"]),
        ("title", True),
        ("phone", False),
        ("firstName", {"first": "Ann"}),
    ],
)
def test_objects_lists_and_booleans_are_rejected_naming_the_field(field: str, value: Any) -> None:
    assert reason_of("scoring", person(**{field: value})) == f"{field} must be a string"


def test_null_known_field_counts_as_absent() -> None:
    result = accepted("scoring", person(title=None, phone2=None))
    assert "title" not in result.fields
    assert "phone2" not in result.fields


def test_a_string_of_exactly_1000_characters_is_accepted() -> None:
    result = accepted("scoring", person(title="x" * 1000))
    assert len(result.fields["title"]) == 1000


@pytest.mark.parametrize("field", ["title", "firstName", "companyAccount", "phone2Type"])
def test_a_string_over_1000_characters_rejects_the_record_naming_the_field(field: str) -> None:
    reason = reason_of("scoring", person(**{field: "y" * 1001}))
    assert field in reason
    assert reason == f"{field} is longer than 1000 characters"


def test_a_long_number_converted_to_text_is_also_limited() -> None:
    reason = reason_of("scoring", person(title=10**1000))
    assert reason == "title is longer than 1000 characters"


def test_unknown_fields_go_to_unmapped() -> None:
    result = accepted(
        "scoring",
        person(favouriteColour="green", score=7, tags=["a", "b"], nested={"x": None}, flag=True),
    )
    assert result.unmapped == {
        "favouriteColour": "green",
        "score": 7,
        "tags": ["a", "b"],
        "nested": {"x": None},
        "flag": True,
    }
    assert "favouriteColour" not in result.fields


def test_long_unknown_fields_are_kept_not_rejected() -> None:
    result = accepted("scoring", person(notes="z" * 5000))
    assert result.unmapped == {"notes": "z" * 5000}


def test_unmapped_fields_are_merged_with_unknown_fields() -> None:
    result = accepted(
        "scoring",
        person(unmappedFields={"crmStage": "lead", "n": 2}, region="west"),
    )
    assert result.unmapped == {"crmStage": "lead", "n": 2, "region": "west"}


def test_null_unmapped_fields_is_ignored() -> None:
    assert accepted("scoring", person(unmappedFields=None)).unmapped == {}


def test_unmapped_fields_that_is_not_an_object_is_rejected() -> None:
    assert reason_of("scoring", person(unmappedFields=["a"])) == "unmappedFields must be an object"


def test_fields_are_in_the_documented_order() -> None:
    result = accepted("scoring", {"phone": US, "title": "CTO", "lastName": "Lee", "firstName": "A"})
    assert list(result.fields) == ["firstName", "lastName", "title", "phone"]


# -- billable phones (D9) -------------------------------------------------------------------


def test_billable_phones_counts_valid_distinct_numbers() -> None:
    result = accepted(
        "scoring",
        person(
            phone=US,
            phone2="(415) 555-2671",
            phone3="junk",
            phone4=UK_MOBILE,
            phone5="+1 415 555 2671 ext. 9",
        ),
    )
    assert len(result.phones) == 5
    assert result.billable_phones == 2


def test_billable_phones_of_single_number() -> None:
    assert accepted("scoring", person()).billable_phones == 1


def test_billable_phones_of_enrichment_contact_without_phones_is_zero() -> None:
    result = accepted("enrichment", {"firstName": "Ann", "companyAccount": "Acme"})
    assert result.phones == []
    assert result.billable_phones == 0


# -- enrichment rejections (D6) -------------------------------------------------------------

COMPANY_REQUIRED = "companyAccount, linkedInUrl or companyLinkedInUrl is required"
IDENTITY_REQUIRED = "a name, linkedInUrl or email is required"


@pytest.mark.parametrize(
    "contact",
    [
        {"firstName": "Ann", "companyAccount": "Acme"},
        {"lastName": "Lee", "companyLinkedInUrl": "https://www.linkedin.com/company/acme"},
        {"linkedInUrl": "https://www.linkedin.com/in/annlee"},
        {"email": "ann@acme.example", "companyAccount": "Acme"},
        {"firstName": "Ann", "lastName": "Lee", "companyAccount": "Acme", "phone": "junk"},
    ],
)
def test_enrichment_contacts_accepted(contact: dict[str, Any]) -> None:
    accepted("enrichment", contact)


@pytest.mark.parametrize(
    ("contact", "reason"),
    [
        ({"firstName": "Ann", "lastName": "Lee", "email": "a@b.example"}, COMPANY_REQUIRED),
        ({"firstName": "Ann", "lastName": "Lee", "companyAccount": "  "}, COMPANY_REQUIRED),
        ({}, COMPANY_REQUIRED),
        ({"companyAccount": "Acme"}, IDENTITY_REQUIRED),
        ({"companyAccount": "Acme", "firstName": " ", "lastName": ""}, IDENTITY_REQUIRED),
        (
            {"companyLinkedInUrl": "https://www.linkedin.com/company/acme", "phone": US},
            IDENTITY_REQUIRED,
        ),
    ],
)
def test_enrichment_rejection_reasons(contact: dict[str, Any], reason: str) -> None:
    assert reason_of("enrichment", contact) == reason


def test_enrichment_does_not_require_a_phone_but_scoring_does() -> None:
    contact = {"firstName": "Ann", "lastName": "Lee", "companyAccount": "Acme"}
    accepted("enrichment", contact)
    assert reason_of("scoring", contact) == "at least one valid phone number is required"


def test_enrichment_duplicates() -> None:
    base = {"firstName": "Ann", "lastName": "Lee", "companyAccount": "Acme", "phone": US}
    results = prepare(
        "enrichment",
        [
            base,
            {**base, "firstName": "ANN ", "phone": "415 555 2671"},
            {**base, "companyAccount": "Globex"},
            {"linkedInUrl": "https://www.linkedin.com/in/a"},
            {"linkedInUrl": "https://www.linkedin.com/in/b"},
            {"linkedInUrl": "https://www.linkedin.com/in/a/"},
        ],
    )
    assert kinds(results) == ["ok", DUPLICATE, "ok", "ok", "ok", DUPLICATE]


def test_enrichment_value_rules_are_shared_with_scoring() -> None:
    contact = {"firstName": "Ann", "companyAccount": "A" * 1001, "extra": 1}
    assert reason_of("enrichment", contact) == "companyAccount is longer than 1000 characters"
    result = accepted("enrichment", {"firstName": "Ann", "companyAccount": 42, "extra": 1})
    assert result.fields["companyAccount"] == "42"
    assert result.unmapped == {"extra": 1}
