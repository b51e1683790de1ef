"""Route of /account/scoring-report: how the scores held up against the calls reported."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from dialscore.accounts.dependencies import CurrentPrincipal
from dialscore.accuracy import examples, service
from dialscore.accuracy.schemas import ScoringReportResponse, present_report
from dialscore.kit.clock import utcnow
from dialscore.kit.deps import ReadSession
from dialscore.kit.openapi import api_responses

router = APIRouter(prefix="/account", tags=["account"])


@router.get(
    "/scoring-report",
    response_model=ScoringReportResponse,
    responses=api_responses(400, example=examples.REPORT_ANSWER),
    summary="How your scored numbers did in the calls you reported after scoring them",
)
async def get_scoring_report(
    principal: CurrentPrincipal,
    session: ReadSession,
    since: Annotated[
        str | None,
        Query(
            description="Count the calls made from this time on: an ISO 8601 date (midnight "
            "UTC) or date-time with a time zone; default 90 days ago",
            json_schema_extra={"examples": ["2026-08-22", "2026-08-22T09:30:00Z"]},
        ),
    ] = None,
) -> dict[str, Any]:
    """Extension (P110, P111): each call your client reported is set against the most recent
    score of its number before the call, among your scored contacts; calls to numbers not
    yet scored then count nowhere. Per tier, the calls and connects (`connected`,
    `right_party`), the mean connectRate promised and the rate observed with its 95 % Wilson
    interval; per band of connectRate the same; and how well connectRate ranks the calls
    that connected (area under the ROC curve). The web app's Score accuracy page shows the
    same figures."""
    report = await service.scoring_report(
        session, principal, since=service.parse_since(since, utcnow())
    )
    return {"data": present_report(report)}
