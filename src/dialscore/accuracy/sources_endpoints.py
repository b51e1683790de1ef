"""Route of /account/enrichment-report: what each enrichment source found, cost and brought
in calls, for the client's enrichment jobs of a period (P205)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from dialscore.accounts.dependencies import CurrentPrincipal
from dialscore.accuracy import sources_service as service
from dialscore.accuracy.sources_schemas import (
    REPORT_ANSWER,
    EnrichmentReportResponse,
    present_sources_report,
)
from dialscore.kit.clock import utcnow
from dialscore.kit.deps import ReadSession, StateDep
from dialscore.kit.openapi import api_responses

router = APIRouter(prefix="/account", tags=["account"])

_FORMS = "an ISO 8601 date (midnight UTC) or date-time with a time zone"


@router.get(
    "/enrichment-report",
    response_model=EnrichmentReportResponse,
    responses=api_responses(400, example=REPORT_ANSWER),
    summary="What each enrichment source found, cost and brought in calls",
)
async def get_enrichment_report(
    principal: CurrentPrincipal,
    session: ReadSession,
    state: StateDep,
    since: Annotated[
        str | None,
        Query(
            description=f"Count the enrichment jobs created from this time on: {_FORMS}; "
            "default 30 days before until",
            json_schema_extra={"examples": ["2026-11-01", "2026-11-01T00:00:00Z"]},
        ),
    ] = None,
    until: Annotated[
        str | None,
        Query(
            description=f"... and before this time (not included): {_FORMS}; default now. "
            "At most 366 days after since",
            json_schema_extra={"examples": ["2026-12-01", "2026-12-01T00:00:00Z"]},
        ),
    ] = None,
) -> dict[str, Any]:
    """Extension (P205): for your client's enrichment jobs created in the period, per source
    (`history`, `directory`, each provider; a provider called with your own API key apart):
    the contacts it was asked about and found a new number for, the credits the contacts it
    is named for were charged and refunded, the numbers it added to them and how the calls
    you reported to those numbers went (connects are `connected` and `right_party`). Then
    the contacts no source found a number for with their refunds, the period's totals, and
    the order your sources are tried in now. The web app's Enrichment sources page shows the
    same figures."""
    start, end = service.parse_period(since, until, utcnow())
    report = await service.sources_report(
        session, state.settings, client_id=principal.client_id, since=start, until=end
    )
    return {"data": present_sources_report(report)}
