"""The score report's answer: its models (the contract) and the presenter of a report."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from dialscore.accuracy.report import ScoreReport
from dialscore.kit.clock import isoformat
from dialscore.kit.envelope import Timestamp

# Rates are shares of calls: four decimals tell 0.01 % apart, more is noise.
RATE_DECIMALS = 4

Rate = float | None


def _rate(value: float | None) -> float | None:
    return None if value is None else round(value, RATE_DECIMALS)


def present_report(report: ScoreReport) -> dict[str, Any]:
    return {
        "since": isoformat(report.since),
        "calls": report.calls,
        "connects": report.connects,
        "tiers": [
            {
                "tier": t.tier,
                "phones": t.phones,
                "calls": t.calls,
                "connects": t.connects,
                "predicted": _rate(t.predicted),
                "observed": _rate(t.observed),
                "low": _rate(t.interval[0]) if t.interval else None,
                "high": _rate(t.interval[1]) if t.interval else None,
            }
            for t in report.tiers
        ],
        "buckets": [
            {
                "from": b.low,
                "to": b.high,
                "calls": b.calls,
                "connects": b.connects,
                "predicted": _rate(b.predicted),
                "observed": _rate(b.observed),
            }
            for b in report.buckets
        ],
        "auc": _rate(report.auc),
    }


class TierReport(BaseModel):
    tier: Literal["p1", "p2", "p3", "na"] = Field(
        description="The tier of the phones' status at scoring time: `p1 - sf` is `p1`, every "
        "`na…` is `na`"
    )
    phones: int = Field(
        ge=0, description="Numbers of this tier at least one counted call was made to"
    )
    calls: int = Field(ge=0, description="Calls counted for this tier")
    connects: int = Field(ge=0, description="Of them, `connected` or `right_party`")
    predicted: Rate = Field(
        ge=0,
        le=1,
        description="Mean connectRate at scoring time over the calls (0 for na); null without "
        "calls",
    )
    observed: Rate = Field(ge=0, le=1, description="connects / calls; null without calls")
    low: Rate = Field(ge=0, le=1, description="Lower end of the 95 % Wilson interval of observed")
    high: Rate = Field(ge=0, le=1, description="Upper end of the 95 % Wilson interval of observed")


class BucketReport(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    from_: float = Field(alias="from", ge=0, le=1, description="The band's lowest connectRate")
    to: float = Field(
        ge=0, le=1, description="The band's end, not included but for the last band's 1.0"
    )
    calls: int = Field(ge=0)
    connects: int = Field(ge=0)
    predicted: Rate = Field(ge=0, le=1, description="Mean connectRate over the calls")
    observed: Rate = Field(ge=0, le=1, description="connects / calls")


class ScoringReportData(BaseModel):
    since: Timestamp = Field(description="Calls made from this time on were counted")
    calls: int = Field(
        ge=0, description="Calls counted: made since then to a number scored before them"
    )
    connects: int = Field(ge=0, description="Of them, `connected` or `right_party`")
    tiers: list[TierReport] = Field(description="p1, p2, p3 and na, always all four")
    buckets: list[BucketReport] = Field(
        description="The ten bands of connectRate, 0-0.1 to 0.9-1.0, always all ten"
    )
    auc: Rate = Field(
        ge=0,
        le=1,
        description="Area under the ROC curve of connectRate against connects (ties count "
        "half); null under 20 calls or when all calls or none connected",
    )


class ScoringReportResponse(BaseModel):
    data: ScoringReportData
