"""The score accuracy page: how the user's scored numbers did in the calls reported after
scoring them, per level and per band of promised rate, with the figures of the score report's
service (``GET /account/scoring-report``), put in words and drawn."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from dialscore.accuracy import service
from dialscore.accuracy.report import MIN_CALLS, BucketFigures, ScoreReport, TierFigures
from dialscore.dashboard.web import SignedIn, render
from dialscore.dashboard.words import words
from dialscore.kit.clock import utcnow
from dialscore.kit.deps import StateDep

router = APIRouter()

PERIODS = (30, 90, 365)
DEFAULT_PERIOD = 90

# The reliability chart, in the units of its viewBox: a square plot with room for the axes'
# labels on the left and below.
PLOT_LEFT = 56
PLOT_TOP = 12
PLOT_SIZE = 260
VIEW_WIDTH = PLOT_LEFT + PLOT_SIZE + 16
VIEW_HEIGHT = PLOT_TOP + PLOT_SIZE + 52


# Between the two ends of a range of percentages.
EN_DASH = "\u2013"
# Between a figure and its %, so that a line never breaks between them.
PERCENT = "\u00a0%"


def percent(share: float) -> str:
    """A share as people read it: 0.2 as "20 %", 0.0213 as "2.1 %"."""
    return f"{_figure(share)}{PERCENT}"


def _figure(share: float) -> str:
    return f"{share * 100:.1f}".removesuffix(".0")


def band_text(band: tuple[float, float]) -> str:
    """A tier's band: "20 % or more", "4 to 20 %" (with an en dash), "under 4 %"."""
    low, high = band
    if low <= 0:
        return f"under {percent(high)}"
    if high >= 1:
        return f"{percent(low)} or more"
    return f"{_figure(low)}{EN_DASH}{percent(high)}"


def _interval_text(figures: TierFigures | None) -> str:
    if figures is None or figures.interval is None:
        return ""
    low, high = figures.interval
    return f"{_figure(low)}{EN_DASH}{percent(high)}"


def verdict(figures: TierFigures) -> str:
    """What the calls say of a tier, in a sentence or two."""
    term = words().tiers[figures.tier]
    name = f"{term.label} — {figures.tier}"
    standing = figures.standing()
    if standing is None:
        return f"No calls to {name} numbers yet in this period."
    plural = "s" if figures.calls != 1 else ""
    if figures.calls < MIN_CALLS:
        return (
            f"{name} numbers: {figures.calls} call{plural} so far, too few to judge "
            f"({MIN_CALLS} or more are needed)."
        )
    assert figures.observed is not None
    said = (
        f"{name} numbers reached the person on {percent(figures.observed)} of "
        f"{figures.calls:,} calls"
    )
    band = band_text(figures.band)
    if standing == "within":
        return f"{said}, within its promise of {band}."
    if not figures.beyond_chance():
        return (
            f"{said}, {standing} its promise of {band}; with this many calls that may still be "
            f"chance (95 % range {_interval_text(figures)})."
        )
    if standing == "below":
        # Dialling a higher level first is advice only below the top one.
        first = "Dial higher levels first, and keep" if figures.tier != "p1" else "Keep"
        meaning = (
            "calls to these numbers connect less often than their scores say, more than "
            f"chance explains (95 % range {{range}}). {first} reporting call outcomes: new "
            "scores and “Score again” learn from them."
        )
    elif figures.tier == "na":
        meaning = (
            "some numbers scored as not reachable do reach people, more than chance explains "
            "(95 % range {range}). Keep reporting those calls: new scores and “Score again” "
            "learn from them."
        )
    else:
        meaning = (
            "calls to these numbers connect more often than their scores say, more than "
            "chance explains (95 % range {range}): they are worth dialling sooner than their "
            "level suggests."
        )
    meaning = meaning.format(range=_interval_text(figures))
    return f"{said}, {standing} its promise of {band}: {meaning}"


@dataclass(frozen=True)
class TierRow:
    code: str
    label: str
    sentence: str
    band: str
    figures: TierFigures
    predicted: str
    observed: str
    interval: str
    verdict: str


@dataclass(frozen=True)
class BucketRow:
    band: str
    figures: BucketFigures
    predicted: str
    observed: str


@dataclass(frozen=True)
class Tick:
    """A gridline value: where it crosses each axis, and its label."""

    x: float
    y: float
    label: str


@dataclass(frozen=True)
class ChartPoint:
    x: float
    y: float
    title: str


@dataclass(frozen=True)
class Chart:
    """The reliability chart: bands' promised rate (across) against their observed rate (up),
    on a square scale from 0 to ``maximum``, with the diagonal where the two are equal."""

    maximum: float
    ticks: list[Tick]
    points: list[ChartPoint]
    line: str  # the points joined, as an SVG polyline's points

    width: int = VIEW_WIDTH
    height: int = VIEW_HEIGHT
    left: int = PLOT_LEFT
    plot_top: int = PLOT_TOP
    size: int = PLOT_SIZE

    @property
    def bottom(self) -> int:
        return PLOT_TOP + PLOT_SIZE

    @property
    def right(self) -> int:
        return PLOT_LEFT + PLOT_SIZE


def _bucket_band(figures: BucketFigures) -> str:
    return f"{_figure(figures.low)}{EN_DASH}{percent(figures.high)}"


def chart(report: ScoreReport) -> Chart | None:
    """The chart of the bands with calls; None when no band has any."""
    called = [b for b in report.buckets if b.calls and b.predicted is not None]
    if not called:
        return None
    highest = max(max(b.high, b.observed or 0.0) for b in called)
    maximum = min(1.0, max(0.1, math.ceil(round(highest * 10, 6)) / 10))
    scale = PLOT_SIZE / maximum

    def across(value: float) -> float:
        return round(PLOT_LEFT + value * scale, 1)

    def up(value: float) -> float:
        return round(PLOT_TOP + PLOT_SIZE - value * scale, 1)

    steps = round(maximum * 10)
    ticks = [Tick(across(i / 10), up(i / 10), percent(i / 10)) for i in range(steps + 1)]
    points = [
        ChartPoint(
            across(b.predicted or 0.0),
            up(b.observed or 0.0),
            f"Scores {_bucket_band(b)}: promised {percent(b.predicted or 0.0)} on average, "
            f"reached the person on {percent(b.observed or 0.0)} of {b.calls:,} calls",
        )
        for b in called
    ]
    line = " ".join(f"{p.x},{p.y}" for p in points)
    return Chart(maximum, ticks, points, line)


def _tier_row(figures: TierFigures) -> TierRow:
    term = words().tiers[figures.tier]
    return TierRow(
        code=figures.tier,
        label=term.label,
        sentence=term.sentence,
        band=band_text(figures.band),
        figures=figures,
        predicted="" if figures.predicted is None else percent(figures.predicted),
        observed="" if figures.observed is None else percent(figures.observed),
        interval=_interval_text(figures),
        verdict=verdict(figures),
    )


def _bucket_row(figures: BucketFigures) -> BucketRow:
    return BucketRow(
        band=_bucket_band(figures),
        figures=figures,
        predicted="" if figures.predicted is None else percent(figures.predicted),
        observed="" if figures.observed is None else percent(figures.observed),
    )


def _period(value: str | None) -> int:
    """The ``days`` of the period form; the default for anything it does not offer, as a
    page of the web app never answers a link typed wrong with an error."""
    return int(value) if value and value.isdigit() and int(value) in PERIODS else DEFAULT_PERIOD


@router.get("/accuracy", response_class=HTMLResponse)
async def accuracy(
    request: Request, state: StateDep, user: SignedIn, days: str | None = None
) -> HTMLResponse:
    period = _period(days)
    since = utcnow() - timedelta(days=period)
    async with state.db.read() as session:
        report = await service.scoring_report(session, user.principal, since=since)
    return render(
        request,
        "accuracy.html",
        user,
        period=period,
        periods=PERIODS,
        report=report,
        enough=report.calls >= MIN_CALLS,
        min_calls=MIN_CALLS,
        observed="" if not report.calls else percent(report.connects / report.calls),
        auc="" if report.auc is None else percent(report.auc),
        tiers=[_tier_row(t) for t in report.tiers],
        buckets=[_bucket_row(b) for b in report.buckets],
        chart=chart(report),
    )
