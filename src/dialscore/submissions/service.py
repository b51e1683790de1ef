"""Submission use case: validate a request, charge credits, create the job and its contacts."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.accounts import service as accounts
from dialscore.accounts.schemas import EffectivePlan, Principal
from dialscore.enrichment.matching import person_from_fields, record_keys
from dialscore.jobs import repository as jobs_repo
from dialscore.jobs import service as jobs_service
from dialscore.jobs.schemas import TERMINAL_STATES
from dialscore.jobs.service import schedule_processing
from dialscore.kit.clock import new_id
from dialscore.kit.envelope import number
from dialscore.kit.errors import BadRequest, Conflict, Forbidden
from dialscore.models import Job
from dialscore.scoring.engine import unscored
from dialscore.scoring.numbers import enriched_numbers, parse_contact_phones
from dialscore.submissions import repository as repo
from dialscore.submissions.rules import Kind, PreparedContact, Rejected, prepare
from dialscore.submissions.schemas import MAX_CONTACTS, SCORING_TYPES

MAX_NAME_LENGTH = 200
MAX_IDEMPOTENCY_KEY_LENGTH = 255

_JOB_TYPES: dict[tuple[Kind, str], str] = {
    ("scoring", "lightning"): "lightning_scoring",
    ("scoring", "core"): "core_scoring",
    ("enrichment", "lightning"): "enrich_and_score",
    ("enrichment", "core"): "enrich_and_core",
}
_FEATURES: dict[tuple[Kind, str], tuple[str, str]] = {
    ("scoring", "lightning"): ("lightning_scoring", "lightning scoring"),
    ("scoring", "core"): ("core_scoring", "core scoring"),
    ("enrichment", "lightning"): ("enrichment_with_lightning", "enrichment with lightning"),
    ("enrichment", "core"): ("enrichment_with_core", "enrichment with core"),
}


@dataclass(frozen=True)
class SubmissionRequest:
    contacts: list[Any]
    scoring_type: str
    name: str | None


def parse_request(body: Any) -> SubmissionRequest:
    """The request's shape (D7, D8); 400 for anything a client must fix before resending."""
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object with a 'contacts' array")
    contacts = body.get("contacts")
    if contacts is None:
        raise BadRequest("'contacts' is required")
    if not isinstance(contacts, list):
        raise BadRequest("'contacts' must be an array")
    if not contacts:
        raise BadRequest("'contacts' must not be empty")
    if len(contacts) > MAX_CONTACTS:
        raise BadRequest(f"'contacts' has {len(contacts)} elements; at most {MAX_CONTACTS} allowed")
    scoring_type = body.get("scoringType")
    if scoring_type is None:
        scoring_type = "lightning"
    if scoring_type not in SCORING_TYPES:
        raise BadRequest(f"'scoringType' must be one of {', '.join(SCORING_TYPES)}")
    return SubmissionRequest(contacts=contacts, scoring_type=scoring_type, name=parse_name(body))


def parse_name(body: dict[str, Any]) -> str | None:
    """The optional job ``name`` of a request body."""
    name = body.get("name")
    if name is None:
        return None
    if not isinstance(name, str) or not name.strip():
        raise BadRequest("'name' must be a non-empty string")
    if len(name) > MAX_NAME_LENGTH:
        raise BadRequest(f"'name' is longer than {MAX_NAME_LENGTH} characters")
    return name.strip()


def require_feature(plan: EffectivePlan, kind: Kind, scoring_type: str) -> None:
    attribute, label = _FEATURES[(kind, scoring_type)]
    if not getattr(plan, attribute):
        raise Forbidden(f"the '{plan.name}' plan does not include {label}")


def request_hash(body: Any) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class OpenedJob:
    """What accepting contacts into a job did: the job (None when nothing was accepted,
    P1), the charge, the balance after it, and the units charged (phones or contacts)."""

    job_id: str | None
    charged: Decimal
    remaining: Decimal
    units: int


def credits_block(kind: Kind, plan: EffectivePlan, opened: OpenedJob) -> dict[str, Any]:
    base = {
        "creditsCharged": number(opened.charged),
        "creditsRemaining": number(opened.remaining),
    }
    if kind == "scoring":
        return {**base, "costPerPhone": number(plan.cost_per_phone), "phoneCount": opened.units}
    return {
        **base,
        "costPerContact": number(plan.cost_per_contact),
        "contactCount": opened.units,
    }


def _contact_row(
    job: Job,
    ordinal: int,
    contact: PreparedContact,
    now: datetime,
    callback_url: str | None = None,
) -> dict[str, Any]:
    fields = contact.fields
    score = unscored(contact.phones)
    keys = record_keys(person_from_fields(fields))
    return {
        "id": new_id(),
        "job_id": job.id,
        "client_id": job.client_id,
        "user_id": job.user_id,
        "ordinal": ordinal,
        "state": "pending",
        "first_name": fields.get("firstName"),
        "last_name": fields.get("lastName"),
        "email": fields.get("email"),
        "company_account": fields.get("companyAccount"),
        "linkedin_url": fields.get("linkedInUrl"),
        "last_name_key": keys.last_name,
        "email_key": keys.email,
        "linkedin_key": keys.linkedin,
        "company_key": keys.company,
        "first_initial": keys.initial,
        "fields": fields,
        "unmapped_fields": contact.unmapped,
        "phones": score.phones,
        "lead_status": score.lead_status,
        "best_phone": None,
        "callback_url": callback_url,
        "created_at": now,
        "updated_at": now,
    }


async def open_job(
    session: AsyncSession,
    *,
    principal: Principal,
    kind: Kind,
    job_type: str,
    scoring_type: str,
    name: str | None,
    total: int,
    accepted: Sequence[PreparedContact],
    now: datetime,
    source: str = "api",
    callback_urls: Sequence[str | None] | None = None,
) -> OpenedJob:
    """Charges the accepted contacts (D9) and creates their job, its contacts and the
    message that starts processing, in the caller's transaction; no job when none is
    accepted. ``callback_urls`` (version 1) gives each accepted contact's callback URL."""
    plan = principal.plan
    if kind == "scoring":
        units = sum(c.billable_phones for c in accepted)
        cost = plan.cost_per_phone * units
    else:
        units = len(accepted)
        cost = plan.cost_per_contact * units
    if not accepted:
        remaining = await accounts.current_balance(session, principal.client_id)
        return OpenedJob(None, Decimal(0), remaining, units)
    urls = list(callback_urls) if callback_urls is not None else [None] * len(accepted)
    job = Job(
        id=new_id(),
        client_id=principal.client_id,
        user_id=principal.user_id,
        job_type=job_type,
        scoring_type=scoring_type,
        name=name or f"{job_type} {now.strftime('%Y-%m-%dT%H:%M:%SZ')}",
        source=source,
        status="Init",
        total_count=total,
        accepted_count=len(accepted),
        processed_count=0,
        enrichment_rejected_count=0,
        created_at=now,
        updated_at=now,
    )
    remaining = await accounts.charge(
        session,
        client_id=principal.client_id,
        user_id=principal.user_id,
        amount=cost,
        reason=f"{kind} submission",
        job_id=job.id,
    )
    jobs_repo.add_job(session, job)
    await session.flush()
    await jobs_repo.insert_contacts(
        session,
        [
            _contact_row(job, i, c, now, url)
            for i, (c, url) in enumerate(zip(accepted, urls, strict=True), start=1)
        ],
    )
    schedule_processing(session, job.id)
    return OpenedJob(job.id, cost, remaining, units)


async def replay(
    session: AsyncSession,
    *,
    principal: Principal,
    key: str,
    body_hash: str,
    now: datetime,
    ttl: timedelta,
) -> dict[str, Any] | None:
    """The stored response of an earlier request with this Idempotency-Key, if still valid."""
    record = await repo.find_idempotent(session, user_id=principal.user_id, key=key)
    if record is None:
        return None
    if record.created_at <= now - ttl:
        await repo.drop_idempotent(session, record.id)
        await session.flush()
        return None
    if record.request_hash != body_hash:
        raise Conflict("this Idempotency-Key was already used with a different request")
    return record.response


async def submit(
    session: AsyncSession,
    *,
    principal: Principal,
    kind: Kind,
    body: Any,
    now: datetime,
    idempotency_key: str | None = None,
    idempotency_ttl: timedelta = timedelta(hours=24),
    source: str = "api",
) -> tuple[dict[str, Any], bool]:
    """Accepts a submission; the response body and whether it replays an earlier one."""
    request = parse_request(body)
    require_feature(principal.plan, kind, request.scoring_type)
    body_hash = request_hash(body)
    if idempotency_key is not None:
        if not idempotency_key.strip() or len(idempotency_key) > MAX_IDEMPOTENCY_KEY_LENGTH:
            raise BadRequest(
                f"Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY_LENGTH} characters"
            )
        stored = await replay(
            session,
            principal=principal,
            key=idempotency_key,
            body_hash=body_hash,
            now=now,
            ttl=idempotency_ttl,
        )
        if stored is not None:
            return stored, True

    results = prepare(kind, request.contacts)
    accepted = [r for r in results if isinstance(r, PreparedContact)]
    rejected = [r.record for r in results if isinstance(r, Rejected)]
    opened = await open_job(
        session,
        principal=principal,
        kind=kind,
        job_type=_JOB_TYPES[(kind, request.scoring_type)],
        scoring_type=request.scoring_type,
        name=request.name,
        total=len(results),
        accepted=accepted,
        now=now,
        source=source,
    )
    response = {
        "data": {
            "totalRecordCount": len(results),
            "acceptedRecordCount": len(accepted),
            "jobId": opened.job_id,
        },
        "credits": credits_block(kind, principal.plan, opened),
        "error": (
            {"rejectedRecordCount": len(rejected), "records": rejected} if rejected else None
        ),
    }
    if idempotency_key is not None:
        repo.save_idempotent(
            session,
            user_id=principal.user_id,
            key=idempotency_key,
            request_hash=body_hash,
            response=response,
            now=now,
        )
    return response, False


async def rescore(
    session: AsyncSession, *, principal: Principal, job_id: str, now: datetime, name: str | None
) -> dict[str, Any]:
    """A ``rescoring`` job scoring the scored contacts of a finished job again, with the
    evidence known now; charged like a scoring submission of the same numbers."""
    source = await jobs_service.job_of(session, principal, job_id)
    if source.status not in TERMINAL_STATES:
        raise Conflict("the job is still being processed: rescore it once it has finished")
    require_feature(principal.plan, "scoring", source.scoring_type)
    contacts = await jobs_repo.scored_contacts(session, source.id)
    if not contacts:
        raise BadRequest("the job has no scored contacts to rescore")
    parsed = [
        parse_contact_phones(dict(c.fields), enriched_numbers(c.phones, c.enriched_types))
        for c in contacts
    ]
    units = sum(len({p.e164 for p in phones if p.e164 is not None}) for phones in parsed)
    plan = principal.plan
    cost = plan.cost_per_phone * units
    job_type = "rescoring"
    job = Job(
        id=new_id(),
        client_id=principal.client_id,
        user_id=principal.user_id,
        job_type=job_type,
        scoring_type=source.scoring_type,
        name=name or f"{job_type} {now.strftime('%Y-%m-%dT%H:%M:%SZ')}",
        source="api",
        status="Init",
        total_count=len(contacts),
        accepted_count=len(contacts),
        processed_count=0,
        enrichment_rejected_count=0,
        created_at=now,
        updated_at=now,
    )
    remaining = await accounts.charge(
        session,
        client_id=principal.client_id,
        user_id=principal.user_id,
        amount=cost,
        reason=f"rescoring of job {source.id}",
        job_id=job.id,
    )
    jobs_repo.add_job(session, job)
    await session.flush()
    rows = []
    for ordinal, (contact, phones) in enumerate(zip(contacts, parsed, strict=True), start=1):
        score = unscored(phones)
        rows.append(
            {
                "id": new_id(),
                "job_id": job.id,
                "client_id": job.client_id,
                "user_id": job.user_id,
                "ordinal": ordinal,
                "state": "pending",
                "first_name": contact.first_name,
                "last_name": contact.last_name,
                "email": contact.email,
                "company_account": contact.company_account,
                "linkedin_url": contact.linkedin_url,
                "last_name_key": contact.last_name_key,
                "email_key": contact.email_key,
                "linkedin_key": contact.linkedin_key,
                "company_key": contact.company_key,
                "first_initial": contact.first_initial,
                "fields": contact.fields,
                "unmapped_fields": contact.unmapped_fields,
                "phones": score.phones,
                "lead_status": score.lead_status,
                "best_phone": None,
                "enrichment_contact_id": contact.enrichment_contact_id,
                "enriched_types": contact.enriched_types,
                "created_at": now,
                "updated_at": now,
            }
        )
    await jobs_repo.insert_contacts(session, rows)
    schedule_processing(session, job.id)
    return {
        "data": {
            "totalRecordCount": len(contacts),
            "acceptedRecordCount": len(contacts),
            "jobId": job.id,
        },
        "credits": credits_block("scoring", plan, OpenedJob(job.id, cost, remaining, units)),
        "error": None,
    }
