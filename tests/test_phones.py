"""dialscore.phones against phonenumbers, the reference (D30): validity, line type, country
and E.164 agree on generated text and on libphonenumber's example number of every region and
type. With the fast extra installed, dialscore.phones runs on rphonenumbers and these are the
differential tests it is used under; without it, they check the module's reading on the
reference. The module also works on the reference alone, and no other module of dialscore
imports either library."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import phonenumbers
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dialscore import phones
from dialscore.phones import FAST, LIBRARY_ENV, REFERENCE, LineType

SOURCES = Path(phones.__file__).resolve().parent
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


FAST_INSTALLED = importlib.util.find_spec(FAST) is not None
needs_fast = pytest.mark.skipif(
    not FAST_INSTALLED,
    reason=f"{FAST} is not installed (the fast extra): the agreement tests check "
    f"dialscore.phones on {REFERENCE} alone",
)


def ours(text: str, country: str) -> tuple[str, str | None, LineType, str | None] | None:
    phones.analyse.cache_clear()
    number = phones.analyse(text, country)
    if number is None:
        return None
    return number.e164, number.country, number.line_type, number.extension


@needs_fast
@pytest.mark.skipif(
    os.environ.get(LIBRARY_ENV, "").strip().lower() == REFERENCE,
    reason=f"{LIBRARY_ENV}={REFERENCE}: the agreement tests check dialscore.phones on the "
    f"reference alone, not {FAST}",
)
def test_the_agreement_tests_check_the_fast_library() -> None:
    """Installed, the fast library is the one in use, so that the tests below compare it with
    the reference (D30); one that is installed but cannot be imported fails here."""
    assert phones.LIBRARY == FAST


@needs_fast
def test_fast_library_carries_the_reference_metadata_release() -> None:
    """Both libraries read the same libphonenumber release, so they can agree exactly; an
    upgrade of one without the other fails here first."""
    fast = importlib.import_module(FAST)
    assert fast.__phonenumbers_version__ == phonenumbers.__version__


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


# -- the library in use (D30) -----------------------------------------------------------------

# Numbers of every kind the module answers for, and the country each is read in.
SAMPLES = [
    ("(415) 555-2671", "US"),
    ("+1 415 555 2671 ext. 9", "US"),
    ("+1 999 555 2671", "US"),
    ("n/a", "US"),
    ("", "US"),
    ("020 7946 0958", "GB"),
    ("07400 123456", "GB"),
    ("+44 20 7946 0958", "US"),
    ("030 1234567", "DE"),
    ("+49 1512 3456789", "US"),
    ("03-1234-5678", "JP"),
    ("+61 2 9374 4000", "US"),
    ("+55 11 98765-4321", "US"),
    ("+800 1234 5678", "US"),
    ("1-800-555-0199", "US"),
    ("+1 284 496 1234", "US"),
    ("\uff14\uff11\uff15 555 2671", "US"),
]

# Run in a process of its own: what dialscore.phones answers for SAMPLES (from stdin), as JSON.
ANSWERS = """
import json, sys
if sys.argv[1] == "without-fast":
    sys.modules["rphonenumbers"] = None  # as an install without the fast extra
from dialscore import phones
samples = json.load(sys.stdin)
json.dump({"library": phones.LIBRARY, "answers": [
    [
        number._asdict() if (number := phones.analyse(text, country)) else None,
        phones.readable(text, country),
        phones.e164_or_reason(text, country),
        phones.country_or_default(country),
    ]
    for text, country in samples
]}, sys.stdout)
"""


def answers_here() -> list[Any]:
    """What this process's dialscore.phones answers for SAMPLES, as the JSON of ``ANSWERS``."""
    found = []
    for text, country in SAMPLES:
        number = phones.analyse(text, country)
        found.append(
            [
                number._asdict() if number else None,
                phones.readable(text, country),
                list(phones.e164_or_reason(text, country)),
                phones.country_or_default(country),
            ]
        )
    return json.loads(json.dumps(found))


@pytest.mark.parametrize(
    ("choice", "mode"),
    [(REFERENCE, "as-installed"), ("auto", "without-fast"), ("", "without-fast")],
    ids=["chosen", "auto-without-fast", "unset-without-fast"],
)
def test_module_works_on_the_reference_alone(choice: str, mode: str) -> None:
    """On phonenumbers, chosen or the only one installed, dialscore.phones gives the answers it
    gives here, and the reference's own."""
    env = {**os.environ, LIBRARY_ENV: choice}
    if not choice:
        del env[LIBRARY_ENV]
    result = subprocess.run(
        [sys.executable, "-c", ANSWERS, mode],
        input=json.dumps(SAMPLES),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    there = json.loads(result.stdout)
    assert there["library"] == REFERENCE
    assert there["answers"] == answers_here()
    for (text, country), (number, *_) in zip(SAMPLES, there["answers"], strict=True):
        expected = reference(text, country)
        got = (
            None
            if number is None
            else (
                number["e164"],
                number["country"],
                LineType(number["line_type"]),
                number["extension"],
            )
        )
        assert got == expected, (text, country)
    # The samples hold valid numbers of several countries, and ones refused for each reason.
    assert sum(number is not None for number, *_ in there["answers"]) >= 10
    reasons = {reason for *_, (_, reason), _ in there["answers"]}
    assert {phones.UNREADABLE, phones.INVALID, phones.WITH_EXTENSION} <= reasons


def test_auto_falls_back_to_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, FAST, None)  # an install without the fast extra
    assert phones.load_library("auto") == (REFERENCE, phonenumbers)
    assert phones.load_library(" PhoneNumbers ") == (REFERENCE, phonenumbers)


def test_the_fast_library_asked_for_but_missing_is_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, FAST, None)
    with pytest.raises(ImportError, match=r"DIALSCORE_PHONE_LIBRARY=rphonenumbers.*\[fast\]"):
        phones.load_library(FAST)


@needs_fast
def test_auto_takes_the_fast_library_when_installed() -> None:
    assert phones.load_library("auto")[0] == FAST
    assert phones.load_library(FAST)[0] == FAST


def test_an_unknown_library_is_refused() -> None:
    with pytest.raises(ValueError, match="auto, phonenumbers, rphonenumbers, not 'libphone'"):
        phones.load_library("libphone")


def _imported_libraries(tree: ast.AST) -> set[str]:
    """The phone libraries a module's source imports: import statements, and calls of
    ``importlib.import_module`` or ``__import__`` with the name written out."""
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            first = node.args[0]
            if called in ("import_module", "__import__") and isinstance(first, ast.Constant):
                names.append(str(first.value))
    return {name.split(".")[0] for name in names} & {REFERENCE, FAST}


def test_only_the_phone_module_imports_a_phone_library() -> None:
    """D30: everything else reads numbers through dialscore.phones, so that the fast library
    stays a drop-in behind one module."""
    importers = {
        path.relative_to(SOURCES).as_posix(): found
        for path in sorted(SOURCES.rglob("*.py"))
        if (found := _imported_libraries(ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert importers == {"phones.py": {REFERENCE, FAST}}
