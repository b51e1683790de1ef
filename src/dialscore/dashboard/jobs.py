"""The jobs pages: the user's jobs, one job's summary and contacts, its live progress, its
results as CSV, and deleting it (after a confirmation)."""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, StreamingResponse
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from dialscore.compliance import Rules
from dialscore.dashboard import csvout
from dialscore.dashboard.mapping import who_and_number
from dialscore.dashboard.web import PREFIX, FormUser, PageNotFound, SignedIn, render, sent_once
from dialscore.dashboard.words import words
from dialscore.idempotency import answer_once
from dialscore.jobs import callability, service
from dialscore.jobs.repository import ResultRow
from dialscore.jobs.schemas import TERMINAL_STATES
from dialscore.kit.clock import utcnow
from dialscore.kit.deps import ReadSession, StateDep, WriteSession
from dialscore.kit.envelope import number
from dialscore.kit.errors import BadRequest, NotFound
from dialscore.kit.pagination import MAX_PAGE, PageRequest
from dialscore.models import Job
from dialscore.signin.schemas import WebUser

router = APIRouter()

JOBS_PER_PAGE = 25
CONTACTS_PER_PAGE = 50
REJECTED_SHOWN = 200
SOURCES = ("all", "app", "api")


def _page_number(value: str | None) -> int:
    """The ``page`` of a link, 1 when absent or not a page number: a page of the web app never
    answers a malformed link with an error."""
    try:
        number = int(value or 1)
    except ValueError:
        return 1
    return min(max(number, 1), MAX_PAGE)


async def _own_job(session: AsyncSession, user: WebUser, job_id: str) -> Job:
    """The user's job; anyone else's, or a malformed id, is a page not found (D1)."""
    try:
        return await service.job_of(session, user.principal, job_id)
    except (NotFound, BadRequest):
        raise PageNotFound() from None


# A finished job no longer changes: its summary (one pass over every phone of its contacts,
# 0.3 s for 20,000 contacts on SQLite) is kept for the pages of its contacts that follow.
_SUMMARIES: OrderedDict[str, service.JobSummary] = OrderedDict()
_SUMMARIES_KEPT = 32


async def _summary(session: AsyncSession, job: Job) -> service.JobSummary:
    if job.status not in TERMINAL_STATES:
        return await service.job_summary(session, job)
    summary = _SUMMARIES.get(job.id)
    if summary is None:
        summary = await service.job_summary(session, job)
        _SUMMARIES[job.id] = summary
        while len(_SUMMARIES) > _SUMMARIES_KEPT:
            _SUMMARIES.popitem(last=False)
    _SUMMARIES.move_to_end(job.id)
    return summary


def _progress(job: Job) -> dict[str, Any]:
    return {
        "status": job.status,
        "label": words().job_state(job.status),
        "processed": job.processed_count,
        "total": job.accepted_count,
        "finished": job.status in TERMINAL_STATES,
    }


@router.get("/jobs", response_class=HTMLResponse)
async def list_jobs(request: Request, user: SignedIn, session: ReadSession) -> HTMLResponse:
    source = request.query_params.get("source", "all")
    if source not in SOURCES:
        source = "all"
    page = PageRequest(_page_number(request.query_params.get("page")), JOBS_PER_PAGE)
    jobs, total = await service.list_jobs(session, user.principal, source=source, page=page)
    notices = {"deleted": words().deleting_done, "deleted-again": words().deleting_again}
    return render(
        request,
        "jobs.html",
        user,
        jobs=jobs,
        total=total,
        source=source,
        sources=SOURCES,
        pagination=page.describe(total),
        terminal=TERMINAL_STATES,
        notice=notices.get(request.query_params.get("done", ""), ""),
    )


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
async def show_job(
    request: Request, job_id: str, user: SignedIn, session: ReadSession, state: StateDep
) -> HTMLResponse:
    job = await _own_job(session, user, job_id)
    page = PageRequest(_page_number(request.query_params.get("page")), CONTACTS_PER_PAGE)
    # First: it writes the rows of contacts the worker has not come to yet, which the
    # summary counts (P218).
    contacts, total = await service.job_contacts(state.db, session, user.principal, job.id, page)
    summary = await _summary(session, job)
    # Each phone's call verdict as of this page (P177).
    now = callability.verdict_now()
    verdicts = await callability.with_verdicts(
        session,
        client_id=job.client_id,
        contacts=[callability.shown(c.phones, c.fields, c.best_phone) for c in contacts],
        rules=callability.rules_in_force(state.settings.compliance_rules),
        now=now,
    )
    # Every record of a job was either accepted or left out: its total says how many were.
    left_out = max(0, job.total_count - job.accepted_count)
    # A job from a file keeps the rows it left out (and the mapping that reads them).
    kept = job.upload_mapping is not None
    rejected = await service.rejected_rows(session, job, limit=REJECTED_SHOWN) if kept else []
    return render(
        request,
        "job.html",
        user,
        job=job,
        summary=summary,
        lead_top=max((n for _, n in summary.lead_statuses), default=1),
        phone_top=max((n for _, n in summary.phone_statuses), default=1),
        contacts=contacts,
        verdicts=verdicts,
        now=now,
        pagination=page.describe(total),
        finished=job.status in TERMINAL_STATES,
        progress=_progress(job),
        rejected=[_rejected_row(job, row) for row in rejected],
        left_out=left_out,
        kept=kept,
        # The credits given back when it finished (P202); "" for none.
        refunded=f"{number(job.credits_refunded):,}" if job.credits_refunded else "",
    )


def _rejected_row(job: Job, row: tuple[int, list[str], str]) -> dict[str, Any]:
    """A left-out row as its page lists it: its row in the file (the header is row 1), the
    person and first number as the job's mapping reads them, and why."""
    index, cells, reason = row
    name, number = who_and_number(cells, job.upload_mapping or [])
    return {"row": index + 2, "name": name, "number": number, "reason": reason}


@router.get("/jobs/{job_id}/delete", response_class=HTMLResponse)
async def confirm_delete(
    request: Request, job_id: str, user: SignedIn, session: ReadSession
) -> HTMLResponse:
    job = await _own_job(session, user, job_id)
    return render(request, "job_delete.html", user, job=job, finished=job.status in TERMINAL_STATES)


@router.post("/jobs/{job_id}/delete")
async def delete_job(
    request: Request, job_id: str, user: FormUser, session: WriteSession, state: StateDep
) -> RedirectResponse:
    """Erases the job as the API's DELETE does (P132, P134). The confirmation page's one-time
    token makes the same form sent again say so, rather than answer that no such job exists;
    its stored answer holds nothing of the job."""

    async def erase() -> dict[str, Any]:
        job = await service.erase_job(session, user.principal, job_id, now=utcnow())
        _SUMMARIES.pop(job.id, None)
        return {"deleted": True}

    once = sent_once(await request.form(), user, "app/jobs/delete", state.settings)
    try:
        _, again = await answer_once(session, once, now=utcnow(), answer=erase)
    except (NotFound, BadRequest):
        raise PageNotFound() from None
    done = "deleted-again" if again else "deleted"
    return RedirectResponse(f"{PREFIX}/jobs?done={done}", status_code=303)


@router.get("/jobs/{job_id}/progress")
async def job_progress(job_id: str, user: SignedIn, session: ReadSession) -> JSONResponse:
    try:
        job = await service.job_of(session, user.principal, job_id)
    except (NotFound, BadRequest):
        return JSONResponse({"error": "job not found"}, status_code=404)
    return JSONResponse(_progress(job), headers={"Cache-Control": "no-store"})


def _file_name(job: Job, suffix: str) -> str:
    stem = re.sub(r"\.csv$", "", job.name, flags=re.IGNORECASE)
    ascii_stem = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("_") or "job"
    full = f"{stem} {suffix}.csv"
    ascii_name = f"{ascii_stem}_{suffix.replace(' ', '_')}.csv"
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(full)}"


async def _with_verdicts(
    sessions: async_sessionmaker[AsyncSession], job: Job, rules: Rules
) -> AsyncIterator[list[ResultRow]]:
    """The job's result batches with each phone's call verdict as of the download (P177):
    one instant for the whole file."""
    now = callability.verdict_now()
    async for batch in service.result_batches(sessions, job):
        async with sessions() as session:
            merged = await callability.with_verdicts(
                session,
                client_id=job.client_id,
                contacts=[callability.shown(r.phones, r.fields, r.best_phone) for r in batch],
                rules=rules,
                now=now,
            )
        yield [
            replace(row, phones=done.phones, best_phone=done.best_phone)
            for row, done in zip(batch, merged, strict=True)
        ]


async def _results(
    sessions: async_sessionmaker[AsyncSession], job: Job, crm: bool, rules: Rules
) -> AsyncIterator[bytes]:
    """The CSV's bytes. Its header needs the most phones a contact of the job has, one pass
    over the job: made here, after the response's headers have gone, so that the download
    starts at once. The request's session has ended by now: every read has its own."""
    async with sessions() as session:
        groups = await service.max_phone_count(session, job)
    layout = csvout.Layout(job.upload_columns, max(1, groups), job.upload_mapping, crm)
    rejected = service.rejected_batches(sessions, job) if job.upload_columns else None
    async for chunk in csvout.stream(layout, _with_verdicts(sessions, job, rules), rejected):
        yield chunk


@router.get("/jobs/{job_id}/results.csv", response_model=None)
async def download_results(
    request: Request, job_id: str, user: SignedIn, session: ReadSession, state: StateDep
) -> StreamingResponse | HTMLResponse:
    job = await _own_job(session, user, job_id)
    if job.status not in TERMINAL_STATES:
        return render(request, "job_unfinished.html", user, job=job, status_code=409)
    crm = request.query_params.get("layout") == "crm" and job.upload_mapping is not None
    rules = callability.rules_in_force(state.settings.compliance_rules)
    return StreamingResponse(
        _results(state.db.read, job, crm, rules),
        media_type="text/csv; charset=utf-8",
        headers={
            "Content-Disposition": _file_name(job, "for re-import" if crm else "results"),
            "Cache-Control": "no-store",
        },
    )


@router.get("/jobs/{job_id}/rejected.csv")
async def download_rejected(
    job_id: str, user: SignedIn, session: ReadSession, state: StateDep
) -> StreamingResponse:
    """The rows the job left out, as they were in the file, with a reason column: at any
    time, to fix them and upload them again."""
    job = await _own_job(session, user, job_id)
    if job.upload_columns is None:
        raise PageNotFound()
    return StreamingResponse(
        _rejected(state.db.read, job),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": _file_name(job, "rejected"), "Cache-Control": "no-store"},
    )


async def _rejected(sessions: async_sessionmaker[AsyncSession], job: Job) -> AsyncIterator[bytes]:
    header = [*(job.upload_columns or ()), words().column("rejected_reason")]
    yield csvout.header_line(header)
    async for batch in service.rejected_batches(sessions, job):
        yield csvout.rejected_lines(len(header) - 1, batch)
