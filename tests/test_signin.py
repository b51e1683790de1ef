"""Sessions of the web app: they end after an idle time or their lifetime, whichever comes
first, and a page seen keeps them alive."""

from __future__ import annotations

from datetime import timedelta

from argon2 import PasswordHasher

from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.signin import service as signin
from dialscore.signin.schemas import Policy, Refusal, SignedIn, WebUser
from tests.support import Tenant

PASSWORD = "a long enough password"
POLICY = Policy(idle=timedelta(hours=2), lifetime=timedelta(hours=12))


async def test_sessions_end_when_idle_or_old_and_seen_pages_keep_them(
    db: Database, tenant: Tenant
) -> None:
    start = utcnow()
    async with db.unit_of_work() as session:
        user = await signin.set_password(session, user_id=tenant.user_id, password=PASSWORD)
        new = await signin.sign_in(
            session, email=user.email, password=PASSWORD, address="127.0.0.1", now=start,
            policy=POLICY,
        )  # fmt: skip
    assert isinstance(new, SignedIn)

    async def seen_at(moment: timedelta) -> WebUser | None:
        async with db.unit_of_work() as session:
            found = await signin.session_user(
                session, token=new.token, now=start + moment, policy=POLICY
            )
            if found is not None and signin.seen_long_ago(found, start + moment):
                await signin.mark_seen(session, session_id=found.session_id, now=start + moment)
            return found

    assert (await seen_at(timedelta(seconds=30))) is not None
    # Seen 30 s after signing in: not written down again so soon.
    assert (await seen_at(timedelta(hours=2, seconds=-1))) is not None
    # Each page seen moves the idle limit; none for two hours ends the session.
    for hour in range(3, 12):
        assert (await seen_at(timedelta(hours=hour))) is not None
    assert await seen_at(timedelta(hours=12)) is None  # the lifetime, however active
    async with db.unit_of_work() as session:
        again = await signin.sign_in(
            session, email=user.email, password=PASSWORD, address="127.0.0.1", now=start,
            policy=POLICY,
        )  # fmt: skip
    assert isinstance(again, SignedIn)
    async with db.read() as session:
        idle = await signin.session_user(
            session, token=again.token, now=start + timedelta(hours=2), policy=POLICY
        )
    assert idle is None


async def test_a_wrong_password_and_an_unknown_email_read_alike(
    db: Database, tenant: Tenant
) -> None:
    async with db.unit_of_work() as session:
        user = await signin.set_password(session, user_id=tenant.user_id, password=PASSWORD)
        wrong = await signin.sign_in(
            session, email=user.email, password=PASSWORD + "x", address="10.0.0.1",
            now=utcnow(), policy=POLICY,
        )  # fmt: skip
        unknown = await signin.sign_in(
            session, email="nobody@example.com", password=PASSWORD, address="10.0.0.1",
            now=utcnow(), policy=POLICY,
        )  # fmt: skip
    assert wrong == unknown == Refusal(signin.WRONG_CREDENTIALS, 0.0)


def test_an_unknown_email_costs_a_hash_of_the_same_parameters_as_a_password() -> None:
    # The hash verified for an unknown email is written out: were the hasher's parameters to
    # change with the library, it would cost another time than a real password's.
    assert signin.DUMMY_HASH.startswith("$argon2id$")
    assert not PasswordHasher().check_needs_rehash(signin.DUMMY_HASH)
    assert not signin.password_matches(None, PASSWORD)
