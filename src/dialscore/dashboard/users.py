"""The users pages of the web app (administrators only): add a user with a one-time link to
set a password, make a new link, change a role, deactivate, reactivate."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from dialscore.accounts import team
from dialscore.accounts.emails import shown_email
from dialscore.accounts.schemas import ROLES
from dialscore.dashboard.web import PREFIX, Admin, AdminForm, PageNotFound, render
from dialscore.kit.clock import utcnow
from dialscore.kit.deps import ReadSession, StateDep
from dialscore.kit.errors import ApiError, NotFound
from dialscore.models import User
from dialscore.signin import service as signin
from dialscore.signin.schemas import WebUser, policy

router = APIRouter()
# How a user created without an email (P94) is named; a client has at most one.
NO_EMAIL = "the user with no email yet"


@dataclass(frozen=True)
class Person:
    """A user as the users pages show them: ``email`` is the address, or ``NO_EMAIL`` for a
    user who has none yet, whose stand-in address is never shown."""

    id: str
    email: str
    has_email: bool
    role: str
    deactivated_at: datetime | None
    password_set: bool

    @classmethod
    def of(cls, user: User) -> Person:
        email = shown_email(user.email)
        return cls(
            user.id,
            email or NO_EMAIL,
            email is not None,
            user.role,
            user.deactivated_at,
            user.password_hash is not None,
        )


def _sentence(message: str) -> str:
    return message[:1].upper() + message[1:] + ("" if message.endswith(".") else ".")


def _link_url(request: Request, token: str) -> str:
    """The full address of a password link, as the browser reached this service (behind a
    proxy uvicorn trusts, the forwarded scheme and host)."""
    return f"{str(request.base_url).rstrip('/')}{PREFIX}/set-password/{token}"


async def _users_page(
    request: Request,
    state: StateDep,
    user: WebUser,
    *,
    status_code: int = 200,
    **context: object,
) -> HTMLResponse:
    async with state.db.read() as session:
        users = [
            Person.of(row)
            for row in await team.list_users(session, client_id=user.principal.client_id)
        ]
    context.setdefault("form", {"email": "", "role": "member"})
    context.setdefault("errors", {})
    return render(
        request, "users.html", user, status_code=status_code, users=users, roles=ROLES, **context
    )


async def _link_page(
    request: Request, state: StateDep, user: WebUser, token: str, email: str
) -> HTMLResponse:
    page = await _users_page(request, state, user, link=_link_url(request, token), link_email=email)
    # The link is shown only on this answer: no cache may keep it.
    page.headers["Cache-Control"] = "no-store"
    return page


@router.get("/users", response_class=HTMLResponse)
async def list_users(
    request: Request, state: StateDep, user: Admin, deactivated: str | None = None
) -> HTMLResponse:
    notice = ""
    if deactivated:
        notice = "The user was deactivated: their sessions ended and their keys answer 401."
    return await _users_page(request, state, user, notice=notice)


@router.post("/users", response_class=HTMLResponse)
async def add_user(
    request: Request,
    state: StateDep,
    user: AdminForm,
    email: Annotated[str, Form()] = "",
    role: Annotated[str, Form()] = "member",
) -> HTMLResponse:
    form = {"email": email, "role": role}
    errors: dict[str, str] = {}
    if not email.strip():
        errors["email"] = "Enter the email address of the person to add."
    elif role not in ROLES:
        errors["role"] = f"Choose one of: {', '.join(ROLES)}."
    else:
        async with state.db.write() as session:
            try:
                added, token = await signin.invite_user(
                    session,
                    client_id=user.principal.client_id,
                    email=email,
                    role=role,
                    now=utcnow(),
                    policy=policy(state.settings),
                )
            except ApiError as exc:
                errors["email"] = _sentence(exc.message)
            else:
                await session.commit()
                return await _link_page(request, state, user, token, added.email)
    return await _users_page(request, state, user, status_code=400, form=form, errors=errors)


@router.post("/users/{user_id}/link", response_class=HTMLResponse)
async def new_link(
    request: Request, state: StateDep, user: AdminForm, user_id: str
) -> HTMLResponse:
    async with state.db.write() as session:
        try:
            target, token = await signin.new_password_link(
                session,
                client_id=user.principal.client_id,
                user_id=user_id,
                now=utcnow(),
                policy=policy(state.settings),
            )
        except NotFound:
            raise PageNotFound() from None
        except ApiError as exc:
            return await _users_page(
                request, state, user, status_code=400, error=_sentence(exc.message)
            )
        await session.commit()
    return await _link_page(request, state, user, token, target.email)


@router.post("/users/{user_id}/role", response_class=HTMLResponse)
async def change_role(
    request: Request,
    state: StateDep,
    user: AdminForm,
    user_id: str,
    role: Annotated[str, Form()] = "",
) -> HTMLResponse:
    async with state.db.write() as session:
        try:
            target = await team.set_role(
                session,
                client_id=user.principal.client_id,
                user_id=user_id,
                role=role,
                acting_user_id=user.principal.user_id,
            )
        except NotFound:
            raise PageNotFound() from None
        except ApiError as exc:
            return await _users_page(
                request, state, user, status_code=400, error=_sentence(exc.message)
            )
        person = Person.of(target)
        await session.commit()
    notice = f"{_subject(person)} is now {person.role}."
    return await _users_page(request, state, user, notice=notice)


@router.get("/users/{user_id}/deactivate", response_class=HTMLResponse)
async def confirm_deactivate(
    request: Request, session: ReadSession, user: Admin, user_id: str
) -> HTMLResponse:
    try:
        target = await team.client_user(
            session, client_id=user.principal.client_id, user_id=user_id
        )
    except NotFound:
        raise PageNotFound() from None
    return render(
        request,
        "users_deactivate.html",
        user,
        target=Person.of(target),
        is_self=target.id == user.principal.user_id,
    )


@router.post("/users/{user_id}/deactivate", response_model=None)
async def deactivate(
    request: Request, state: StateDep, user: AdminForm, user_id: str
) -> HTMLResponse | RedirectResponse:
    async with state.db.write() as session:
        try:
            await signin.deactivate_user(
                session,
                client_id=user.principal.client_id,
                user_id=user_id,
                acting_user_id=user.principal.user_id,
                now=utcnow(),
            )
        except NotFound:
            raise PageNotFound() from None
        except ApiError as exc:
            return await _users_page(
                request, state, user, status_code=400, error=_sentence(exc.message)
            )
        await session.commit()
    return RedirectResponse(f"{PREFIX}/users?deactivated=1", status_code=303)


def _subject(person: Person) -> str:
    """The person named at the start of a sentence: an email as it is written."""
    return person.email if person.has_email else person.email[:1].upper() + person.email[1:]


def _reactivated(person: Person, keys: int) -> str:
    if not person.has_email:
        signs_in = "they cannot sign in before an operator gives them an email"
    elif person.password_set:
        signs_in = "they can sign in with their password"
    else:
        signs_in = "they have no password yet: make them a new password link"
    answer = (
        f"{keys} API key{'s' if keys != 1 else ''} of theirs answer{'s' if keys == 1 else ''} "
        "again (revoke any that should not)"
        if keys
        else "none of their API keys is active"
    )
    return f"{_subject(person)} is active again: {signs_in}; {answer}."


@router.post("/users/{user_id}/reactivate", response_class=HTMLResponse)
async def reactivate(
    request: Request, state: StateDep, user: AdminForm, user_id: str
) -> HTMLResponse:
    async with state.db.write() as session:
        try:
            target, keys = await team.reactivate_user(
                session, client_id=user.principal.client_id, user_id=user_id, now=utcnow()
            )
        except NotFound:
            raise PageNotFound() from None
        notice = _reactivated(Person.of(target), keys)
        await session.commit()
    return await _users_page(request, state, user, notice=notice)
