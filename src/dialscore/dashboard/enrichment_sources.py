"""The Enrichment sources page: for the client's enrichment jobs of a period, what each source
found, what it cost and how its numbers did when called, with the figures of the enrichment
report's service (``GET /account/enrichment-report``, P205), put in words."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from dialscore.accuracy import sources_service as service
from dialscore.accuracy.sources_report import SourceFigures, SourcesReport
from dialscore.dashboard.account import credits_text
from dialscore.dashboard.accuracy import percent
from dialscore.dashboard.web import SignedIn, render
from dialscore.dashboard.words import words
from dialscore.kit.clock import utcnow
from dialscore.kit.deps import StateDep
from dialscore.kit.errors import BadRequest

router = APIRouter()

# The days the page shows unless others are chosen: the last 30, today included.
DEFAULT_DAYS = 30
# Shown for a figure that has no value (no calls, nothing tried).
NONE = "—"
PERIOD_REFUSED = (
    "Those dates could not be used: choose a first day on or before the last day, at most "
    f"{service.MAX_PERIOD.days} days apart. Showing the last {DEFAULT_DAYS} days instead."
)


@dataclass(frozen=True)
class Period:
    """Days chosen on the form, both included, in UTC."""

    first: date
    last: date

    @property
    def since(self) -> datetime:
        return datetime.combine(self.first, time(), tzinfo=UTC)

    @property
    def until(self) -> datetime:
        return datetime.combine(self.last + timedelta(days=1), time(), tzinfo=UTC)


@dataclass(frozen=True)
class SourceRow:
    name: str
    tried: str
    found: str
    charged: str
    refunded: str
    calls: str
    reached: str


def default_period(today: date) -> Period:
    return Period(today - timedelta(days=DEFAULT_DAYS), today)


def chosen_period(first: str | None, last: str | None, today: date) -> tuple[Period, bool]:
    """The days of the form, and whether they could be used: the default period for none,
    and for days that are no dates, in the wrong order or too far apart (a page of the web
    app never answers a link typed wrong with an error)."""
    if not (first or "").strip() and not (last or "").strip():
        return default_period(today), True
    try:
        end = date.fromisoformat(last.strip()) if last and last.strip() else today
        start = (
            date.fromisoformat(first.strip())
            if first and first.strip()
            else end - timedelta(days=DEFAULT_DAYS)
        )
        period = Period(start, end)
        service.check_period(period.since, period.until)
    except (ValueError, OverflowError, BadRequest):
        return default_period(today), False
    return period, True


def source_name(source: str, own_key: bool) -> str:
    """A source as people know it: "People Data Labs", "People Data Labs (your key)"."""
    w = words()
    name = w.enrichment_names.get(source, source)
    return w.enrichment_sources["own_key"].format(source=name) if own_key else name


def _count(value: int) -> str:
    return f"{value:,}"


def _found(figures: SourceFigures) -> str:
    if figures.hit_rate is None:
        return _count(figures.hits)
    return f"{figures.hits:,} ({percent(figures.hit_rate)})"


def _reached(figures: SourceFigures) -> str:
    if figures.connect_rate is None:
        return NONE
    plural = "s" if figures.calls != 1 else ""
    return f"{percent(figures.connect_rate)} of {figures.calls:,} call{plural}"


def source_row(figures: SourceFigures) -> SourceRow:
    return SourceRow(
        name=source_name(figures.source, figures.own_key),
        tried=_count(figures.tried),
        found=_found(figures),
        charged=credits_text(figures.credits_charged),
        refunded=credits_text(figures.credits_refunded),
        calls=_count(figures.calls),
        reached=_reached(figures),
    )


def unfound_row(report: SourcesReport) -> SourceRow:
    return SourceRow(
        name=words().enrichment_sources["unfound"],
        tried=_count(report.unfound_contacts),
        found=NONE,
        charged=NONE,
        refunded=credits_text(report.unfound_refunded),
        calls=NONE,
        reached=NONE,
    )


@router.get("/enrichment-sources", response_class=HTMLResponse)
async def enrichment_sources(
    request: Request,
    state: StateDep,
    user: SignedIn,
    first: Annotated[str | None, Query(alias="from")] = None,
    last: Annotated[str | None, Query(alias="to")] = None,
) -> HTMLResponse:
    period, usable = chosen_period(first, last, utcnow().date())
    async with state.db.read() as session:
        report = await service.sources_report(
            session,
            state.settings,
            client_id=user.principal.client_id,
            since=period.since,
            until=period.until,
        )
    return render(
        request,
        "enrichment_sources.html",
        user,
        period=period,
        refused=None if usable else PERIOD_REFUSED,
        report=report,
        rows=[source_row(figures) for figures in report.sources],
        unfound=unfound_row(report),
        order=[source_name(source, False) for source in report.order],
        charged=credits_text(report.credits_charged),
        refunded=credits_text(report.credits_refunded),
        columns=words().enrichment_columns,
    )
