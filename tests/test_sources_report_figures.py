"""The enrichment sources report worked out from tallies, jobs, contacts and calls, with no
database (P205): which contact a call counts for, the credits per source, the order of rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from dialscore.accuracy.report import ReportedCall
from dialscore.accuracy.sources_report import (
    EnrichedContact,
    JobCredits,
    Tally,
    build_sources_report,
)


def test_a_call_counts_once_for_the_contact_scored_last_before_it() -> None:
    base = datetime(2026, 11, 2, 9, tzinfo=UTC)
    contacts = [
        EnrichedContact("history", False, base, ("+1",)),
        EnrichedContact("apollo", False, base, ("+1",)),  # same instant, given later
        EnrichedContact("pdl", False, base + timedelta(hours=2), ("+1",)),
        EnrichedContact("pdl", False, None, ("+2",)),  # not scored yet
    ]
    calls = [
        ReportedCall("+1", base - timedelta(seconds=1), True),  # nowhere
        ReportedCall("+1", base, True),  # apollo
        ReportedCall("+1", base + timedelta(hours=2), False),  # pdl, at the instant
        ReportedCall("+2", base + timedelta(hours=3), True),  # nowhere
    ]
    report = build_sources_report(
        since=base,
        until=base + timedelta(days=1),
        order=["pdl", "apollo", "history"],
        tallies=[],
        jobs=[],
        contacts=contacts,
        calls=calls,
    )
    figures = {(s.source, s.calls, s.connects, s.numbers) for s in report.sources}
    assert figures == {("pdl", 1, 0, 2), ("apollo", 1, 1, 1), ("history", 0, 0, 1)}
    assert [s.source for s in report.sources] == ["pdl", "apollo", "history"]
    assert report.source("history") is not None
    assert report.source("history", own_key=True) is None


def test_credits_are_the_price_per_contact_exactly_and_an_unfinished_job_refunds_nothing() -> None:
    base = datetime(2026, 11, 2, 9, tzinfo=UTC)
    job = JobCredits("j", accepted=3, unfound=0, charged=Decimal("0.0999"))
    running = JobCredits("r", accepted=2, unfound=0, charged=Decimal("0.1"))
    report = build_sources_report(
        since=base,
        until=base + timedelta(days=1),
        order=[],
        tallies=[
            Tally("j", "pdl", True, 3, 2, 2),
            Tally("j", "apollo", False, 1, 1, 1),
            Tally("r", "pdl", True, 2, 2, 2),
        ],
        jobs=[job, running],
        contacts=[],
        calls=[],
    )
    pdl = report.source("pdl", own_key=True)
    apollo = report.source("apollo")
    assert pdl is not None and apollo is not None
    assert pdl.credits_charged == Decimal("0.0666") + Decimal("0.1")
    assert pdl.credits_refunded == 0  # neither job wrote its own-key refund
    assert apollo.credits_charged == Decimal("0.0333")
    assert (pdl.hit_rate, apollo.connect_rate) == (0.8, None)
    # No source of the order seen: by name.
    assert [s.source for s in report.sources] == ["apollo", "pdl"]
