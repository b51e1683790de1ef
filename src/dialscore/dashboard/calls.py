"""The call outcomes page: a CSV file of call results, read into the records ``POST /calls``
takes and fed to the same service in chunks within its limit, with each rejected row shown."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from starlette.datastructures import UploadFile

from dialscore.calls import service
from dialscore.calls.schemas import MAX_CALLS
from dialscore.dashboard.csvin import UploadError, decode, detect_delimiter
from dialscore.dashboard.web import FormUser, SignedIn, render, sent_once
from dialscore.idempotency import answer_once
from dialscore.kit.clock import utcnow
from dialscore.kit.deps import StateDep, WriteSession
from dialscore.scoring.evidence import OUTCOMES
from dialscore.signin.schemas import WebUser

router = APIRouter()

MAX_BYTES = 20 * 1024 * 1024
MAX_ROWS = 50_000
# Rejected rows listed on the page; the count says how many there were in all.
SHOWN_REJECTIONS = 1000
SENT_AGAIN = (
    "“{filename}” was already sent from this form: {accepted} of {total} calls were accepted "
    "then. Nothing was recorded again."
)

# The record field each column feeds, by the header's letters and digits in lower case.
_SPELLINGS: dict[str, tuple[str, ...]] = {
    "number": (
        "number",
        "phone",
        "phonenumber",
        "telephone",
        "tel",
        "dialednumber",
        "diallednumber",
        "callednumber",
        "to",
    ),
    "outcome": ("outcome", "result", "calloutcome", "callresult", "disposition", "calldisposition"),
    "calledAt": (
        "time",
        "calledat",
        "calltime",
        "callat",
        "datetime",
        "timestamp",
        "date",
        "calldate",
    ),
    "country": ("country", "countrycode"),
    "contactId": ("contactid",),
    "ivrPath": ("ivrpath", "ivr"),
}
_FIELD_OF = {spelling: name for name, spellings in _SPELLINGS.items() for spelling in spellings}
SHOWN_FIELDS = (("number", "Number"), ("outcome", "Outcome"), ("calledAt", "Time"))


@dataclass(frozen=True)
class CallRow:
    """A data row of the file: its row number as a spreadsheet shows it (the header is row 1)
    and the record it makes."""

    row: int
    record: dict[str, str]


@dataclass(frozen=True)
class CallsFile:
    rows: list[CallRow]
    columns: dict[str, str]  # record field → the header it was read from


@dataclass
class Outcome:
    """What an upload did: rows read, rows accepted, and the rejected ones with reasons."""

    total: int = 0
    accepted: int = 0
    rejected: list[dict[str, Any]] = field(default_factory=list)


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.casefold())


def _called_at(text: str) -> str:
    """A time without a time zone is read as UTC; anything else goes as it was written, for
    the service to judge."""
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        return text
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC).isoformat()
    return text


def read_calls(data: bytes) -> CallsFile:
    """The rows of a call results file, or an ``UploadError`` saying why it cannot be read."""
    if len(data) > MAX_BYTES:
        raise UploadError(f"The file is larger than {MAX_BYTES // (1024 * 1024)} MB.")
    text = decode(data)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=detect_delimiter(text))
    try:
        header = next(reader, None) or []
        indexes: dict[str, int] = {}
        columns: dict[str, str] = {}
        for index, name in enumerate(header):
            known = _FIELD_OF.get(_key(name))
            if known is not None and known not in indexes:
                indexes[known] = index
                columns[known] = name.strip()
        missing = [f for f in ("number", "outcome") if f not in indexes]
        if missing:
            found = ", ".join(f"\u201c{h.strip()}\u201d" for h in header if h.strip()) or "none"
            raise UploadError(
                "The header row needs a column for the number called (such as \u201cNumber\u201d"
                " or \u201cPhone\u201d) and one for the outcome (such as \u201cOutcome\u201d or"
                f" \u201cResult\u201d). Columns found: {found}."
            )
        rows: list[CallRow] = []
        for number, cells in enumerate(reader, start=2):
            if not any(cell.strip() for cell in cells):
                continue
            if len(rows) == MAX_ROWS:
                raise UploadError(
                    f"The file has more than {MAX_ROWS:,} rows: split it into smaller files."
                )
            record = {
                name: cells[index].strip()
                for name, index in indexes.items()
                if index < len(cells) and cells[index].strip()
            }
            rows.append(CallRow(number, record))
    except csv.Error as exc:
        raise UploadError(f"The file is not valid CSV (line {reader.line_num}): {exc}.") from None
    if not rows:
        raise UploadError("The file has a header but no rows of calls.")
    return CallsFile(rows, columns)


def _page(
    request: Request,
    user: WebUser,
    *,
    error: str = "",
    notice: str = "",
    outcome: Outcome | None = None,
    columns: dict[str, str] | None = None,
    filename: str = "",
    status_code: int = 200,
) -> HTMLResponse:
    return render(
        request,
        "calls.html",
        user,
        status_code=status_code,
        outcomes=OUTCOMES,
        error=error,
        notice=notice,
        outcome=outcome,
        columns=columns or {},
        filename=filename,
        shown_fields=SHOWN_FIELDS,
        shown_rejections=SHOWN_REJECTIONS,
    )


@router.get("/calls", response_class=HTMLResponse)
async def calls_form(request: Request, user: SignedIn) -> HTMLResponse:
    return _page(request, user)


@router.post("/calls", response_class=HTMLResponse)
async def upload_calls(
    request: Request, user: FormUser, session: WriteSession, state: StateDep
) -> HTMLResponse:
    form = await request.form()
    sent = form.get("file")
    if not isinstance(sent, UploadFile) or not sent.filename:
        return _page(request, user, error="Choose a CSV file of call results.", status_code=400)
    filename = sent.filename
    try:
        calls = read_calls(await sent.read(MAX_BYTES + 1))
    except UploadError as exc:
        return _page(request, user, error=str(exc), filename=filename, status_code=400)
    now = utcnow()
    outcome = Outcome()

    async def record() -> dict[str, Any]:
        for start in range(0, len(calls.rows), MAX_CALLS):
            chunk = calls.rows[start : start + MAX_CALLS]
            # Each record carries its row number: the service ignores fields it does not know
            # and hands rejected records back as they were sent.
            records = [
                {**row.record, "row": row.row}
                | (
                    {"calledAt": _called_at(row.record["calledAt"])}
                    if "calledAt" in row.record
                    else {}
                )
                for row in chunk
            ]
            report = await service.record_calls(
                session, principal=user.principal, calls=records, now=now
            )
            outcome.total += report.total
            outcome.accepted += report.accepted
            outcome.rejected.extend(report.rejected)
        return {"total": outcome.total, "accepted": outcome.accepted}

    first, again = await answer_once(
        session, sent_once(form, user, "app/calls", state.settings), now=now, answer=record
    )
    if again:
        return _page(request, user, notice=SENT_AGAIN.format(filename=filename, **first))
    by_row = {row.row: row.record for row in calls.rows}
    for rejected in outcome.rejected:
        rejected["sent"] = by_row.get(rejected.get("row", 0), {})
    return _page(request, user, outcome=outcome, columns=calls.columns, filename=filename)
