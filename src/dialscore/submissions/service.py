"""The submission use case: check each contact by the rules, then put the accepted ones in a
job, charged (D5 to D9)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.accounts.schemas import Principal
from dialscore.jobs import service as jobs
from dialscore.jobs.schemas import Kind, NewContact, OpenedJob
from dialscore.submissions.rules import Rejected, prepare

# D11: the job a version 2 submission creates, by kind and scoring type.
JOB_TYPES: dict[tuple[Kind, str], str] = {
    ("scoring", "lightning"): "lightning_scoring",
    ("scoring", "core"): "core_scoring",
    ("enrichment", "lightning"): "enrich_and_score",
    ("enrichment", "core"): "enrich_and_core",
}


@dataclass(frozen=True)
class Submission:
    """What a submission did: how many records came, the job opened for the accepted ones,
    and each rejected record as it was sent, with its reason."""

    kind: Kind
    total: int
    accepted: int
    opened: OpenedJob
    rejected: list[dict[str, Any]]


async def submit(
    session: AsyncSession,
    *,
    principal: Principal,
    kind: Kind,
    contacts: Sequence[Any],
    scoring_type: str,
    name: str | None,
    now: datetime,
    source: str = "api",
) -> Submission:
    """Accepts the contacts the rules accept into one job of the submission's type (none
    when every record is rejected, P1)."""
    jobs.require_feature(principal.plan, kind, scoring_type)
    results = prepare(kind, list(contacts))
    accepted = [r for r in results if isinstance(r, NewContact)]
    opened = await jobs.create_job(
        session,
        principal=principal,
        kind=kind,
        job_type=JOB_TYPES[(kind, scoring_type)],
        scoring_type=scoring_type,
        name=name,
        total=len(results),
        contacts=accepted,
        now=now,
        reason=f"{kind} submission",
        source=source,
    )
    rejected = [r.record for r in results if isinstance(r, Rejected)]
    return Submission(kind, len(results), len(accepted), opened, rejected)
