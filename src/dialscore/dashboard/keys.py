"""The API keys pages of the web app (administrators only): list, create, revoke."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from dialscore.accounts import service as accounts
from dialscore.accounts import team
from dialscore.dashboard.account import credits_text
from dialscore.dashboard.web import PREFIX, Admin, AdminForm, PageNotFound, render, sent_once
from dialscore.idempotency import answer_once
from dialscore.kit.clock import utcnow
from dialscore.kit.deps import ReadSession, StateDep
from dialscore.kit.errors import ApiError, NotFound
from dialscore.signin.schemas import WebUser

router = APIRouter()

SENT_AGAIN = (
    "This form was already sent: the key “{label}” was created then and shown once. Nothing "
    "was created again."
)


def _expiry(text: str, today: date) -> datetime | None:
    """The end (UTC) of the day a key may last be used on; None for a key that never
    expires. ValueError says what is wrong."""
    text = text.strip()
    if not text:
        return None
    try:
        day = date.fromisoformat(text)
    except ValueError:
        raise ValueError("Enter the date as YYYY-MM-DD, or leave it empty.") from None
    if day < today:
        raise ValueError("The expiry date must be today or later.")
    return datetime.combine(day + timedelta(days=1), time(), tzinfo=UTC)


def _monthly_limit(text: str) -> Decimal | None:
    """A key's monthly credit limit as typed; None for no limit. ValueError says what is
    wrong."""
    text = text.strip().replace(",", "")
    if not text:
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise ValueError("Enter a number of credits, such as 500, or leave it empty.") from None
    try:
        return accounts.check_monthly_limit(value)
    except ApiError as exc:
        raise ValueError(exc.message[:1].upper() + exc.message[1:] + ".") from None


def spending(key: team.KeyView) -> str:
    """What a key spent this month, in words: "12.5 of 500 credits" or "12.5 credits"."""
    spent = credits_text(key.spent_this_month)
    if key.monthly_credit_limit is None:
        return f"{spent} credits (no limit)"
    return f"{spent} of {credits_text(key.monthly_credit_limit)} credits"


async def _keys_page(
    request: Request,
    state: StateDep,
    user: WebUser,
    *,
    status_code: int = 200,
    **context: object,
) -> HTMLResponse:
    async with state.db.read() as session:
        keys = await team.list_keys(session, client_id=user.principal.client_id, now=utcnow())
        users = await team.list_users(session, client_id=user.principal.client_id)
    context.setdefault("form", _blank_form(user))
    context.setdefault("errors", {})
    return render(
        request,
        "keys.html",
        user,
        status_code=status_code,
        keys=[(key, spending(key)) for key in keys],
        owners=[u for u in users if u.deactivated_at is None],
        today=utcnow().date().isoformat(),
        **context,
    )


def _blank_form(user: WebUser) -> dict[str, str]:
    return {"label": "", "owner": user.principal.user_id, "expires": "", "monthly_limit": ""}


@router.get("/keys", response_class=HTMLResponse)
async def list_keys(
    request: Request, state: StateDep, user: Admin, revoked: str | None = None
) -> HTMLResponse:
    notice = "The key was revoked: it answers 401 from now on." if revoked else ""
    return await _keys_page(request, state, user, notice=notice)


@router.post("/keys", response_class=HTMLResponse)
async def create_key(
    request: Request,
    state: StateDep,
    user: AdminForm,
    label: Annotated[str, Form()] = "",
    owner: Annotated[str, Form()] = "",
    expires: Annotated[str, Form()] = "",
    monthly_limit: Annotated[str, Form()] = "",
) -> HTMLResponse:
    owner = owner or user.principal.user_id
    form = {"label": label, "owner": owner, "expires": expires, "monthly_limit": monthly_limit}
    errors: dict[str, str] = {}
    expires_at: datetime | None = None
    limit: Decimal | None = None
    try:
        limit = _monthly_limit(monthly_limit)
    except ValueError as exc:
        errors["monthly_limit"] = str(exc)
    if not label.strip():
        errors["label"] = "Give the key a label, such as the system that will use it."
    elif len(label.strip()) > accounts.MAX_LABEL_LENGTH:
        errors["label"] = f"Keep the label to {accounts.MAX_LABEL_LENGTH} characters."
    try:
        expires_at = _expiry(expires, utcnow().date())
    except ValueError as exc:
        errors["expires"] = str(exc)
    if not errors:
        once = sent_once(await request.form(), user, "app/keys", state.settings)
        made: list[tuple[accounts.CreatedKey, str]] = []
        async with state.db.write() as session:

            async def create() -> dict[str, Any]:
                owner_user = await team.client_user(
                    session, client_id=user.principal.client_id, user_id=owner
                )
                if owner_user.deactivated_at is not None:
                    raise NotFound("deactivated")
                created = await accounts.create_key(
                    session,
                    user_id=owner_user.id,
                    secret=state.settings.resolved_secret_key,
                    expires_at=expires_at,
                    label=label,
                    monthly_credit_limit=limit,
                )
                made.append((created, owner_user.email))
                return {"label": label.strip()}

            try:
                first, again = await answer_once(session, once, now=utcnow(), answer=create)
            except NotFound:
                errors["owner"] = "Choose an active user of your team."
            except ApiError as exc:
                errors["label"] = exc.message[:1].upper() + exc.message[1:] + "."
            else:
                if again:
                    return await _keys_page(request, state, user, notice=SENT_AGAIN.format(**first))
                ((created, owner_email),) = made
                blank = _blank_form(user)
                page = await _keys_page(
                    request,
                    state,
                    user,
                    created=created,
                    created_label=label.strip(),
                    created_owner=owner_email,
                    form=blank,
                )
                # The key is shown only on this answer: no cache may keep it.
                page.headers["Cache-Control"] = "no-store"
                return page
    return await _keys_page(request, state, user, status_code=400, form=form, errors=errors)


@router.get("/keys/{key_id}/revoke", response_class=HTMLResponse)
async def confirm_revoke(
    request: Request, session: ReadSession, user: Admin, key_id: str
) -> HTMLResponse:
    try:
        key = await team.client_key(session, client_id=user.principal.client_id, key_id=key_id)
    except NotFound:
        raise PageNotFound() from None
    return render(request, "keys_revoke.html", user, key=key)


@router.post("/keys/{key_id}/revoke")
async def revoke_key(state: StateDep, user: AdminForm, key_id: str) -> RedirectResponse:
    async with state.db.write() as session:
        try:
            await accounts.revoke_key(session, key_id=key_id, client_id=user.principal.client_id)
        except NotFound:
            raise PageNotFound() from None
        await session.commit()
    return RedirectResponse(f"{PREFIX}/keys?revoked=1", status_code=303)
