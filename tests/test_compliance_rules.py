"""The compliance rules file: the packaged one, an operator's over it, and bad files refused
with a message naming the bad rule (dialscore.compliance.rules)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from dialscore.compliance import RulesError, assess, load_rules, present
from dialscore.compliance.rules import packaged_rules

SEATTLE = "+12065550123"
NOW = datetime(2026, 11, 27, 16, 30, tzinfo=UTC)  # 08:30 in Seattle


def test_every_packaged_rule_has_a_source_and_the_file_a_version() -> None:
    document = packaged_rules()
    assert document.version
    assert document.jurisdictions["US"].hours is not None
    for key, rule in document.jurisdictions.items():
        assert rule.source.strip(), key


def test_an_operators_file_overrides_a_state_and_adds_one(tmp_path: Path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text(
        'version = "acme-1"\n'
        "[jurisdictions.US-WA]\n"
        'name = "Washington, as our counsel reads it"\n'
        'source = "Acme counsel memo 2026-11"\n'
        'hours = { start = "09:00", end = "17:00" }\n'
        "[jurisdictions.US-NY]\n"
        'name = "New York"\n'
        'source = "Acme policy"\n'
        "max_calls_per_24h = 1\n",
        encoding="utf-8",
    )
    rules = load_rules(path)
    assert rules.version == f"{packaged_rules().version}+acme-1"
    assert rules.jurisdictions["US-FL"] == packaged_rules().jurisdictions["US-FL"]
    verdict = present(assess(SEATTLE, now=NOW, rules=rules))
    assert verdict["callableNow"] is False
    assert verdict["callWindow"] == {
        "start": "09:00",
        "end": "17:00",
        "rule": "US-WA",
        "source": "Acme counsel memo 2026-11",
    }
    assert verdict["nextCallableAt"] == "2026-11-27T17:00:00Z"
    # The packaged rule would have allowed 08:30.
    assert assess(SEATTLE, now=NOW, rules=load_rules()).callable_now is True
    one_call = [datetime(2026, 11, 27, 15, 0, tzinfo=UTC)]
    assert assess("+12125550123", now=NOW, rules=rules, recent_calls=one_call).callable_now is False


def test_an_operators_file_may_replace_the_packaged_rules(tmp_path: Path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text(
        'version = "only-federal"\nmode = "replace"\n'
        '[jurisdictions.US]\nname = "federal"\nsource = "47 CFR 64.1200(c)(1)"\n'
        'hours = { start = "08:00", end = "21:00" }\n',
        encoding="utf-8",
    )
    rules = load_rules(path)
    assert rules.version == "only-federal"
    assert set(rules.jurisdictions) == {"US"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[jurisdictions.US-FL]\nname = "Florida"\nsource = "x"\n'
            'hours = { start = "20:00", end = "08:00" }\n',
            "rule US-FL, hours: end 08:00 is not after start 20:00",
        ),
        (
            '[jurisdictions.US-FL]\nname = "Florida"\nhours = { start = "08:00", end = "20:00" }\n',
            "rule US-FL, source: Field required",
        ),
        (
            '[jurisdictions.US-FL]\nname = "Florida"\nsource = "x"\nsundays = false\n',
            "rule US-FL, sundays: Extra inputs are not permitted",
        ),
        (
            '[jurisdictions.US-FL]\nname = "Florida"\nsource = "x"\nmax_calls_per_24h = 0\n',
            "rule US-FL, max_calls_per_24h",
        ),
        (
            '[jurisdictions.US-FL]\nname = "Florida"\nsource = "x"\n'
            'holidays = { allowed = false, calendar = "XX-YY" }\n',
            "rule US-FL, holidays.calendar: calendar 'XX-YY' is not one the holidays package",
        ),
        (
            '[jurisdictions.florida]\nname = "Florida"\nsource = "x"\n',
            "rule florida",
        ),
        ("[jurisdictions\n", "is not valid TOML"),
    ],
)
def test_a_bad_rules_file_is_refused_naming_the_rule(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = tmp_path / "bad.toml"
    body = text if text.startswith("[jurisdictions\n") else 'version = "1"\n' + text
    path.write_text(body, encoding="utf-8")
    with pytest.raises(RulesError) as refused:
        load_rules(path)
    assert expected in str(refused.value)
    assert str(path) in str(refused.value)


def test_a_missing_rules_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RulesError, match="cannot be read"):
        load_rules(tmp_path / "absent.toml")
