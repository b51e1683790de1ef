"""What every page of the web app shares: templates, the signed-in user, the CSRF check,
the one-time token of forms that create something, and the answers for a missing page or a
form that must be sent again."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates
from starlette.datastructures import FormData

from dialscore.accounts.emails import shown_email
from dialscore.config import Settings
from dialscore.dashboard.words import words
from dialscore.idempotency import MAX_KEY_LENGTH, Once, request_hash
from dialscore.kit.clock import utcnow
from dialscore.kit.deps import get_state
from dialscore.kit.security import same_secret
from dialscore.kit.text import scrub, text_problem
from dialscore.phones import readable
from dialscore.signin import service as signin
from dialscore.signin.schemas import WebUser, policy

PREFIX = "/app"
SESSION_COOKIE = "dialscore_session"
CSRF_FIELD = "csrf_token"
# Each page carries a new one-time token for the forms that create something: the same form
# sent again (the page that answered it reloaded, a second click) creates nothing more.
ONCE_FIELD = "once"

templates = Jinja2Templates(directory=Path(__file__).parent / "templates")
# Pages name codes in words (``words.lead_status("P1")``) and write numbers as people do.
templates.env.globals["words"] = words()
templates.env.filters["readable_number"] = readable
templates.env.filters["person_email"] = lambda email: shown_email(email) or "no email yet"


class PageNotFound(Exception):
    """Answered with the web app's 404 page: another client's object, or a page a member may
    not see, is not found (D1)."""


class SignInRequired(Exception):
    """Answered with a redirect to the sign-in page, which comes back to ``next_path``."""

    def __init__(self, next_path: str) -> None:
        super().__init__(next_path)
        self.next_path = next_path


class FormExpired(Exception):
    """A form that changes something came without its session's CSRF token."""


class UnstorableForm(Exception):
    """A form with a field that holds a character no stored text may hold (P74)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def check_form(form: FormData, csrf_token: str) -> None:
    """Refuses a form that changes something without the session's CSRF token, or with a
    field no page could store."""
    sent = form.get(CSRF_FIELD)
    if not isinstance(sent, str) or not same_secret(sent, csrf_token):
        raise FormExpired()
    for name, value in form.multi_items():
        for text in (name, value) if isinstance(value, str) else (name,):
            problem = text_problem(text)
            if problem is not None:
                raise UnstorableForm(f"The field “{scrub(name)}” {problem}.")


def render(
    request: Request,
    template: str,
    user: WebUser | None = None,
    *,
    status_code: int = 200,
    **context: Any,
) -> HTMLResponse:
    return templates.TemplateResponse(
        request,
        template,
        {
            "user": user,
            "csrf_field": CSRF_FIELD,
            "once_field": ONCE_FIELD,
            "once_token": secrets.token_urlsafe(16),
            **context,
        },
        status_code=status_code,
    )


def sent_once(form: FormData, user: WebUser, scope: str, settings: Settings) -> Once | None:
    """The one-time token a form came with, as an idempotency key of the user's for
    ``scope`` (the form's name), kept as long as any; None for a form sent without one, which
    is simply carried out. A token counts once whatever the form holds: sent again, it is the
    same form sent again."""
    token = form.get(ONCE_FIELD)
    if not isinstance(token, str) or not token or len(token) > MAX_KEY_LENGTH:
        return None
    fingerprint = request_hash({}, scope)
    return Once(user.principal.user_id, scope, token, fingerprint, settings.idempotency_ttl)


def is_https(request: Request) -> bool:
    """Whether the browser reached us over HTTPS; behind a proxy uvicorn trusts, its
    forwarded scheme is already the request's."""
    return request.url.scheme == "https"


def client_address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def safe_next(path: str | None) -> str:
    """Where to go after signing in: only a page of the web app, never another site."""
    if path and path.startswith(PREFIX + "/") and not path.startswith(PREFIX + "//"):
        return path
    return PREFIX + "/jobs"


async def signed_in(request: Request) -> WebUser:
    token = request.cookies.get(SESSION_COOKIE)
    if token:
        state = get_state(request)
        now = utcnow()
        async with state.db.read() as session:
            user = await signin.session_user(
                session, token=token, now=now, policy=policy(state.settings)
            )
        if user is not None:
            if signin.seen_long_ago(user, now):
                async with state.db.write() as session:
                    await signin.mark_seen(session, session_id=user.session_id, now=now)
                    await session.commit()
            return user
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    raise SignInRequired(target)


async def admin(user: Annotated[WebUser, Depends(signed_in)]) -> WebUser:
    if not user.is_admin:
        raise PageNotFound()
    return user


async def checked_form(request: Request, user: Annotated[WebUser, Depends(signed_in)]) -> WebUser:
    """The signed-in user of a form that changes something, once its CSRF token is right and
    its fields can be stored."""
    check_form(await request.form(), user.csrf_token)
    return user


async def checked_admin_form(
    request: Request, user: Annotated[WebUser, Depends(checked_form)]
) -> WebUser:
    if not user.is_admin:
        raise PageNotFound()
    return user


SignedIn = Annotated[WebUser, Depends(signed_in)]
Admin = Annotated[WebUser, Depends(admin)]
# For POST handlers: the CSRF token has been checked.
FormUser = Annotated[WebUser, Depends(checked_form)]
AdminForm = Annotated[WebUser, Depends(checked_admin_form)]


def sign_in_url(next_path: str) -> str:
    return f"{PREFIX}/sign-in?next={quote(next_path, safe='/')}"
