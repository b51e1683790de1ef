"""The score report's figures, worked out without a database: the Wilson interval against
published values, the area under the curve against counting pairs, which score a call
answers, and the figures per tier and band (P110, P111)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dialscore.accuracy.report import (
    BUCKETS,
    MIN_CALLS,
    TIERS,
    ReportedCall,
    Score,
    bucket_of,
    build_report,
    count_calls,
    reported_call,
    scores_of,
    tier_of,
)
from dialscore.accuracy.schemas import present_report
from dialscore.accuracy.service import SINCE_MALFORMED, SINCE_OUT_OF_RANGE, parse_since
from dialscore.accuracy.statistics import area_under_curve, wilson_interval
from dialscore.kit.errors import BadRequest

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
ANN = "+447400918273"
BOB = "+442079460958"


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def call(number: str, minutes: float, connected: bool = False) -> ReportedCall:
    return ReportedCall(number, at(minutes), connected)


# -- the Wilson interval ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("successes", "trials", "low", "high"),
    [
        # Newcombe (1998), Statistics in Medicine 17:857-872, table I, method 3 (score).
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
        # Half of the calls: an interval symmetric about 0.5; all of them: it ends at 1.
        (5, 10, 0.2366, 0.7634),
        (10, 10, 0.7225, 1.0),
    ],
)
def test_wilson_interval_of_published_examples(
    successes: int, trials: int, low: float, high: float
) -> None:
    found = wilson_interval(successes, trials)
    assert found is not None
    assert (round(found[0], 4), round(found[1], 4)) == (low, high)


def test_wilson_interval_without_trials_is_none_and_impossible_counts_are_refused() -> None:
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
    with pytest.raises(ValueError):
        wilson_interval(-1, 2)


@given(trials=st.integers(1, 5000), data=st.data())
def test_wilson_interval_holds_the_observed_rate_within_0_and_1(
    trials: int, data: st.DataObject
) -> None:
    successes = data.draw(st.integers(0, trials))
    found = wilson_interval(successes, trials)
    assert found is not None
    low, high = found
    assert 0.0 <= low <= successes / trials <= high <= 1.0
    assert (low == 0.0) == (successes == 0)
    assert (high == 1.0) == (successes == trials)
    mirrored = wilson_interval(trials - successes, trials)
    assert mirrored is not None
    assert mirrored[0] == pytest.approx(1 - high, abs=1e-12)


# -- the area under the curve -------------------------------------------------------------------


def pairs_won(outcomes: list[tuple[float, bool]]) -> float | None:
    """The same statistic by counting every (connect, other) pair: the definition."""
    yes = [score for score, happened in outcomes if happened]
    no = [score for score, happened in outcomes if not happened]
    if not yes or not no:
        return None
    won = sum(1.0 if y > n else 0.5 if y == n else 0.0 for y in yes for n in no)
    return won / (len(yes) * len(no))


def test_area_under_curve_of_known_cases() -> None:
    assert area_under_curve([(0.3, True), (0.1, False)]) == 1.0
    assert area_under_curve([(0.1, True), (0.3, False)]) == 0.0
    assert area_under_curve([(0.2, True), (0.2, False)]) == 0.5
    # 3 connects, 2 others: pairs won 2 + 1.5 + 0 of 6.
    outcomes = [(0.5, True), (0.4, False), (0.3, True), (0.3, False), (0.1, True)]
    assert area_under_curve(outcomes) == pytest.approx(2.5 / 6)
    assert area_under_curve([(0.2, True), (0.4, True)]) is None
    assert area_under_curve([(0.2, False)]) is None
    assert area_under_curve([]) is None


@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 0.01, 0.05, 0.07, 0.11, 0.23, 0.5, 1.0]), st.booleans()),
        max_size=60,
    )
)
def test_area_under_curve_is_the_share_of_pairs_won(outcomes: list[tuple[float, bool]]) -> None:
    expected = pairs_won(outcomes)
    found = area_under_curve(outcomes)
    assert found == (None if expected is None else pytest.approx(expected))


# -- reading stored scores -------------------------------------------------------------------------


def test_tier_of_a_status() -> None:
    assert [tier_of(s) for s in ("p1", "p1 - sf", "p2 - h", "p3 - ivr")] == [
        "p1",
        "p1",
        "p2",
        "p3",
    ]
    assert {tier_of(s) for s in ("na", "na - auth", "na - dnc", "na - ivr")} == {"na"}
    assert tier_of("P9") is None


def test_scores_of_a_contacts_phone_entries() -> None:
    phones = [
        {"number": ANN, "status": "p1 - sf", "connectRate": 0.23},
        {"number": BOB, "status": "na - auth", "connectRate": None},
        {"number": "+14155550123", "status": None, "connectRate": None},  # not scored
        {"number": None, "status": "na", "connectRate": None},  # not a number
        "not an entry",
    ]
    assert list(scores_of(T0, phones)) == [
        Score(ANN, T0, "p1", 0.23),
        Score(BOB, T0, "na", 0.0),
    ]


def test_connects_are_connected_and_right_party() -> None:
    outcomes = ("connected", "right_party", "voicemail", "no_answer", "gatekeeper")
    assert {o for o in outcomes if reported_call(ANN, o, T0).connected} == {
        "connected",
        "right_party",
    }


# -- which score a call answers --------------------------------------------------------------------


def test_a_call_counts_for_the_latest_score_of_its_number_before_it() -> None:
    scores = [Score(ANN, at(10), "p1", 0.23), Score(ANN, at(0), "p2", 0.07)]
    calls = [
        call(ANN, -5),  # before the first score: nowhere
        call(ANN, 0),  # at the very instant of a score: not after it
        call(ANN, 5, True),  # under the p2 score
        call(ANN, 15),  # under the p1 score
        call(BOB, 15, True),  # never scored: nowhere
    ]
    counted = count_calls(scores, calls, since=at(-60))
    assert [(c.tier, c.rate, c.connected) for c in counted] == [
        ("p2", 0.07, True),
        ("p1", 0.23, False),
    ]


def test_since_bounds_the_calls_not_the_scores() -> None:
    scores = [Score(ANN, at(0), "p1", 0.23)]
    calls = [call(ANN, 5, True), call(ANN, 30), call(ANN, 40, True)]
    counted = count_calls(scores, calls, since=at(30))
    # The score of minute 0, before since, is still the one in force at minutes 30 and 40.
    assert [(c.tier, c.connected) for c in counted] == [("p1", False), ("p1", True)]


def test_of_two_scores_of_one_instant_the_last_given_counts() -> None:
    scores = [Score(ANN, at(0), "p2", 0.07), Score(ANN, at(0), "p1", 0.21)]
    (counted,) = count_calls(scores, [call(ANN, 1)], since=at(0))
    assert (counted.tier, counted.rate) == ("p1", 0.21)


# -- figures ---------------------------------------------------------------------------------------


def test_bands_of_connect_rate() -> None:
    assert [bucket_of(r) for r in (0.0, 0.09, 0.1, 0.19, 0.2, 0.3, 0.7 - 0.4, 0.99, 1.0)] == [
        0,
        0,
        1,
        1,
        2,
        3,
        3,
        9,
        9,
    ]
    for hundredths in range(101):
        assert bucket_of(hundredths / 100) == min(hundredths // 10, 9), hundredths


def test_an_empty_report_lists_every_tier_and_band() -> None:
    report = present_report(build_report([], [], T0))
    assert report["since"] == "2026-06-01T09:00:00Z"
    assert (report["calls"], report["connects"], report["auc"]) == (0, 0, None)
    assert [t["tier"] for t in report["tiers"]] == list(TIERS)
    for tier in report["tiers"]:
        assert tier == {
            "tier": tier["tier"],
            "phones": 0,
            "calls": 0,
            "connects": 0,
            "predicted": None,
            "observed": None,
            "low": None,
            "high": None,
        }
    assert [(b["from"], b["to"]) for b in report["buckets"]] == [
        (i / 10, (i + 1) / 10) for i in range(BUCKETS)
    ]
    assert {(b["calls"], b["predicted"], b["observed"]) for b in report["buckets"]} == {
        (0, None, None)
    }


def test_figures_per_tier_and_band() -> None:
    scores = [
        Score(ANN, at(0), "p1", 0.23),
        Score(BOB, at(0), "p2", 0.07),
        Score("+442079460959", at(0), "p2", 0.11),
        Score("+14155550100", at(0), "na", 0.0),
    ]
    calls = [call(ANN, 1, i < 3) for i in range(10)]  # 3 of 10
    calls += [call(BOB, 1, i < 1) for i in range(6)]  # 1 of 6 at 0.07
    calls += [call("+442079460959", 2) for _ in range(3)]  # 0 of 3 at 0.11
    calls += [call("+14155550100", 2, True)]  # 1 of 1 at na
    report = present_report(build_report(scores, calls, since=at(0)))
    assert (report["calls"], report["connects"]) == (20, 5)
    tiers = {t["tier"]: t for t in report["tiers"]}
    assert tiers["p1"] == {
        "tier": "p1",
        "phones": 1,
        "calls": 10,
        "connects": 3,
        "predicted": 0.23,
        "observed": 0.3,
        "low": 0.1078,
        "high": 0.6032,
    }
    assert tiers["p2"]["phones"] == 2
    assert (tiers["p2"]["calls"], tiers["p2"]["connects"]) == (9, 1)
    assert tiers["p2"]["predicted"] == round((6 * 0.07 + 3 * 0.11) / 9, 4) == 0.0833
    assert tiers["p2"]["observed"] == 0.1111
    assert (tiers["p3"]["calls"], tiers["p3"]["predicted"], tiers["p3"]["low"]) == (0, None, None)
    # An na number's null connectRate is a promise of 0.
    assert tiers["na"]["predicted"] == 0.0
    assert (tiers["na"]["observed"], tiers["na"]["low"], tiers["na"]["high"]) == (1.0, 0.2065, 1.0)
    buckets = report["buckets"]
    assert (buckets[0]["calls"], buckets[0]["connects"]) == (7, 2)  # 0.07 and na
    assert buckets[0]["predicted"] == round(6 * 0.07 / 7, 4)
    assert (buckets[1]["calls"], buckets[1]["connects"], buckets[1]["observed"]) == (3, 0, 0.0)
    assert (buckets[2]["calls"], buckets[2]["connects"], buckets[2]["observed"]) == (10, 3, 0.3)
    assert sum(b["calls"] for b in buckets) == 20
    # 20 calls: the ranking is reported, and is the share of (connect, other) pairs won.
    outcomes = [(0.23, c.connected) for c in calls[:10]]
    outcomes += [(0.07, c.connected) for c in calls[10:16]]
    outcomes += [(0.11, False)] * 3 + [(0.0, True)]
    expected = pairs_won(outcomes)
    assert expected is not None
    assert report["auc"] == round(expected, 4)


def test_no_ranking_under_the_minimum_or_without_both_outcomes() -> None:
    scores = [Score(ANN, at(0), "p1", 0.23), Score(BOB, at(0), "p2", 0.07)]
    few = [call(ANN, 1, True)] + [call(BOB, 1) for _ in range(MIN_CALLS - 2)]
    assert build_report(scores, few, at(0)).auc is None
    enough = [*few, call(BOB, 2)]
    assert build_report(scores, enough, at(0)).auc == 1.0
    assert build_report(scores, [call(ANN, 1, True)] * MIN_CALLS, at(0)).auc is None
    assert build_report(scores, [call(BOB, 1)] * MIN_CALLS, at(0)).auc is None


def test_a_tier_against_its_band() -> None:
    scores = [Score(ANN, at(0), "p2", 0.07)]
    below = build_report(scores, [call(ANN, 1)] * 100, at(0)).tier("p2")
    assert (below.standing(), below.beyond_chance()) == ("below", True)
    maybe = build_report(scores, [call(ANN, 1)] * 20, at(0)).tier("p2")
    assert (maybe.standing(), maybe.beyond_chance()) == ("below", False)
    within = build_report(scores, [call(ANN, 1, i < 10) for i in range(100)], at(0)).tier("p2")
    assert (within.standing(), within.beyond_chance()) == ("within", False)
    above = build_report(scores, [call(ANN, 1, i < 50) for i in range(100)], at(0)).tier("p2")
    assert (above.standing(), above.beyond_chance()) == ("above", True)
    assert build_report(scores, [], at(0)).tier("p2").standing() is None


# -- since -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-05-01", datetime(2026, 5, 1, tzinfo=UTC)),
        ("2026-05-01T12:30:00Z", datetime(2026, 5, 1, 12, 30, tzinfo=UTC)),
        ("2026-05-01T12:30:00+02:00", datetime(2026, 5, 1, 10, 30, tzinfo=UTC)),
        # An unencoded '+' of a query string arrives as a space.
        ("2026-05-01T12:30:00 02:00", datetime(2026, 5, 1, 10, 30, tzinfo=UTC)),
        (" 2026-05-01 ", datetime(2026, 5, 1, tzinfo=UTC)),
    ],
)
def test_since_is_a_date_or_a_date_time_with_a_zone(text: str, expected: datetime) -> None:
    assert parse_since(text, T0) == expected


def test_since_defaults_to_90_days_before_now() -> None:
    assert parse_since(None, T0) == parse_since("", T0) == T0 - timedelta(days=90)


@pytest.mark.parametrize(
    "text", ["yesterday", "2026-13-01", "2026-05-01T12:30:00", "2026-05-01T25:00Z", "1714567890"]
)
def test_since_that_is_no_time_is_refused(text: str) -> None:
    with pytest.raises(BadRequest) as refused:
        parse_since(text, T0)
    assert refused.value.message == SINCE_MALFORMED


def test_since_off_the_calendar_is_refused() -> None:
    with pytest.raises(BadRequest) as refused:
        parse_since("0001-01-01T00:00:00+01:00", T0)
    assert refused.value.message == SINCE_OUT_OF_RANGE
