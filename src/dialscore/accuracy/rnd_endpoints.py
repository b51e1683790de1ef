"""Route of /account/reassigned-queries: the client's record of Reassigned Numbers Database
queries, what the safe harbor of 47 CFR 64.1200(m) is shown with (P195)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from dialscore.accounts.dependencies import CurrentPrincipal
from dialscore.accuracy.rnd_schemas import LIST_ANSWER, RndQueriesResponse
from dialscore.accuracy.service import parse_since
from dialscore.kit.clock import utcnow
from dialscore.kit.deps import ReadSession
from dialscore.kit.openapi import api_responses
from dialscore.kit.pagination import LimitQuery, PageQuery, PageRequest
from dialscore.scoring import rnd_record

router = APIRouter(prefix="/account", tags=["account"])


@router.get(
    "/reassigned-queries",
    response_model=RndQueriesResponse,
    responses=api_responses(400, example=LIST_ANSWER),
    summary="List the Reassigned Numbers Database queries made for your contacts",
)
async def list_reassigned_queries(
    principal: CurrentPrincipal,
    session: ReadSession,
    since: Annotated[
        str | None,
        Query(
            description="List the queries asked from this time on: an ISO 8601 date (midnight "
            "UTC) or date-time with a time zone; default 90 days ago",
            json_schema_extra={"examples": ["2026-08-22", "2026-08-22T09:30:00Z"]},
        ),
    ] = None,
    number: Annotated[
        str | None,
        Query(description="Only the queries about this number; without '+' a US number"),
    ] = None,
    page: PageQuery = 1,
    limit: LimitQuery = 100,
) -> dict[str, Any]:
    """Extension (P195): every question your client's scoring jobs put to the FCC Reassigned
    Numbers Database (P190-P193), one per contact, number and consent date, with the answer
    and when it was asked, a page at a time, newest first. A query the database did not
    answer is listed with `answer: none`. Kept when the job is erased: it is the record the
    reassigned-number safe harbor (47 CFR 64.1200(m)) rests on."""
    request = PageRequest(page, limit)
    queries, total = await rnd_record.list_queries(
        session,
        client_id=principal.client_id,
        since=parse_since(since, utcnow()),
        number=number,
        page=request,
    )
    listed = {
        "queries": [rnd_record.present_query(q) for q in queries],
        "pagination": request.describe(total),
    }
    return {"data": listed}
