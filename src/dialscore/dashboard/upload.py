"""The upload pages of the web app: a contact list sent as CSV, its columns mapped to contact
fields, the cost shown, then one job started through the submission service.

Between steps the upload is kept in the database (``dialscore.uploads``), so that every step
survives a reload and any instance serves the next one."""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import json
import re
from decimal import Decimal
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException

from dialscore.accounts import service as accounts
from dialscore.accounts.schemas import EffectivePlan
from dialscore.config import Settings
from dialscore.dashboard import csvin, upload_summary
from dialscore.dashboard.csvin import UploadError
from dialscore.dashboard.mapping import IGNORE, grouped_choices, mapping_errors
from dialscore.dashboard.upload_summary import SHOWN_ROWS
from dialscore.dashboard.web import (
    PREFIX,
    PageNotFound,
    SignedIn,
    check_form,
    render,
)
from dialscore.jobs import service as jobs
from dialscore.jobs.schemas import MAX_JOB_NAME, Kind
from dialscore.kit.clock import utcnow
from dialscore.kit.deps import AppState, ReadSession, WriteSession, get_state
from dialscore.kit.errors import ApiError
from dialscore.signin.schemas import WebUser
from dialscore.submissions import service as submissions
from dialscore.uploads import service as uploads
from dialscore.uploads.schemas import Upload

router = APIRouter()

FILE_FIELD = "contacts"
KINDS: tuple[Kind, ...] = ("scoring", "enrichment")
TYPES = ("lightning", "core")
# Changes when the kept summary's fields do, so that none kept before is read.
SUMMARY_SHAPE = 2


def file_name(raw: str) -> str:
    """The job name a file's name gives: its last part, without characters a name cannot
    show or store (controls, NUL: P74)."""
    name = "".join(char for char in raw if char.isprintable())
    name = PureWindowsPath(PurePosixPath(name).name).name.strip()
    return name[:MAX_JOB_NAME] or "contacts.csv"


async def _own(session: AsyncSession, user: WebUser, upload_id: str) -> Upload:
    """The user's own upload; anyone else's, or one gone, is not found."""
    found = await uploads.own(
        session, user_id=user.principal.user_id, upload_id=upload_id, now=utcnow()
    )
    if found is None:
        raise PageNotFound()
    return found


async def _waiting(session: AsyncSession, user: WebUser, upload_id: str) -> Upload:
    """A step before the job: the upload must still be waiting for it."""
    upload = await _own(session, user, upload_id)
    if not upload.waiting:
        raise PageNotFound()
    return upload


async def _table(settings: Settings, data: bytes | None) -> csvin.Table:
    """The file read again, off the event loop: a large one takes seconds."""
    if data is None:
        # Its job started meanwhile, which took the file.
        raise PageNotFound()
    return await run_in_threadpool(csvin.read_table, data, max_rows=settings.upload_max_rows)


# -- step 1: the file -------------------------------------------------------------------------


@router.get("/upload", response_class=HTMLResponse)
async def upload_form(request: Request, user: SignedIn) -> HTMLResponse:
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
async def upload_file(request: Request, user: SignedIn, session: WriteSession) -> Response:
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
    upload = await uploads.create(
        session,
        user_id=user.principal.user_id,
        client_id=user.principal.client_id,
        filename=file_name(sent.filename),
        data=data,
        now=utcnow(),
    )
    await session.commit()
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
        unscored=upload_summary.unscored(table, mapping),
        status_code=400 if errors else 200,
    )


@router.get("/upload/{upload_id}/map", response_class=HTMLResponse)
async def mapping_form(
    request: Request, upload_id: str, user: SignedIn, read: ReadSession
) -> HTMLResponse:
    upload = await _waiting(read, user, upload_id)
    table = await _table(get_state(request).settings, await uploads.file_of(read, upload))
    mapping = upload.meta.get("mapping") or csvin.guess_mapping(table.header)
    return _render_mapping(request, user, upload, table, mapping, {})


@router.post("/upload/{upload_id}/map", response_class=HTMLResponse)
async def save_mapping(
    request: Request, upload_id: str, user: SignedIn, read: ReadSession, session: WriteSession
) -> Response:
    form = await request.form()
    _check_csrf(form, user)
    # Read apart from the write, which then holds SQLite's write lock only for the update.
    upload = await _waiting(read, user, upload_id)
    table = await _table(get_state(request).settings, await uploads.file_of(read, upload))
    mapping = [str(form.get(f"column-{i}", IGNORE)) for i in range(len(table.header))]
    errors = mapping_errors(table.header, mapping)
    if errors:
        return _render_mapping(request, user, upload, table, mapping, errors)
    if not await uploads.choose_mapping(session, upload, mapping, now=utcnow()):
        raise PageNotFound()
    await session.commit()
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


async def _summary_of(
    state: AppState, read: AsyncSession, upload: Upload, plan: EffectivePlan, kind: Kind
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
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    found = upload.summaries.get(digest)
    if isinstance(found, dict):
        return found
    table = await _table(state.settings, await uploads.file_of(read, upload))
    summary = await run_in_threadpool(
        upload_summary.summary, table, upload.meta["mapping"], plan, kind
    )
    # Its own short unit of work: the page is a read, and holds no write lock meanwhile.
    async with state.db.unit_of_work() as session:
        await uploads.keep_summary(session, upload, digest, summary)
    return summary


async def _render_action(
    request: Request,
    user: WebUser,
    read: AsyncSession,
    upload: Upload,
    kind: str | None,
    scoring_type: str | None,
    error: str | None = None,
    notice: str | None = None,
) -> HTMLResponse:
    allowed = _allowed(user.principal.plan)
    chosen = _chosen(allowed, kind, scoring_type)
    context: dict[str, Any] = {"upload": upload, "allowed": allowed, "kinds": KINDS}
    offered = [t for t in TYPES if any(t in ts for ts in allowed.values())]
    context |= {"types": offered, "error": error, "notice": notice, "chosen": chosen}
    if chosen is not None:
        state = get_state(request)
        summary = await _summary_of(state, read, upload, user.principal.plan, chosen[0])
        balance = await accounts.current_balance(read, user.principal.client_id)
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
    read: ReadSession,
    kind: str | None = None,
    scoring_type: str | None = None,
) -> Response:
    upload = await _waiting(read, user, upload_id)
    if not upload.meta.get("mapping"):
        return RedirectResponse(f"{PREFIX}/upload/{upload.id}/map", status_code=303)
    return await _render_action(request, user, read, upload, kind, scoring_type)


@router.post("/upload/{upload_id}/start", response_class=HTMLResponse)
async def start_job(
    request: Request, upload_id: str, user: SignedIn, read: ReadSession, session: WriteSession
) -> Response:
    state = get_state(request)
    form = await request.form()
    _check_csrf(form, user)
    upload = await _own(read, user, upload_id)
    if not upload.waiting:
        return RedirectResponse(f"{PREFIX}/upload/{upload.id}/started", status_code=303)
    if not upload.meta.get("mapping"):
        return RedirectResponse(f"{PREFIX}/upload/{upload.id}/map", status_code=303)
    kind, scoring_type = str(form.get("kind", "")), str(form.get("scoring_type", ""))
    chosen = _chosen(_allowed(user.principal.plan), kind, scoring_type)
    if chosen is None or chosen != (kind, scoring_type):
        error = None if chosen is None else "Your plan does not include that choice. "
        error = error and error + "The cost shown is for what it allows; nothing was charged."
        return await _render_action(request, user, read, upload, kind, scoring_type, error)
    if form.get("show") is not None or form.get("quote") != _quote(upload, kind, scoring_type):
        notice = "The cost below is for your new choice. Nothing was charged: check it and "
        notice += "press \u201cStart job\u201d again."
        notice_or_none = None if form.get("show") else notice
        return await _render_action(
            request, user, read, upload, kind, scoring_type, notice=notice_or_none
        )
    # The claim commits on its own, before the job: a second press of the button, on any
    # instance, finds the upload no longer waiting.
    data = await uploads.claim_start(session, upload, now=utcnow())
    await session.commit()
    if data is None:
        return RedirectResponse(f"{PREFIX}/upload/{upload.id}/started", status_code=303)
    try:
        table = await _table(state.settings, data)
        built = await run_in_threadpool(csvin.build_contacts, table, upload.meta["mapping"])
        submission = await submissions.submit(
            session,
            principal=user.principal,
            kind=chosen[0],
            contacts=built.contacts,
            scoring_type=scoring_type,
            name=upload.filename,
            now=utcnow(),
            source="app",
            upload_columns=table.header,
            source_rows=[table.rows[i][: len(table.header)] for i in built.positions],
            rejected_before=len(built.rejected),
        )
        rules = zip(submission.rejected_positions, submission.rejected, strict=True)
        reasons = upload_summary.reasons(built, [(p, str(r["rejectedReason"])) for p, r in rules])
        if submission.opened.job_id is not None:
            # The left-out rows stay with the job: its page and its results list them.
            await jobs.keep_upload(
                session,
                submission.opened.job_id,
                mapping=upload.meta["mapping"],
                rejected=[(i, table.rows[i], reason) for i, reason in reasons.items()],
            )
        rejected = await run_in_threadpool(csvin.rejected_csv, table, reasons) if reasons else None
        # Started with its job, in one transaction: either both are, or neither.
        await uploads.finish_start(
            session,
            upload,
            started={
                "job_id": submission.opened.job_id,
                "accepted": submission.accepted,
                "rows": len(table.rows),
                "delimiter": table.delimiter,
                "rejected": len(reasons),
                "charged": str(submission.opened.charged),
            },
            rejected_csv=rejected,
            now=utcnow(),
        )
        await session.commit()
    except ApiError as exc:
        await _give_back(session, upload)
        return await _render_action(
            request, user, read, upload, kind, scoring_type, error=exc.message
        )
    except BaseException:
        # Even for a request being cancelled: left claimed, the upload could not be started.
        with anyio.CancelScope(shield=True):
            await _give_back(session, upload)
        raise
    if submission.opened.job_id is not None:
        state.wakers.wake("relay")
    if not reasons and submission.opened.job_id is not None:
        return RedirectResponse(f"{PREFIX}/jobs/{submission.opened.job_id}", status_code=303)
    return RedirectResponse(f"{PREFIX}/upload/{upload.id}/started", status_code=303)


async def _give_back(session: AsyncSession, upload: Upload) -> None:
    """Undoes a start that failed and puts the upload back, to be started again."""
    await session.rollback()
    await uploads.give_back(session, upload, now=utcnow())
    await session.commit()


# -- step 4: what was started, and the rejected rows ------------------------------------------


async def _started(read: AsyncSession, user: WebUser, upload_id: str) -> Upload:
    upload = await _own(read, user, upload_id)
    if upload.waiting:
        raise PageNotFound()
    return upload


@router.get("/upload/{upload_id}/started", response_class=HTMLResponse)
async def started(
    request: Request, upload_id: str, user: SignedIn, read: ReadSession
) -> HTMLResponse:
    upload = await _started(read, user, upload_id)
    kept = await uploads.rejected_csv(read, upload)
    rows: list[list[str]] = []
    if kept is not None:
        delimiter = upload.meta.get("delimiter", ",")
        lines = io.StringIO(kept.removeprefix("\ufeff"), newline="")
        rows = list(itertools.islice(csv.reader(lines, delimiter=delimiter), SHOWN_ROWS + 1))
    header, rows = (rows[0], rows[1:]) if rows else ([], [])
    return render(request, "upload_started.html", user, upload=upload, header=header, rows=rows)


@router.get("/upload/{upload_id}/rejected.csv")
async def rejected_rows(
    request: Request, upload_id: str, user: SignedIn, read: ReadSession
) -> Response:
    upload = await _started(read, user, upload_id)
    kept = await uploads.rejected_csv(read, upload)
    if kept is None:
        raise PageNotFound()
    stem = Path(upload.filename).stem or "contacts"
    name = re.sub(r"[^A-Za-z0-9._-]", "_", stem) + "-rejected.csv"
    return Response(
        kept.encode("utf-8"),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )
