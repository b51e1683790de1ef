"""Housekeeping, on both databases: what can no longer be used or counted is deleted (dead web
sessions, used or expired password links, failed sign-ins too old to count, idempotency
answers past their time to live, uploads unchanged for a day), each at the moment it stops
counting, and nothing else. Delivery bodies past their retention: test_webhook_retention.py."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from fastapi import FastAPI
from sqlalchemy import select

from dialscore.config import Settings
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.models import IdempotencyRecord, PasswordLink, SignInFailure, Upload, WebSession
from dialscore.uploads.schemas import KEEP
from dialscore.worker.housekeeping import Housekeeping
from tests.conftest import SECRET
from tests.support import make_tenant, state_of

NOW = utcnow().replace(microsecond=0)
SECOND = timedelta(seconds=1)


def web_session(
    user_id: str,
    *,
    seen: datetime = NOW,
    expires: datetime = NOW + timedelta(hours=1),
    revoked: datetime | None = None,
) -> WebSession:
    return WebSession(
        id=str(uuid.uuid4()),
        token_hash=uuid.uuid4().hex,
        user_id=user_id,
        csrf_token="t",
        created_at=seen,
        last_seen_at=seen,
        expires_at=expires,
        revoked_at=revoked,
    )


def password_link(user_id: str, *, expires: datetime, used: datetime | None = None) -> PasswordLink:
    return PasswordLink(
        id=str(uuid.uuid4()),
        token_hash=uuid.uuid4().hex,
        user_id=user_id,
        created_at=expires - timedelta(hours=24),
        expires_at=expires,
        used_at=used,
    )


def answer(user_id: str, key: str, created: datetime) -> IdempotencyRecord:
    return IdempotencyRecord(
        user_id=user_id,
        scope="calls",
        key=key,
        request_hash="h",
        status_code=200,
        response={},
        created_at=created,
    )


def upload(user_id: str, client_id: str, name: str, *, changed: datetime, state: str) -> Upload:
    return Upload(
        id=str(uuid.uuid4()),
        user_id=user_id,
        client_id=client_id,
        filename=name,
        state=state,
        file=None if state == "started" else b"First,Last\nA,B\n",
        meta={"mapping": None},
        summaries={},
        created_at=changed - timedelta(hours=1),
        updated_at=changed,
    )


async def kept(db: Database) -> dict[str, set[str]]:
    async with db.read() as session:
        sessions = await session.scalars(select(WebSession.token_hash))
        links = await session.scalars(select(PasswordLink.token_hash))
        failures = await session.scalars(select(SignInFailure.key))
        answers = await session.scalars(select(IdempotencyRecord.key))
        uploads = await session.scalars(select(Upload.filename))
        return {
            "sessions": set(sessions),
            "links": set(links),
            "failures": set(failures),
            "answers": set(answers),
            "uploads": set(uploads),
        }


async def test_what_has_expired_is_forgotten_and_the_rest_kept(
    app: FastAPI, settings: Settings
) -> None:
    db = state_of(app).db
    tenant = await make_tenant(db, SECRET)
    user_id, client_id = tenant.user_id, tenant.client_id
    idle = timedelta(minutes=settings.session_idle_minutes)
    lock = timedelta(minutes=settings.signin_lock_minutes)
    ttl = timedelta(hours=settings.idempotency_ttl_hours)
    live = {
        "sessions": [web_session(user_id), web_session(user_id, seen=NOW - idle + SECOND)],
        "links": [password_link(user_id, expires=NOW + SECOND)],
        "failures": [SignInFailure(key="email:recent", failed_at=NOW - 2 * lock)],
        "answers": [answer(user_id, "recent", NOW - ttl + SECOND)],
        "uploads": [
            upload(user_id, client_id, "mapped.csv", changed=NOW - KEEP + SECOND, state="waiting")
        ],
    }
    dead = {
        "sessions": [
            web_session(user_id, seen=NOW - idle),
            web_session(user_id, expires=NOW),
            web_session(user_id, revoked=NOW - SECOND),
        ],
        "links": [
            password_link(user_id, expires=NOW),
            password_link(user_id, expires=NOW + timedelta(hours=1), used=NOW - SECOND),
        ],
        "failures": [SignInFailure(key="email:old", failed_at=NOW - 2 * lock - SECOND)],
        "answers": [answer(user_id, "old", NOW - ttl)],
        "uploads": [
            upload(user_id, client_id, "left.csv", changed=NOW - KEEP, state="waiting"),
            upload(user_id, client_id, "stuck.csv", changed=NOW - KEEP, state="starting"),
            upload(user_id, client_id, "done.csv", changed=NOW - 2 * KEEP, state="started"),
        ],
    }
    async with db.unit_of_work() as session:
        for rows in (*live.values(), *dead.values()):
            session.add_all(rows)

    forgotten = await Housekeeping(db, settings, clock=lambda: NOW).forget_expired()

    assert forgotten == {
        "sessions": 3,
        "password_links": 2,
        "sign_in_failures": 1,
        "idempotency_answers": 1,
        "uploads": 3,
        "webhook_bodies": 0,
    }
    assert await kept(db) == {
        "sessions": {s.token_hash for s in live["sessions"]},
        "links": {link.token_hash for link in live["links"]},
        "failures": {"email:recent"},
        "answers": {"recent"},
        "uploads": {"mapped.csv"},
    }
    # Once more: nothing left to forget.
    again = await Housekeeping(db, settings, clock=lambda: NOW).forget_expired()
    assert set(again.values()) == {0}


async def test_the_worker_keeps_house_but_not_at_start(app: FastAPI) -> None:
    housekeeping = state_of(app).extras["worker"].housekeeping
    assert housekeeping.loop.running and housekeeping.loop.wait_first
