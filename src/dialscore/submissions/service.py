"""The submission use case: check each contact by the rules, then put the accepted ones in a
job, charged (D5 to D9)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.accounts.schemas import EffectivePlan, Principal
from dialscore.jobs import service as jobs
from dialscore.jobs.schemas import MAX_CONTACTS, Kind, NewContact, OpenedJob
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
    # Where each rejected record was among the submitted ones (0-based), in order.
    rejected_positions: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Estimate:
    """What submitting some contacts would do, before anything is written or charged."""

    total: int
    accepted: int
    phones: int
    units: int
    cost: Decimal
    rejected: list[tuple[int, str]]
    # Each rejected record as sent, with its reason, as a submission's answer gives them.
    records: list[dict[str, Any]] = field(default_factory=list)


def estimate(plan: EffectivePlan, kind: Kind, contacts: Sequence[Any]) -> Estimate:
    """The rules and the charge of a submission of ``contacts``, run without writing: the
    contacts accepted, their valid distinct phones, the units and credits the job would be
    charged, and each rejected record's position and reason. Pure."""
    results = prepare(kind, list(contacts))
    accepted = [r for r in results if isinstance(r, NewContact)]
    units, cost = jobs.cost_of(plan, kind, accepted)
    rejected = [
        (i, str(r.record["rejectedReason"]))
        for i, r in enumerate(results)
        if isinstance(r, Rejected)
    ]
    phones = sum(c.billable_phones for c in accepted)
    records = [r.record for r in results if isinstance(r, Rejected)]
    return Estimate(len(results), len(accepted), phones, units, cost, rejected, records)


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
    upload_columns: list[str] | None = None,
    source_rows: Sequence[list[str]] | None = None,
    rejected_before: int = 0,
) -> Submission:
    """Accepts the contacts the rules accept into one job of the submission's type (none
    when every record is rejected, P1). A submission from an uploaded file gives the file's
    header and, beside each contact, its row of the file, kept with the job and contact, and
    counts the rows it rejected before the rules (``rejected_before``) in the job's total."""
    jobs.require_feature(principal.plan, kind, scoring_type)
    if len(contacts) > MAX_CONTACTS:
        # Only the web app sends more than a request may hold: its rules take seconds, run
        # off the event loop.
        results = await asyncio.to_thread(prepare, kind, list(contacts))
    else:
        results = prepare(kind, list(contacts))
    accepted = [
        r if source_rows is None else replace(r, source_row=source_rows[i])
        for i, r in enumerate(results)
        if isinstance(r, NewContact)
    ]
    opened = await jobs.create_job(
        session,
        principal=principal,
        kind=kind,
        job_type=JOB_TYPES[(kind, scoring_type)],
        scoring_type=scoring_type,
        name=name,
        total=len(results) + rejected_before,
        contacts=accepted,
        now=now,
        reason=f"{kind} submission",
        source=source,
        upload_columns=upload_columns,
    )
    positions = [i for i, r in enumerate(results) if isinstance(r, Rejected)]
    rejected = [r.record for r in results if isinstance(r, Rejected)]
    return Submission(kind, len(results), len(accepted), opened, rejected, positions)
