"""Version 1 use cases, adapted to the version 2 services: a v1 submission is checked by the
same rules, charged and queued by the same code, and processed by the same worker; only its
input and response shapes, its job types and its callbacks are its own."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.accounts.schemas import Principal
from dialscore.kit.errors import BadRequest, NotFound
from dialscore.kit.outbound import RefusedTarget, parse_target, resolve_allowed
from dialscore.submissions import service as submissions
from dialscore.submissions.rules import DUPLICATE, Kind, PreparedContact, Rejected, prepare
from dialscore.v1 import repository as repo
from dialscore.v1.schemas import COMPANY_INFO_FIELDS
from dialscore.webhooks.service import MAX_URL, secret_box

# D11: version 1 jobs; both score with lightning.
JOB_TYPES: dict[Kind, str] = {"scoring": "scoring", "enrichment": "enrichment"}
SCORING_TYPE = "lightning"
CALLBACK_SECRET_PREFIX = "cbsec_"


@dataclass(frozen=True)
class _Adapted:
    """A v1 element as the shared rules read it, with its callback URL; or why it is
    rejected before them."""

    contact: Any
    callback_url: str | None = None
    reason: str | None = None


def _flatten_company_info(element: dict[str, Any]) -> dict[str, Any] | str:
    """The element with ``companyInfo`` spread into the flat company fields (a field the
    element gives itself wins); a reason when ``companyInfo`` is unusable."""
    info = element.get("companyInfo")
    flat = {k: v for k, v in element.items() if k != "companyInfo"}
    if info is None:
        return flat
    if not isinstance(info, dict):
        return "companyInfo must be an object"
    others: dict[str, Any] = {}
    for key, value in info.items():
        if key in COMPANY_INFO_FIELDS:
            if flat.get(key) is None:
                flat[key] = value
        else:
            others[key] = value
    if others:
        # D7: nothing is dropped; unknown company keys stay together in unmappedFields.
        unmapped = flat.get("unmappedFields")
        if unmapped is None:
            flat["unmappedFields"] = {"companyInfo": others}
        elif isinstance(unmapped, dict):
            flat["unmappedFields"] = {**unmapped, "companyInfo": others}
    return flat


async def _callback_reason(
    url: str, allow_private: bool, hosts: dict[tuple[str, int], str | None]
) -> str | None:
    """Why a callback URL is refused, by the rules of webhook URLs (D24); None if allowed.
    ``hosts`` remembers each host's answer, so a request resolves a host once."""
    if len(url) > MAX_URL:
        return f"callbackUrl is longer than {MAX_URL} characters"
    try:
        target = parse_target(url, allow_private=allow_private)
    except RefusedTarget as exc:
        return f"callbackUrl is not allowed: {exc}"
    host = (target.host, target.port)
    if host not in hosts:
        try:
            await resolve_allowed(target, allow_private=allow_private)
            hosts[host] = None
        except RefusedTarget as exc:
            hosts[host] = f"callbackUrl is not allowed: {exc}"
    return hosts[host]


async def adapt(kind: Kind, elements: Sequence[Any], *, allow_private: bool) -> list[_Adapted]:
    """Each v1 element in the shape the shared rules read: ``companyInfo`` flattened
    (enrichment), ``callbackUrl`` taken out and checked like a webhook URL."""
    hosts: dict[tuple[str, int], str | None] = {}
    adapted: list[_Adapted] = []
    for element in elements:
        if not isinstance(element, dict):
            adapted.append(_Adapted(element))
            continue
        flattened = _flatten_company_info(element) if kind == "enrichment" else dict(element)
        if isinstance(flattened, str):
            adapted.append(_Adapted(element, reason=flattened))
            continue
        contact = flattened
        url = contact.pop("callbackUrl", None)
        if url is not None and not isinstance(url, str):
            adapted.append(_Adapted(element, reason="callbackUrl must be a string"))
            continue
        url = url.strip() if url else None
        if url:
            reason = await _callback_reason(url, allow_private, hosts)
            if reason is not None:
                adapted.append(_Adapted(element, reason=reason))
                continue
        adapted.append(_Adapted(contact, callback_url=url or None))
    return adapted


def _parse_body(body: Any) -> submissions.SubmissionRequest:
    """The shared request checks (D7) on the v1 body, which has no ``scoringType``."""
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object with a 'contacts' array")
    shared = {k: body[k] for k in ("contacts", "name") if k in body}
    return submissions.parse_request(shared)


async def submit(
    session: AsyncSession,
    *,
    principal: Principal,
    kind: Kind,
    body: Any,
    now: datetime,
    server_secret: str,
    allow_private: bool,
) -> dict[str, Any]:
    """A v1 submission: accepted contacts become a ``scoring`` or ``enrichment`` job charged
    like version 2 (D9); repeats of an earlier contact are counted in ``duplicateCount``, not
    accepted, not charged and not listed among the rejected records (D5)."""
    request = _parse_body(body)
    submissions.require_feature(principal.plan, kind, SCORING_TYPE)
    # URLs are checked (DNS) before the transaction starts, so no lock waits on a resolver.
    adapted = await adapt(kind, request.contacts, allow_private=allow_private)
    checked = [a for a in adapted if a.reason is None]
    results = iter(prepare(kind, [a.contact for a in checked]))

    accepted: list[PreparedContact] = []
    callback_urls: list[str | None] = []
    rejected: list[dict[str, Any]] = []
    duplicates = 0
    for item, original in zip(adapted, request.contacts, strict=True):
        if item.reason is not None:
            rejected.append({**original, "rejectedReason": item.reason})
            continue
        result = next(results)
        if isinstance(result, PreparedContact):
            accepted.append(result)
            callback_urls.append(item.callback_url)
        elif isinstance(result, Rejected) and result.record["rejectedReason"] == DUPLICATE:
            duplicates += 1
        elif isinstance(original, dict):
            rejected.append({**original, "rejectedReason": result.record["rejectedReason"]})
        else:
            rejected.append(result.record)

    if any(callback_urls):
        await callback_secret(session, user_id=principal.user_id, server_secret=server_secret)
    opened = await submissions.open_job(
        session,
        principal=principal,
        kind=kind,
        job_type=JOB_TYPES[kind],
        scoring_type=SCORING_TYPE,
        name=request.name,
        total=len(request.contacts),
        accepted=accepted,
        now=now,
        callback_urls=callback_urls,
    )
    counts: dict[str, Any] = {
        "totalRecordCount": len(request.contacts),
        "duplicateCount": duplicates,
        "acceptedRecordCount": len(accepted),
        "jobId": opened.job_id,
    }
    return {
        "data": counts,
        "credits": submissions.credits_block(kind, principal.plan, opened),
        "error": {"rejectedRecordCount": len(rejected), "records": rejected} if rejected else None,
    }


async def callback_secret(session: AsyncSession, *, user_id: str, server_secret: str) -> str:
    """The user's callback signing secret, made and stored (sealed) on first use."""
    box = secret_box(server_secret)
    sealed = await repo.sealed_callback_secret(session, user_id)
    if sealed is None:
        if not await repo.user_exists(session, user_id):
            raise NotFound(f"no user with id {user_id}")
        fresh = CALLBACK_SECRET_PREFIX + secrets.token_urlsafe(32)
        await repo.set_callback_secret_if_missing(session, user_id, box.seal(fresh))
        sealed = await repo.sealed_callback_secret(session, user_id)
        assert sealed is not None
    return box.open(sealed)
