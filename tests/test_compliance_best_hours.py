"""The best hours to call: the prior by line type inside the legal window, and hours learnt
from reported calls (dialscore.compliance.best_hours)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from dialscore.compliance import assess, load_rules, present, tally_calls
from dialscore.compliance.best_hours import MIN_CALLS

NOW = datetime(2026, 11, 27, 15, 0, tzinfo=UTC)
MIAMI = "+13055550123"
HOUSTON = "+17135550123"


def test_the_prior_for_a_mobile_is_lunch_and_after_work() -> None:
    shown = present(assess(MIAMI, now=NOW, rules=load_rules(), line_type="mobile"))
    weekdays = ["mon", "tue", "wed", "thu", "fri"]
    assert shown["bestCallHours"] == [
        {
            "days": weekdays,
            "from": "17:00",
            "to": "19:00",
            "expectedConnectRate": 0.33,
            "basedOnCalls": 0,
        },
        {
            "days": weekdays,
            "from": "12:00",
            "to": "13:00",
            "expectedConnectRate": 0.3,
            "basedOnCalls": 0,
        },
        {
            "days": ["sat"],
            "from": "10:00",
            "to": "12:00",
            "expectedConnectRate": 0.25,
            "basedOnCalls": 0,
        },
    ]


def test_the_prior_is_cut_to_the_legal_window(tmp_path: Path) -> None:
    # A direct line's prior is mid-morning on workdays: inside Texas's 9 am start, cut by an
    # operator's 10 am one.
    texas = assess(HOUSTON, now=NOW, rules=load_rules(), line_type="direct")
    assert [(h.start_hour, h.end_hour) for h in texas.best_call_hours] == [(9, 11), (16, 17)]
    path = tmp_path / "rules.toml"
    path.write_text(
        'version = "late"\n[jurisdictions.US-TX]\nname = "Texas"\nsource = "policy"\n'
        'hours = { start = "10:00", end = "21:00" }\n',
        encoding="utf-8",
    )
    cut = assess(HOUSTON, now=NOW, rules=load_rules(path), line_type="direct")
    assert [(h.start_hour, h.end_hour) for h in cut.best_call_hours] == [(10, 11), (16, 17)]
    # No hours at all on a day calls are forbidden: a mobile's Saturday in a state without
    # Saturday calls.
    path.write_text(
        'version = "no-saturdays"\n[jurisdictions.US-TX]\nname = "Texas"\nsource = "policy"\n'
        "saturday = false\n",
        encoding="utf-8",
    )
    mobile = assess(HOUSTON, now=NOW, rules=load_rules(path), line_type="mobile")
    assert all(5 not in h.days for h in mobile.best_call_hours)
    assert len(mobile.best_call_hours) == 2


def test_learned_hours_differ_from_the_prior_when_there_are_enough_calls() -> None:
    zone = ZoneInfo("America/New_York")
    calls: list[tuple[datetime, bool]] = []
    # Early Tuesday and Wednesday mornings answer; the prior's lunch hours do not.
    for week in range(4):
        for day, hour, connected in [(1, 8, True), (2, 8, True), (0, 12, False), (3, 17, False)]:
            local = datetime(2026, 10, 5, hour, 15, tzinfo=zone) + timedelta(weeks=week, days=day)
            for repeat in range(3):
                calls.append((local.astimezone(UTC), connected and repeat < 2))
    counts = tally_calls(calls, zone)
    assert sum(c for c, _ in counts.values()) >= MIN_CALLS
    verdict = assess(MIAMI, now=NOW, rules=load_rules(), line_type="mobile", call_counts=counts)
    best = present(verdict)["bestCallHours"]
    assert isinstance(best, list)
    assert best[0]["days"] in (["tue"], ["wed"])
    assert best[0]["from"] == "08:00"
    assert best[0]["basedOnCalls"] == 12
    assert best[0]["expectedConnectRate"] > 0.33
    prior = present(assess(MIAMI, now=NOW, rules=load_rules(), line_type="mobile"))
    assert best != prior["bestCallHours"]


def test_too_few_calls_keep_the_prior() -> None:
    counts = {(1, 8): (MIN_CALLS - 1, MIN_CALLS - 1)}
    with_calls = assess(MIAMI, now=NOW, rules=load_rules(), line_type="mobile", call_counts=counts)
    without = assess(MIAMI, now=NOW, rules=load_rules(), line_type="mobile")
    assert with_calls.best_call_hours == without.best_call_hours
