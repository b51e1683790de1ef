"""The enrichment sources report as the API answers it (P205): its models (the contract), the
presenter of a report and a realistic answer for the document."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from dialscore.accuracy.schemas import RATE_DECIMALS, Rate
from dialscore.accuracy.sources_report import SourceFigures, SourcesReport
from dialscore.kit.clock import isoformat
from dialscore.kit.envelope import Timestamp, number


def _rate(value: float | None) -> float | None:
    return None if value is None else round(value, RATE_DECIMALS)


def _source(figures: SourceFigures) -> dict[str, Any]:
    return {
        "source": figures.source,
        "ownKey": figures.own_key,
        "tried": figures.tried,
        "hits": figures.hits,
        "hitRate": _rate(figures.hit_rate),
        "named": figures.named,
        "creditsCharged": number(figures.credits_charged),
        "creditsRefunded": number(figures.credits_refunded),
        "numbers": figures.numbers,
        "calls": figures.calls,
        "connects": figures.connects,
        "connectRate": _rate(figures.connect_rate),
    }


def present_sources_report(report: SourcesReport) -> dict[str, Any]:
    return {
        "since": isoformat(report.since),
        "until": isoformat(report.until),
        "enrichmentOrder": list(report.order),
        "sources": [_source(figures) for figures in report.sources],
        "unfound": {
            "contacts": report.unfound_contacts,
            "creditsRefunded": number(report.unfound_refunded),
        },
        "totals": {
            "jobs": report.jobs,
            "contacts": report.contacts,
            "creditsCharged": number(report.credits_charged),
            "creditsRefunded": number(report.credits_refunded),
        },
    }


class SourceReport(BaseModel):
    source: str = Field(
        description="The source's name, as `DIALSCORE_ENRICHMENT_SOURCES` names it: `history` "
        "(your earlier contacts), `directory` (the operator's imported directory), `pdl` "
        "(People Data Labs), `apollo` (Apollo)"
    )
    ownKey: bool = Field(
        description="True for a provider called with your own API key for it (the contacts "
        "it is named for are refunded in full); false for your own data and the operator's key"
    )
    tried: int = Field(ge=0, description="Contacts the source was asked about")
    hits: int = Field(ge=0, description="Of them, contacts it found at least one new number for")
    hitRate: Rate = Field(ge=0, le=1, description="hits / tried; null when tried is 0")
    named: int = Field(
        ge=0,
        description="Contacts the source is named for: the first source that found a new "
        "number for them (one the client pays for before one called with its own key); what "
        "their charge paid for",
    )
    creditsCharged: float = Field(
        ge=0,
        description="What the contacts it is named for were charged: per job, those contacts "
        "times the job's price per contact (its charge over its accepted contacts); an erased "
        "job's count 0",
    )
    creditsRefunded: float = Field(
        ge=0,
        description="Of that, what was given back: all of it on a row with `ownKey` once its "
        "job has finished; 0 otherwise",
    )
    numbers: int = Field(
        ge=0,
        description="Distinct numbers enrichment added to the contacts it is named for, of the "
        "jobs still kept (an erased job's contacts are gone)",
    )
    calls: int = Field(
        ge=0,
        description="Calls you reported to those numbers at or after the contact was scored, "
        "each counted once, for the contact with the number scored last before it",
    )
    connects: int = Field(ge=0, description="Of them, `connected` or `right_party`")
    connectRate: Rate = Field(ge=0, le=1, description="connects / calls; null when calls is 0")


class UnfoundReport(BaseModel):
    contacts: int = Field(ge=0, description="Contacts no source found a new number for")
    creditsRefunded: float = Field(
        ge=0, description="What their refunds (`enrichment refund` in the ledger) gave back"
    )


class SourcesTotals(BaseModel):
    jobs: int = Field(ge=0, description="Enrichment jobs of the period still kept")
    contacts: int = Field(ge=0, description="Their accepted contacts")
    creditsCharged: float = Field(ge=0, description="Their charges at submission")
    creditsRefunded: float = Field(
        ge=0, description="Their refunds: of the contacts not found and of the own-key ones"
    )


class EnrichmentReportData(BaseModel):
    since: Timestamp = Field(description="Jobs created from this time on were counted")
    until: Timestamp = Field(description="... and before this time")
    enrichmentOrder: list[str] = Field(
        description="The sources your enrichment jobs try now, in the order tried"
    )
    sources: list[SourceReport] = Field(
        description="One per source and `ownKey` seen in the period, in `enrichmentOrder`, "
        "then any other source (one no longer tried) by name"
    )
    unfound: UnfoundReport
    totals: SourcesTotals


class EnrichmentReportResponse(BaseModel):
    data: EnrichmentReportData


def _example_source(
    source: str,
    own_key: bool,
    counts: tuple[int, int, int],
    credits: tuple[float, float],
    called: tuple[int, int, int],
) -> dict[str, Any]:
    tried, hits, named = counts
    numbers, calls, connects = called
    return {
        "source": source,
        "ownKey": own_key,
        "tried": tried,
        "hits": hits,
        "hitRate": round(hits / tried, RATE_DECIMALS),
        "named": named,
        "creditsCharged": credits[0],
        "creditsRefunded": credits[1],
        "numbers": numbers,
        "calls": calls,
        "connects": connects,
        "connectRate": round(connects / calls, RATE_DECIMALS) if calls else None,
    }


# 1,200 contacts at 0.1 credits each: 841 found by a source, 359 by none.
REPORT_ANSWER: dict[str, Any] = {
    "data": {
        "since": "2026-11-01T00:00:00Z",
        "until": "2026-12-01T00:00:00Z",
        "enrichmentOrder": ["history", "directory", "pdl", "apollo"],
        "sources": [
            _example_source("history", False, (1200, 312, 312), (31.2, 0), (348, 402, 61)),
            _example_source("directory", False, (888, 190, 190), (19, 0), (214, 233, 27)),
            _example_source("pdl", True, (698, 251, 251), (25.1, 25.1), (301, 288, 44)),
            _example_source("apollo", False, (447, 88, 88), (8.8, 0), (97, 0, 0)),
        ],
        "unfound": {"contacts": 359, "creditsRefunded": 35.9},
        "totals": {"jobs": 6, "contacts": 1200, "creditsCharged": 120, "creditsRefunded": 61},
    }
}
