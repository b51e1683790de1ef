"""Signing in and out, and setting a password from a one-time link."""

from __future__ import annotations

import asyncio
import secrets
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from dialscore.dashboard.web import (
    PREFIX,
    SESSION_COOKIE,
    FormExpired,
    FormUser,
    SignedIn,
    client_address,
    is_https,
    render,
    safe_next,
)
from dialscore.kit.clock import utcnow
from dialscore.kit.deps import StateDep
from dialscore.kit.errors import ApiError
from dialscore.kit.security import same_secret
from dialscore.signin import service as signin
from dialscore.signin.schemas import SignedIn as NewSession
from dialscore.signin.schemas import policy

router = APIRouter()

# The sign-in form has no session yet: its CSRF token is a cookie that the form repeats.
SIGN_IN_COOKIE = "dialscore_sign_in"


def _sign_in_page(
    request: Request, *, next_path: str, email: str = "", error: str = "", status_code: int = 200
) -> HTMLResponse:
    token = request.cookies.get(SIGN_IN_COOKIE) or secrets.token_urlsafe(32)
    response = render(
        request,
        "sign_in.html",
        status_code=status_code,
        next_path=next_path,
        email=email,
        error=error,
        form_token=token,
    )
    response.set_cookie(
        SIGN_IN_COOKIE, token, httponly=True, samesite="lax", secure=is_https(request), path=PREFIX
    )
    return response


@router.get("/sign-in", response_class=HTMLResponse)
async def sign_in_form(request: Request, next: str | None = None) -> HTMLResponse:
    return _sign_in_page(request, next_path=safe_next(next))


@router.post("/sign-in", response_model=None)
async def sign_in(
    request: Request,
    state: StateDep,
    email: Annotated[str, Form()] = "",
    password: Annotated[str, Form()] = "",
    next: Annotated[str, Form()] = "",
    form_token: Annotated[str, Form()] = "",
) -> Response:
    next_path = safe_next(next)
    cookie = request.cookies.get(SIGN_IN_COOKIE, "")
    if not cookie or not same_secret(cookie, form_token):
        raise FormExpired()
    if not email.strip() or not password:
        return _sign_in_page(
            request,
            next_path=next_path,
            email=email,
            error="Enter your email and your password.",
            status_code=400,
        )
    async with state.db.write() as session:
        outcome = await signin.sign_in(
            session,
            email=email,
            password=password,
            address=client_address(request),
            now=utcnow(),
            policy=policy(state.settings),
        )
        await session.commit()
    if not isinstance(outcome, NewSession):
        await asyncio.sleep(outcome.delay_seconds)
        refused = outcome.message != signin.WRONG_CREDENTIALS
        return _sign_in_page(
            request,
            next_path=next_path,
            email=email,
            error=outcome.message,
            status_code=429 if refused else 401,
        )
    response = RedirectResponse(next_path, status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        outcome.token,
        max_age=int(state.settings.session_lifetime_hours * 3600),
        httponly=True,
        samesite="lax",
        secure=is_https(request),
        path=PREFIX,
    )
    response.delete_cookie(SIGN_IN_COOKIE, path=PREFIX)
    return response


@router.get("/sign-out", response_class=HTMLResponse)
async def sign_out_form(request: Request, user: SignedIn) -> HTMLResponse:
    return render(request, "sign_out.html", user)


@router.post("/sign-out")
async def sign_out(request: Request, state: StateDep, user: FormUser) -> RedirectResponse:
    async with state.db.write() as session:
        await signin.sign_out(session, token=request.cookies.get(SESSION_COOKIE, ""), now=utcnow())
        await session.commit()
    response = RedirectResponse(f"{PREFIX}/sign-in", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path=PREFIX)
    return response


@router.get("/set-password/{token}", response_class=HTMLResponse)
async def set_password_form(request: Request, state: StateDep, token: str) -> HTMLResponse:
    async with state.db.read() as session:
        try:
            await signin.usable_link(session, token=token, now=utcnow())
        except ApiError as exc:
            return render(request, "set_password.html", error=exc.message, status_code=404)
    return render(request, "set_password.html", token=token)


@router.post("/set-password/{token}", response_class=HTMLResponse)
async def set_password(
    request: Request,
    state: StateDep,
    token: str,
    password: Annotated[str, Form()] = "",
    confirm: Annotated[str, Form()] = "",
) -> Response:
    """The link itself is the secret: nobody but its holder can send this form."""
    if password != confirm:
        return render(
            request,
            "set_password.html",
            token=token,
            field_error="The two passwords are not the same.",
            status_code=400,
        )
    async with state.db.write() as session:
        try:
            user = await signin.use_password_link(
                session, token=token, password=password, now=utcnow()
            )
        except ApiError as exc:
            missing = exc.status_code == 404
            return render(
                request,
                "set_password.html",
                token=None if missing else token,
                error=exc.message if missing else "",
                field_error="" if missing else exc.message[:1].upper() + exc.message[1:] + ".",
                status_code=exc.status_code,
            )
        email = user.email
        await session.commit()
    return render(request, "set_password.html", done=True, email=email)
