"""The upload pages of the web app: a contact list sent as CSV, its columns mapped to contact
fields, the cost shown, then one job started through the submission service.

Between steps the file is kept on disk (``upload_files``), so that every step survives a
reload."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import itertools
import json
import re
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException

from dialscore.accounts import service as accounts
from dialscore.accounts.schemas import EffectivePlan
from dialscore.config import Settings
from dialscore.dashboard import csvin
from dialscore.dashboard import upload_files as store
from dialscore.dashboard.csvin import UploadError
from dialscore.dashboard.mapping import IGNORE, grouped_choices, mapping_errors, who_and_number
from dialscore.dashboard.upload_files import Upload
from dialscore.dashboard.web import (
    PREFIX,
    PageNotFound,
    SignedIn,
    check_form,
    render,
)
from dialscore.dashboard.words import words
from dialscore.jobs import service as jobs
from dialscore.jobs.schemas import Kind
from dialscore.kit.clock import utcnow
from dialscore.kit.deps import ReadSession, WriteSession, get_state
from dialscore.kit.errors import ApiError
from dialscore.signin.schemas import WebUser
from dialscore.submissions import service as submissions

router = APIRouter()

FILE_FIELD = "contacts"
PREVIEW_ROWS = 5
SHOWN_ROWS = 200
KINDS: tuple[Kind, ...] = ("scoring", "enrichment")
TYPES = ("lightning", "core")
# Changes when the kept summary's fields do, so that none kept before is read.
SUMMARY_SHAPE = 2


# -- step 1: the file -------------------------------------------------------------------------


@router.get("/upload", response_class=HTMLResponse)
async def upload_form(request: Request, user: SignedIn) -> HTMLResponse:
    store.sweep(store.uploads_root(get_state(request).settings), time.time())
    return render(request, "upload.html", user, error=None, **_limits(request))


def _limits(request: Request) -> dict[str, Any]:
    settings = get_state(request).settings
    return {
        "max_mib": round(settings.upload_max_bytes / (1024 * 1024), 1),
        "max_rows": settings.upload_max_rows,
    }


def _check_csrf(form: Any, user: WebUser) -> None:
    check_form(form, user.csrf_token)


@router.post("/upload", response_class=HTMLResponse)
async def upload_file(request: Request, user: SignedIn) -> Response:
    settings = get_state(request).settings
    limit = settings.upload_max_bytes

    def refused(message: str) -> HTMLResponse:
        return render(
            request, "upload.html", user, error=message, status_code=400, **_limits(request)
        )

    too_large = (
        f"The file is larger than {limit / (1024 * 1024):g} MiB: split it into smaller files."
    )
    try:
        form = await request.form()
    except HTTPException as exc:
        if exc.status_code == 413:
            return refused(too_large)
        raise
    _check_csrf(form, user)
    sent = form.get(FILE_FIELD)
    if not isinstance(sent, UploadFile) or not sent.filename:
        return refused("Choose a CSV file to upload.")
    data = await sent.read(limit + 1)
    if len(data) > limit:
        return refused(too_large)
    try:
        await run_in_threadpool(csvin.read_table, data, max_rows=settings.upload_max_rows)
    except UploadError as exc:
        return refused(str(exc))
    upload = store.create(settings, user, store.file_name(sent.filename), data)
    return RedirectResponse(f"{PREFIX}/upload/{upload.id}/map", status_code=303)


# -- step 2: the mapping ----------------------------------------------------------------------


SAMPLES = 3


def _samples(table: csvin.Table) -> list[list[str]]:
    """Per column, its first few filled cells: what a person looks at to choose."""
    samples: list[list[str]] = [[] for _ in table.header]
    for row in table.rows[:200]:
        for i, cell in enumerate(row[: len(table.header)]):
            if cell.strip() and len(samples[i]) < SAMPLES:
                samples[i].append(cell.strip())
    return samples


def _unscored(table: csvin.Table, mapping: list[str]) -> list[str]:
    """What the page says of each column of numbers that the job would not score."""
    return [
        f"{count:,} number{'s' if count != 1 else ''} in \u201c{name}\u201d will not be "
        "scored: choose a phone for the column to score them."
        for name, count in csvin.unscored_phone_columns(table, mapping)
    ]


def _render_mapping(
    request: Request,
    user: WebUser,
    upload: Upload,
    table: csvin.Table,
    mapping: list[str],
    errors: dict[int, str],
) -> HTMLResponse:
    return render(
        request,
        "upload_map.html",
        user,
        upload=upload,
        table=table,
        columns=list(zip(table.header, mapping, _samples(table), strict=True)),
        choices=grouped_choices(),
        errors=errors,
        unscored=_unscored(table, mapping),
        status_code=400 if errors else 200,
    )


@router.get("/upload/{upload_id}/map", response_class=HTMLResponse)
async def mapping_form(request: Request, upload_id: str, user: SignedIn) -> HTMLResponse:
    settings = get_state(request).settings
    upload = store.open_upload(settings, user, upload_id)
    store.require_waiting(upload)
    table = await upload.table(settings)
    mapping = upload.meta.get("mapping") or csvin.guess_mapping(table.header)
    return _render_mapping(request, user, upload, table, mapping, {})


@router.post("/upload/{upload_id}/map", response_class=HTMLResponse)
async def save_mapping(request: Request, upload_id: str, user: SignedIn) -> Response:
    settings = get_state(request).settings
    form = await request.form()
    _check_csrf(form, user)
    upload = store.open_upload(settings, user, upload_id)
    store.require_waiting(upload)
    table = await upload.table(settings)
    mapping = [str(form.get(f"column-{i}", IGNORE)) for i in range(len(table.header))]
    errors = mapping_errors(table.header, mapping)
    if errors:
        return _render_mapping(request, user, upload, table, mapping, errors)
    upload.meta["mapping"] = mapping
    upload.save()
    return RedirectResponse(f"{PREFIX}/upload/{upload.id}/action", status_code=303)


# -- step 3: the action and its cost ----------------------------------------------------------


def _allowed(plan: EffectivePlan) -> dict[Kind, list[str]]:
    allowed: dict[Kind, list[str]] = {}
    for kind in KINDS:
        for scoring_type in TYPES:
            try:
                jobs.require_feature(plan, kind, scoring_type)
            except ApiError:
                continue
            allowed.setdefault(kind, []).append(scoring_type)
    return allowed


def _chosen(
    allowed: dict[Kind, list[str]], kind: str | None, scoring_type: str | None
) -> tuple[Kind, str] | None:
    if not allowed:
        return None
    chosen: Kind = next((k for k in allowed if k == kind), next(iter(allowed)))
    types = allowed[chosen]
    return chosen, scoring_type if scoring_type in types else types[0]


def _quote(upload: Upload, kind: str, scoring_type: str) -> str:
    """What the shown cost was computed from; starting with another choice shows it again."""
    text = json.dumps([upload.meta["mapping"], kind, scoring_type])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _reasons(built: csvin.Contacts, by_rules: list[tuple[int, str]]) -> dict[int, str]:
    """Every rejected row's reason, by row index: its damage, or the rules' reason for its
    contact (with what was noticed in its cells)."""
    reasons = dict(built.rejected)
    for position, reason in by_rules:
        row = built.positions[position]
        note = built.notes.get(row)
        said = words().rejection(reason)
        reasons[row] = f"{said} ({note})" if note else said
    return dict(sorted(reasons.items()))


def _summary(
    table: csvin.Table, mapping: list[str], plan: EffectivePlan, kind: Kind
) -> dict[str, Any]:
    """What starting would do, as the action page shows it (JSON, kept beside the file)."""
    built = csvin.build_contacts(table, mapping)
    estimate = submissions.estimate(plan, kind, built.contacts)
    reasons = _reasons(built, estimate.rejected)
    warnings = [f for f in built.findings if not f.reject]
    return {
        "accepted": estimate.accepted,
        "phones": estimate.phones,
        "units": estimate.units,
        "cost": str(estimate.cost),
        "rows": len(table.rows),
        "blank_rows": table.blank_rows,
        "rejected": [
            dict(zip(("name", "number"), who_and_number(table.rows[i], mapping), strict=True))
            | {"row": i + 2, "reason": reason}
            for i, reason in list(reasons.items())[:SHOWN_ROWS]
        ],
        "rejected_count": len(reasons),
        "footer": len(table.footer),
        "unscored": _unscored(table, mapping),
        "findings": [dataclasses.asdict(f) for f in warnings[:SHOWN_ROWS]],
        "warning_count": len(warnings),
    }


async def _summary_of(
    settings: Settings, upload: Upload, plan: EffectivePlan, kind: Kind
) -> dict[str, Any]:
    """The summary of an upload, computed off the event loop once per mapping, kind and
    price: a large file takes seconds."""
    key = json.dumps(
        [
            SUMMARY_SHAPE,
            upload.meta["mapping"],
            kind,
            str(plan.cost_per_phone),
            str(plan.cost_per_contact),
        ]
    )
    cached = upload.folder / f"summary-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"
    try:
        found: dict[str, Any] = json.loads(cached.read_text(encoding="utf-8"))
        return found
    except (FileNotFoundError, ValueError):
        pass
    table = await upload.table(settings)
    summary = await run_in_threadpool(_summary, table, upload.meta["mapping"], plan, kind)
    cached.write_text(json.dumps(summary), encoding="utf-8")
    return summary


async def _render_action(
    request: Request,
    user: WebUser,
    session: AsyncSession,
    upload: Upload,
    kind: str | None,
    scoring_type: str | None,
    error: str | None = None,
    notice: str | None = None,
) -> HTMLResponse:
    settings = get_state(request).settings
    allowed = _allowed(user.principal.plan)
    chosen = _chosen(allowed, kind, scoring_type)
    context: dict[str, Any] = {"upload": upload, "allowed": allowed, "kinds": KINDS}
    offered = [t for t in TYPES if any(t in ts for ts in allowed.values())]
    context |= {"types": offered, "error": error, "notice": notice, "chosen": chosen}
    if chosen is not None:
        summary = await _summary_of(settings, upload, user.principal.plan, chosen[0])
        balance = await accounts.current_balance(session, user.principal.client_id)
        cost = Decimal(summary["cost"])
        context |= summary | {
            "credits": lambda value: f"{value.normalize():,f}",
            "cost": cost,
            "balance": balance,
            "short": cost > balance,
            "quote": _quote(upload, *chosen),
        }
    status = 400 if error else 200
    return render(request, "upload_action.html", user, status_code=status, **context)


@router.get("/upload/{upload_id}/action", response_class=HTMLResponse)
async def action_form(
    request: Request,
    upload_id: str,
    user: SignedIn,
    session: ReadSession,
    kind: str | None = None,
    scoring_type: str | None = None,
) -> Response:
    upload = store.open_upload(get_state(request).settings, user, upload_id)
    store.require_waiting(upload)
    if not upload.meta.get("mapping"):
        return RedirectResponse(f"{PREFIX}/upload/{upload.id}/map", status_code=303)
    return await _render_action(request, user, session, upload, kind, scoring_type)


@router.post("/upload/{upload_id}/start", response_class=HTMLResponse)
async def start_job(
    request: Request, upload_id: str, user: SignedIn, session: WriteSession
) -> Response:
    settings = get_state(request).settings
    form = await request.form()
    _check_csrf(form, user)
    upload = store.open_upload(settings, user, upload_id)
    if upload.meta.get("started") or not upload.source.exists():
        return RedirectResponse(f"{PREFIX}/upload/{upload.id}/started", status_code=303)
    if not upload.meta.get("mapping"):
        return RedirectResponse(f"{PREFIX}/upload/{upload.id}/map", status_code=303)
    kind, scoring_type = str(form.get("kind", "")), str(form.get("scoring_type", ""))
    chosen = _chosen(_allowed(user.principal.plan), kind, scoring_type)
    if chosen is None or chosen != (kind, scoring_type):
        error = None if chosen is None else "Your plan does not include that choice. "
        error = error and error + "The cost shown is for what it allows; nothing was charged."
        return await _render_action(request, user, session, upload, kind, scoring_type, error)
    if form.get("show") is not None or form.get("quote") != _quote(upload, kind, scoring_type):
        notice = "The cost below is for your new choice. Nothing was charged: check it and "
        notice += "press \u201cStart job\u201d again."
        notice_or_none = None if form.get("show") else notice
        return await _render_action(
            request, user, session, upload, kind, scoring_type, notice=notice_or_none
        )
    # Taking the file is the claim: a second press of the button finds it gone.
    claimed = upload.folder / "starting.csv"
    try:
        upload.source.rename(claimed)
    except FileNotFoundError:
        return RedirectResponse(f"{PREFIX}/upload/{upload.id}/started", status_code=303)
    try:
        table = await upload.table(settings, claimed)
        built = await run_in_threadpool(csvin.build_contacts, table, upload.meta["mapping"])
        submission = await submissions.submit(
            session,
            principal=user.principal,
            kind=chosen[0],
            contacts=built.contacts,
            scoring_type=scoring_type,
            name=upload.meta["filename"],
            now=utcnow(),
            source="app",
            upload_columns=table.header,
            source_rows=[table.rows[i][: len(table.header)] for i in built.positions],
            rejected_before=len(built.rejected),
        )
        rules = zip(submission.rejected_positions, submission.rejected, strict=True)
        reasons = _reasons(built, [(p, str(r["rejectedReason"])) for p, r in rules])
        if submission.opened.job_id is not None:
            # The left-out rows stay with the job: its page and its results list them.
            await jobs.keep_upload(
                session,
                submission.opened.job_id,
                mapping=upload.meta["mapping"],
                rejected=[(i, table.rows[i], reason) for i, reason in reasons.items()],
            )
        await session.commit()
    except ApiError as exc:
        await session.rollback()
        claimed.rename(upload.source)
        return await _render_action(
            request, user, session, upload, kind, scoring_type, error=exc.message
        )
    except BaseException:
        claimed.rename(upload.source)
        raise
    if submission.opened.job_id is not None:
        get_state(request).wakers.wake("relay")
    upload.rejected.write_text(csvin.rejected_csv(table, reasons), encoding="utf-8")
    upload.meta |= {
        "started": True,
        "job_id": submission.opened.job_id,
        "accepted": submission.accepted,
        "rows": len(table.rows),
        "delimiter": table.delimiter,
        "rejected": len(reasons),
        "charged": str(submission.opened.charged),
    }
    upload.save()
    claimed.unlink(missing_ok=True)
    if not reasons and submission.opened.job_id is not None:
        return RedirectResponse(f"{PREFIX}/jobs/{submission.opened.job_id}", status_code=303)
    return RedirectResponse(f"{PREFIX}/upload/{upload.id}/started", status_code=303)


# -- step 4: what was started, and the rejected rows ------------------------------------------


def _started(request: Request, user: WebUser, upload_id: str) -> Upload:
    upload = store.open_upload(get_state(request).settings, user, upload_id)
    if not upload.meta.get("started") and not (upload.folder / "starting.csv").exists():
        raise PageNotFound()
    return upload


@router.get("/upload/{upload_id}/started", response_class=HTMLResponse)
async def started(request: Request, upload_id: str, user: SignedIn) -> HTMLResponse:
    upload = _started(request, user, upload_id)
    rows: list[list[str]] = []
    if upload.rejected.exists():
        delimiter = upload.meta.get("delimiter", ",")
        with upload.rejected.open(encoding="utf-8-sig", newline="") as file:
            rows = list(itertools.islice(csv.reader(file, delimiter=delimiter), SHOWN_ROWS + 1))
    header, rows = (rows[0], rows[1:]) if rows else ([], [])
    return render(request, "upload_started.html", user, upload=upload, header=header, rows=rows)


@router.get("/upload/{upload_id}/rejected.csv")
async def rejected_rows(request: Request, upload_id: str, user: SignedIn) -> Response:
    upload = _started(request, user, upload_id)
    if not upload.rejected.exists():
        raise PageNotFound()
    stem = Path(upload.meta["filename"]).stem or "contacts"
    name = re.sub(r"[^A-Za-z0-9._-]", "_", stem) + "-rejected.csv"
    return Response(
        upload.rejected.read_bytes(),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )
