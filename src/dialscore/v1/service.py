"""Version 1 use cases, adapted to the version 2 services: a v1 submission is checked by the
same rules, charged and queued by the same code, and processed by the same worker; only its
input and response shapes, its job types and its callbacks are its own."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.accounts.schemas import Principal
from dialscore.jobs import service as jobs
from dialscore.jobs.schemas import Kind, NewContact, OpenedJob
from dialscore.kit.errors import NotFound
from dialscore.kit.outbound import (
    MAX_URL,
    RefusedTarget,
    normalise_url,
    parse_target,
    resolve_allowed,
)
from dialscore.submissions.rules import DUPLICATE, Rejected, prepare, rejected_record
from dialscore.v1 import repository as repo
from dialscore.v1.schemas import COMPANY_INFO_FIELDS
from dialscore.webhooks.service import secret_box

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


async def _checked_callback(
    url: str, allow_private: bool, hosts: dict[tuple[str, int], str | None]
) -> tuple[str, str | None]:
    """A callback URL normalised (P75), and why it is refused by the rules of webhook URLs
    (D24), or None if allowed. ``hosts`` remembers each host's answer, so a request resolves
    a host once."""
    if len(url) > MAX_URL:
        return url, f"callbackUrl is longer than {MAX_URL} characters"
    try:
        normalised = normalise_url(url, allow_private=allow_private)
        target = parse_target(normalised, allow_private=allow_private)
    except RefusedTarget as exc:
        return url, f"callbackUrl is not allowed: {exc}"
    host = (target.host, target.port)
    if host not in hosts:
        try:
            await resolve_allowed(target, allow_private=allow_private)
            hosts[host] = None
        except RefusedTarget as exc:
            hosts[host] = f"callbackUrl is not allowed: {exc}"
    return normalised, hosts[host]


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
            url, reason = await _checked_callback(url, allow_private, hosts)
            if reason is not None:
                adapted.append(_Adapted(element, reason=reason))
                continue
        adapted.append(_Adapted(contact, callback_url=url or None))
    return adapted


@dataclass(frozen=True)
class V1Submission:
    """What a version 1 submission did: as a version 2 one, with its repeats counted apart."""

    kind: Kind
    total: int
    duplicates: int
    accepted: int
    opened: OpenedJob
    rejected: list[dict[str, Any]]


async def submit(
    session: AsyncSession,
    *,
    principal: Principal,
    kind: Kind,
    contacts: Sequence[Any],
    name: str | None,
    now: datetime,
    server_secret: str,
    allow_private: bool,
) -> V1Submission:
    """A v1 submission: accepted contacts become a ``scoring`` or ``enrichment`` job charged
    like version 2 (D9); repeats of an earlier contact are counted in ``duplicateCount``, not
    accepted, not charged and not listed among the rejected records (D5)."""
    jobs.require_feature(principal.plan, kind, SCORING_TYPE)
    # URLs are checked (DNS) before the transaction starts, so no lock waits on a resolver.
    adapted = await adapt(kind, contacts, allow_private=allow_private)
    checked = [a for a in adapted if a.reason is None]
    results = iter(prepare(kind, [a.contact for a in checked]))

    accepted: list[NewContact] = []
    rejected: list[dict[str, Any]] = []
    duplicates = 0
    for item, original in zip(adapted, contacts, strict=True):
        if item.reason is not None:
            rejected.append(rejected_record(original, item.reason))
            continue
        result = next(results)
        if isinstance(result, NewContact):
            accepted.append(replace(result, callback_url=item.callback_url))
        elif isinstance(result, Rejected) and result.record["rejectedReason"] == DUPLICATE:
            duplicates += 1
        elif isinstance(original, dict):
            rejected.append(rejected_record(original, result.record["rejectedReason"]))
        else:
            rejected.append(result.record)

    if any(c.callback_url for c in accepted):
        await callback_secret(session, user_id=principal.user_id, server_secret=server_secret)
    opened = await jobs.create_job(
        session,
        principal=principal,
        kind=kind,
        job_type=JOB_TYPES[kind],
        scoring_type=SCORING_TYPE,
        name=name,
        total=len(contacts),
        contacts=accepted,
        now=now,
        reason=f"{kind} submission",
    )
    return V1Submission(kind, len(contacts), duplicates, len(accepted), opened, rejected)


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
