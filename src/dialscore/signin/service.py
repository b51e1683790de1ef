"""Sign-in use cases: passwords (argon2), server-side sessions, failed sign-ins slowed down
and then refused, and one-time links to set a password."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.accounts import repository as accounts_repo
from dialscore.accounts import service as accounts
from dialscore.accounts import team
from dialscore.accounts.emails import email_problem, is_placeholder
from dialscore.accounts.schemas import Principal
from dialscore.accounts.service import effective_plan
from dialscore.kit.clock import new_id
from dialscore.kit.errors import BadRequest, NotFound
from dialscore.models import PasswordLink, User, WebSession
from dialscore.signin import repository as repo
from dialscore.signin.schemas import (
    MAX_PASSWORD_LENGTH,
    MIN_PASSWORD_LENGTH,
    Policy,
    Refusal,
    SignedIn,
    WebUser,
)

_hasher = PasswordHasher()
# Verified when the email is unknown, so that an answer takes as long either way: the hash of
# a random password nobody kept, with the hasher's parameters (a test checks they are the
# same). Written out rather than made at import, which cost every process, each one-shot
# command's included, about 0.15 s of CPU and 63 MiB at its peak (argon2's memory).
DUMMY_HASH = (
    "$argon2id$v=19$m=65536,t=3,p=4$V3L2CP8ktUQMhXug7PyfWg"
    "$BgxPegi9xzCRAu3holR7VdhcUvRPxJ/Yq2ld3xiGgfQ"
)
WRONG_CREDENTIALS = "The email or password is not right."
SEEN_INTERVAL = timedelta(minutes=1)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


# -- passwords --------------------------------------------------------------------------------


def check_password(password: str) -> str:
    """The password when it may be used; 400 saying what is wrong otherwise."""
    if len(password) < MIN_PASSWORD_LENGTH:
        raise BadRequest(f"the password must have at least {MIN_PASSWORD_LENGTH} characters")
    if len(password) > MAX_PASSWORD_LENGTH:
        raise BadRequest(f"the password must have at most {MAX_PASSWORD_LENGTH} characters")
    return password


def hash_password(password: str) -> str:
    return _hasher.hash(check_password(password))


def password_matches(stored: str | None, password: str) -> bool:
    try:
        return _hasher.verify(stored or DUMMY_HASH, password) and stored is not None
    except (VerificationError, InvalidHashError):
        return False


async def set_password(session: AsyncSession, *, user_id: str, password: str) -> User:
    user = await accounts_repo.get_user(session, user_id)
    if user is None:
        raise NotFound(f"no user with id {user_id}")
    user.password_hash = hash_password(password)
    return user


# -- signing in -------------------------------------------------------------------------------


def _wait_text(delta: timedelta) -> str:
    minutes = max(1, -(-int(delta.total_seconds()) // 60))
    return f"{minutes} minute{'s' if minutes > 1 else ''}"


async def _throttle(
    session: AsyncSession, keys: dict[str, int], now: datetime, policy: Policy
) -> Refusal | None:
    """A refusal when one of ``keys`` (key → failures allowed) failed too often lately; else
    how long to slow this attempt down, as a refusal with no message."""
    since = now - policy.window
    delay = 0.0
    for key, allowed in keys.items():
        await repo.forget_failures(session, key, before=since)
        recent = await repo.recent_failures(session, key, since)
        if len(recent) >= allowed:
            wait = recent[len(recent) - allowed] + policy.window - now
            return Refusal(
                f"Too many failed sign-ins. Try again in {_wait_text(wait)}, "
                "or ask your administrator for a link to set a new password."
            )
        over = len(recent) - policy.failures_before_delay + 1
        if over > 0:
            delay = max(delay, min(float(over), policy.max_delay_seconds))
    return Refusal("", delay) if delay else None


async def sign_in(
    session: AsyncSession,
    *,
    email: str,
    password: str,
    address: str,
    now: datetime,
    policy: Policy,
) -> SignedIn | Refusal:
    """A new session for the user with this email and password, or why not. A refusal with a
    delay is to be answered only after that many seconds."""
    email = email.strip().lower()
    # An email no user can have (too long to store, say) is not looked up, nor counted by
    # itself: it answers as an unknown email, counted against the address.
    possible = email_problem(email) is None
    keys = {f"address:{address}": policy.failures_before_lock * policy.address_factor}
    if possible:
        keys = {f"email:{email}": policy.failures_before_lock, **keys}
    throttled = await _throttle(session, keys, now, policy)
    if throttled is not None and throttled.message:
        return throttled
    user = await repo.user_by_email(session, email) if possible else None
    # A user without an email yet (P94) signs in with none: its stand-in is nobody's address.
    active = user is not None and user.deactivated_at is None and not is_placeholder(user.email)
    if user is None or not password_matches(user.password_hash if active else None, password):
        for key in keys:
            repo.add_failure(session, key, now)
        delay = throttled.delay_seconds if throttled else 0.0
        return Refusal(WRONG_CREDENTIALS, delay)
    await repo.forget_failures(session, f"email:{email}")
    token = secrets.token_urlsafe(32)
    expires_at = now + policy.lifetime
    session.add(
        WebSession(
            id=new_id(),
            token_hash=token_hash(token),
            user_id=user.id,
            csrf_token=secrets.token_urlsafe(32),
            created_at=now,
            last_seen_at=now,
            expires_at=expires_at,
        )
    )
    return SignedIn(token, expires_at)


async def session_user(
    session: AsyncSession, *, token: str, now: datetime, policy: Policy
) -> WebUser | None:
    """The signed-in user of a session cookie; None when the session is unknown, revoked,
    idle too long, past its lifetime, or its user deactivated. Reads only: ``mark_seen``
    keeps an active session from going idle."""
    rows = await repo.session_rows(session, token_hash(token))
    if rows is None:
        return None
    web_session, user, client, plan = rows
    if (
        web_session.revoked_at is not None
        or web_session.expires_at <= now
        or web_session.last_seen_at + policy.idle <= now
        or user.deactivated_at is not None
    ):
        return None
    principal = Principal(
        user_id=user.id,
        client_id=client.id,
        role=user.role,
        key_id=None,
        plan=effective_plan(plan, client.overrides),
    )
    return WebUser(
        principal, user.email, web_session.id, web_session.csrf_token, web_session.last_seen_at
    )


def seen_long_ago(user: WebUser, now: datetime) -> bool:
    """Whether the session's last activity is worth writing down again (once a minute, so
    that reading pages rarely writes)."""
    return now - user.last_seen_at >= SEEN_INTERVAL


async def mark_seen(session: AsyncSession, *, session_id: str, now: datetime) -> None:
    await repo.mark_seen(session, session_id, now)


async def sign_out(session: AsyncSession, *, token: str, now: datetime) -> None:
    rows = await repo.session_rows(session, token_hash(token))
    if rows is not None and rows[0].revoked_at is None:
        rows[0].revoked_at = now


async def end_sessions(session: AsyncSession, *, user_id: str, now: datetime) -> None:
    """Ends every session of a user (deactivated, or a new password)."""
    await repo.revoke_sessions(session, user_id, now)


# -- password links ---------------------------------------------------------------------------


async def create_password_link(
    session: AsyncSession, *, user_id: str, now: datetime, policy: Policy
) -> str:
    """A token for a one-time link to set ``user_id``'s password; only its hash is kept."""
    token = secrets.token_urlsafe(32)
    session.add(
        PasswordLink(
            id=new_id(),
            token_hash=token_hash(token),
            user_id=user_id,
            created_at=now,
            expires_at=now + policy.password_link_lifetime,
        )
    )
    return token


async def usable_link(session: AsyncSession, *, token: str, now: datetime) -> PasswordLink:
    link = await repo.password_link(session, token_hash(token))
    if link is None or link.used_at is not None or link.expires_at <= now:
        raise NotFound(
            "this link is not valid: it was used already, has expired, or was never made; "
            "ask your administrator for a new one"
        )
    user = await accounts_repo.get_user(session, link.user_id)
    if user is None or is_placeholder(user.email):
        # A password nobody could sign in with (P94); links are no longer made for such users.
        raise NotFound(
            "this link cannot be used: its user has no email to sign in with yet; "
            "ask your administrator for a new link once they have one"
        )
    return link


async def use_password_link(
    session: AsyncSession, *, token: str, password: str, now: datetime
) -> User:
    """Sets the password of the link's user, spends the link and ends the user's sessions."""
    link = await usable_link(session, token=token, now=now)
    user = await set_password(session, user_id=link.user_id, password=password)
    link.used_at = now
    await end_sessions(session, user_id=user.id, now=now)
    return user


# -- what an administrator does to the client's users -----------------------------------------


async def invite_user(
    session: AsyncSession, *, client_id: str, email: str, role: str, now: datetime, policy: Policy
) -> tuple[User, str]:
    """A new user of the client and the token of a link to set their password."""
    user = await accounts.create_user(session, client_id=client_id, email=email, role=role)
    token = await create_password_link(session, user_id=user.id, now=now, policy=policy)
    return user, token


async def new_password_link(
    session: AsyncSession, *, client_id: str, user_id: str, now: datetime, policy: Policy
) -> tuple[User, str]:
    """Another link for a user of the client (one who forgot their password, or lost the
    first link); a deactivated user gets none."""
    user = await team.client_user(session, client_id=client_id, user_id=user_id)
    if is_placeholder(user.email):
        raise BadRequest(
            "this user has no email yet, so could not sign in: an operator gives them one "
            f"with 'dialscore admin set-password --user {user.id} --email EMAIL'"
        )
    if user.deactivated_at is not None:
        raise BadRequest(f"{user.email} is deactivated")
    token = await create_password_link(session, user_id=user.id, now=now, policy=policy)
    return user, token


async def give_sign_in(
    session: AsyncSession,
    *,
    user_id: str,
    email: str | None,
    password: str | None,
    now: datetime,
    policy: Policy,
) -> tuple[User, str | None]:
    """The operator's way in for a user of any client: gives them ``email`` when one is given,
    then sets ``password`` (their sessions end) or, without one, makes a one-time link to set
    it, whose token is returned. A user who would still have no email gets neither (P94)."""
    if email is not None:
        user = await accounts.set_email(session, user_id=user_id, email=email)
    else:
        user = await accounts.find_user(session, user_id=user_id)
    if is_placeholder(user.email):
        raise BadRequest(f"user {user.id} has no email yet: give one with the password")
    if password is not None:
        await set_password(session, user_id=user.id, password=password)
        await end_sessions(session, user_id=user.id, now=now)
        return user, None
    if user.deactivated_at is not None:
        raise BadRequest(f"{user.email} is deactivated")
    return user, await create_password_link(session, user_id=user.id, now=now, policy=policy)


async def deactivate_user(
    session: AsyncSession, *, client_id: str, user_id: str, acting_user_id: str, now: datetime
) -> User:
    """Deactivates a user of the client: their sessions end and their keys answer 401."""
    user = await team.deactivate_user(
        session, client_id=client_id, user_id=user_id, acting_user_id=acting_user_id, now=now
    )
    await end_sessions(session, user_id=user.id, now=now)
    return user
