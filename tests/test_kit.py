"""The shared kit: pagination, API key tokens, signatures, credit amounts, URLs, plans, the
polling loop and the wakers."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import threading
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import jwt
import pytest
from fastapi import APIRouter, FastAPI
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect
from structlog.testing import capture_logs

from dialscore.accounts.service import effective_plan
from dialscore.kit.db import Credits, async_url, sync_url
from dialscore.kit.envelope import number
from dialscore.kit.pagination import PageRequest, Pagination
from dialscore.kit.polling import PollingLoop
from dialscore.kit.routes import include_router, route_paths
from dialscore.kit.security import (
    InvalidToken,
    KeyClaims,
    issue_api_key,
    read_api_key,
    sign_body,
)
from dialscore.kit.wakers import Wakers
from dialscore.models import Plan

SECRET = "kit-test-secret-that-is-long-enough-for-hs256-and-hs512-signing-keys"
OTHER_SECRET = "another-secret-that-is-also-long-enough-for-hs256"
NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)

# -- pagination -----------------------------------------------------------------------------


def described(page: int, limit: int, total: int) -> dict[str, Any]:
    result = PageRequest(page=page, limit=limit).describe(total)
    Pagination.model_validate(result)  # every value respects the documented bounds
    return dict(result)


def test_pagination_of_nothing() -> None:
    assert described(1, 100, 0) == {
        "page": 1,
        "perPage": 100,
        "totalCount": 0,
        "totalPages": 0,
        "hasNextPage": False,
        "hasPreviousPage": False,
    }


def test_pagination_exact_multiple() -> None:
    first = described(1, 100, 200)
    last = described(2, 100, 200)
    assert (first["totalPages"], first["hasNextPage"], first["hasPreviousPage"]) == (2, True, False)
    assert (last["totalPages"], last["hasNextPage"], last["hasPreviousPage"]) == (2, False, True)


def test_pagination_one_more_than_a_multiple() -> None:
    result = described(2, 100, 201)
    assert result["totalPages"] == 3
    assert result["hasNextPage"] is True


def test_pagination_past_the_end() -> None:
    result = described(5, 100, 150)
    assert result == {
        "page": 5,
        "perPage": 100,
        "totalCount": 150,
        "totalPages": 2,
        "hasNextPage": False,
        "hasPreviousPage": True,
    }


def test_pagination_single_item_pages() -> None:
    assert described(1, 1, 1)["totalPages"] == 1
    assert described(1, 1, 1)["hasNextPage"] is False
    assert described(1, 1, 2)["hasNextPage"] is True


def test_page_offset() -> None:
    assert PageRequest(page=1, limit=100).offset == 0
    assert PageRequest(page=3, limit=50).offset == 100


@given(
    st.integers(min_value=1, max_value=50),
    st.integers(min_value=1, max_value=1000),
    st.integers(min_value=0, max_value=100_000),
)
def test_pagination_properties(page: int, limit: int, total: int) -> None:
    result = described(page, limit, total)
    pages = result["totalPages"]
    assert pages * limit >= total
    assert pages == 0 or (pages - 1) * limit < total
    assert result["hasNextPage"] == (page * limit < total)
    assert result["hasPreviousPage"] == (page > 1)


# -- API keys (D2) --------------------------------------------------------------------------


def issue(secret: str = SECRET, **overrides: Any) -> str:
    values: dict[str, Any] = {
        "user_id": "user-1",
        "client_id": "client-1",
        "key_id": "key-1",
        "issued_at": NOW,
    }
    values.update(overrides)
    return issue_api_key(secret, **values)


def test_api_key_round_trip() -> None:
    token = issue()
    assert read_api_key(SECRET, token) == KeyClaims(
        user_id="user-1", client_id="client-1", key_id="key-1"
    )


def test_api_key_is_hs256_with_the_documented_claims() -> None:
    token = issue(expires_at=NOW + timedelta(days=3650))
    assert jwt.get_unverified_header(token)["alg"] == "HS256"
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims == {
        "sub": "user-1",
        "cid": "client-1",
        "jti": "key-1",
        "iat": int(NOW.timestamp()),
        "exp": int((NOW + timedelta(days=3650)).timestamp()),
    }


def test_api_key_without_expiry_has_no_exp_claim() -> None:
    claims = jwt.decode(issue(), options={"verify_signature": False})
    assert "exp" not in claims


def test_unexpired_key_is_accepted() -> None:
    token = issue(issued_at=datetime.now(UTC), expires_at=datetime.now(UTC) + timedelta(hours=1))
    assert read_api_key(SECRET, token).key_id == "key-1"


def test_expired_key_is_rejected() -> None:
    token = issue(expires_at=datetime.now(UTC) - timedelta(seconds=5))
    with pytest.raises(InvalidToken):
        read_api_key(SECRET, token)


def test_foreign_signed_key_is_rejected() -> None:
    with pytest.raises(InvalidToken):
        read_api_key(SECRET, issue(OTHER_SECRET))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_tampered_payload_is_rejected() -> None:
    header, _, signature = issue().split(".")
    forged = {"sub": "user-1", "cid": "client-2", "jti": "key-1", "iat": int(NOW.timestamp())}
    token = ".".join([header, _b64(json.dumps(forged).encode()), signature])
    with pytest.raises(InvalidToken):
        read_api_key(SECRET, token)


def test_tampered_signature_is_rejected() -> None:
    header, payload, signature = issue().split(".")
    raw = bytearray(base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)))
    raw[0] ^= 0x01
    with pytest.raises(InvalidToken):
        read_api_key(SECRET, ".".join([header, payload, _b64(bytes(raw))]))


@pytest.mark.parametrize("missing", ["sub", "cid", "jti", "iat"])
def test_key_missing_a_claim_is_rejected(missing: str) -> None:
    claims: dict[str, Any] = {
        "sub": "user-1",
        "cid": "client-1",
        "jti": "key-1",
        "iat": int(NOW.timestamp()),
    }
    del claims[missing]
    token = jwt.encode(claims, SECRET, algorithm="HS256")
    with pytest.raises(InvalidToken):
        read_api_key(SECRET, token)


@pytest.mark.parametrize(("claim", "value"), [("cid", ""), ("cid", 7), ("jti", ""), ("jti", None)])
def test_key_with_an_empty_or_non_string_claim_is_rejected(claim: str, value: Any) -> None:
    claims: dict[str, Any] = {
        "sub": "user-1",
        "cid": "client-1",
        "jti": "key-1",
        "iat": int(NOW.timestamp()),
        claim: value,
    }
    with pytest.raises(InvalidToken):
        read_api_key(SECRET, jwt.encode(claims, SECRET, algorithm="HS256"))


def test_unsigned_and_other_algorithm_keys_are_rejected() -> None:
    claims = {"sub": "user-1", "cid": "client-1", "jti": "key-1", "iat": int(NOW.timestamp())}
    unsigned = jwt.encode(claims, None, algorithm="none")
    hs512 = jwt.encode(claims, SECRET, algorithm="HS512")
    for token in (unsigned, hs512):
        with pytest.raises(InvalidToken):
            read_api_key(SECRET, token)


@pytest.mark.parametrize("token", ["", "garbage", "a.b.c", "Bearer x.y.z"])
def test_malformed_key_is_rejected(token: str) -> None:
    with pytest.raises(InvalidToken):
        read_api_key(SECRET, token)


# -- webhook signatures ---------------------------------------------------------------------


def test_sign_body_matches_a_hand_computation() -> None:
    body = b'{"event":"job.completed","data":{"jobId":"x"}}'
    expected = base64.b64encode(hmac.new(b"whsec_abc", body, hashlib.sha256).digest()).decode()
    assert sign_body("whsec_abc", body) == expected


def test_sign_body_rfc4231_vector() -> None:
    # RFC 4231 test case 2, encoded in standard base64.
    digest = bytes.fromhex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    signature = sign_body("Jefe", b"what do ya want for nothing?")
    assert signature == base64.b64encode(digest).decode()
    assert len(signature) == 44


def test_sign_body_depends_on_secret_and_body() -> None:
    base = sign_body("s1", b"body")
    assert sign_body("s2", b"body") != base
    assert sign_body("s1", b"body ") != base
    assert sign_body("s1", b"body") == base


def test_sign_body_encodes_a_unicode_secret_as_utf8() -> None:
    expected = base64.b64encode(hmac.new("clé".encode(), b"x", hashlib.sha256).digest()).decode()
    assert sign_body("clé", b"x") == expected


# -- credit amounts -------------------------------------------------------------------------

DIALECTS: list[Dialect | None] = [sqlite.dialect(), postgresql.dialect(), None]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_credits_three_times_five_hundredths_is_exact(dialect: Any) -> None:
    column = Credits()
    stored = column.process_bind_param(Decimal("0.05") * 3, dialect)
    assert stored == 1500
    loaded = column.process_result_value(stored, dialect)
    assert loaded == Decimal("0.15")
    assert number(loaded) == 0.15


@pytest.mark.parametrize("dialect", DIALECTS)
def test_credits_none_and_integers(dialect: Any) -> None:
    column = Credits()
    assert column.process_bind_param(None, dialect) is None
    assert column.process_result_value(None, dialect) is None
    assert column.process_bind_param(5, dialect) == 50_000
    assert column.process_bind_param(Decimal("-0.0001"), dialect) == -1
    assert column.process_result_value(50_000, dialect) == Decimal(5)
    assert isinstance(column.process_result_value(1, dialect), Decimal)
    assert column.python_type is Decimal


def test_credits_many_small_charges_stay_exact() -> None:
    column = Credits()
    balance = Decimal(1000)
    for _ in range(1000):
        stored = column.process_bind_param(balance - Decimal("0.05"), None)
        loaded = column.process_result_value(stored, None)
        assert loaded is not None
        balance = loaded
    assert balance == Decimal(950)


@given(
    st.decimals(
        min_value=Decimal("-1000000000"),
        max_value=Decimal("1000000000"),
        places=4,
        allow_nan=False,
        allow_infinity=False,
    )
)
def test_credits_round_trip_any_four_place_amount(amount: Decimal) -> None:
    column = Credits()
    stored = column.process_bind_param(amount, None)
    assert isinstance(stored, int)
    assert column.process_result_value(stored, None) == amount


# -- JSON numbers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected", "kind"),
    [
        (Decimal("1"), 1, int),
        (Decimal("1.0000"), 1, int),
        (Decimal("100"), 100, int),
        (Decimal("1E+2"), 100, int),
        (Decimal("0"), 0, int),
        (Decimal("0.0000"), 0, int),
        (Decimal("0.05"), 0.05, float),
        (Decimal("0.1500"), 0.15, float),
        (Decimal("-2.5"), -2.5, float),
        (Decimal("999999.9999"), 999999.9999, float),
    ],
)
def test_number(value: Decimal, expected: float, kind: type) -> None:
    result = number(value)
    assert result == expected
    assert type(result) is kind


def test_number_renders_large_integers_without_exponent() -> None:
    assert json.dumps(number(Decimal("1000000.0000"))) == "1000000"
    assert json.dumps(number(Decimal("0.05") * 3)) == "0.15"


# -- database URLs --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected_async", "expected_sync"),
    [
        ("sqlite:///var/x.db", "sqlite+aiosqlite:///var/x.db", "sqlite:///var/x.db"),
        ("sqlite:////abs/x.db", "sqlite+aiosqlite:////abs/x.db", "sqlite:////abs/x.db"),
        ("sqlite+aiosqlite:///x.db", "sqlite+aiosqlite:///x.db", "sqlite:///x.db"),
        (
            "postgresql://u:secret@db:5433/app?sslmode=require",
            "postgresql+psycopg://u:secret@db:5433/app?sslmode=require",
            "postgresql+psycopg://u:secret@db:5433/app?sslmode=require",
        ),
        (
            "postgresql+asyncpg://u:p@h/db",
            "postgresql+psycopg://u:p@h/db",
            "postgresql+psycopg://u:p@h/db",
        ),
        (
            "postgresql+psycopg2://u@h/db",
            "postgresql+psycopg://u@h/db",
            "postgresql+psycopg://u@h/db",
        ),
        (
            "postgresql+psycopg://u:p%40ss@h/db",
            "postgresql+psycopg://u:p%40ss@h/db",
            "postgresql+psycopg://u:p%40ss@h/db",
        ),
    ],
)
def test_database_url_conversions(url: str, expected_async: str, expected_sync: str) -> None:
    assert async_url(url) == expected_async
    assert sync_url(url) == expected_sync


def test_postgres_scheme_alias_is_accepted() -> None:
    # "postgres://" is how many hosts (Heroku, Render, Fly) hand out DATABASE_URL.
    assert async_url("postgres://u:p@h/db") == "postgresql+psycopg://u:p@h/db"
    assert sync_url("postgres://u:p@h/db") == "postgresql+psycopg://u:p@h/db"


@pytest.mark.parametrize("url", ["mysql://u@h/db", "oracle://u@h/db"])
def test_unsupported_database_is_refused(url: str) -> None:
    for convert in (async_url, sync_url):
        with pytest.raises(ValueError, match="sqlite or postgresql"):
            convert(url)


# -- plans with overrides (D3) --------------------------------------------------------------


def team_plan() -> Plan:
    return Plan(
        name="team",
        api_access=True,
        lightning_scoring=True,
        core_scoring=False,
        enrichment_with_lightning=True,
        enrichment_with_core=False,
        per_second=10,
        per_minute=600,
        per_day=25_000,
        webhook_rate=5,
        cost_per_phone=Decimal("0.05"),
        cost_per_contact=Decimal(1),
        refund_unfound=True,
    )


def test_effective_plan_without_overrides_is_the_plan() -> None:
    plan = effective_plan(team_plan(), {})
    assert asdict(plan) == {
        "name": "team",
        "api_access": True,
        "lightning_scoring": True,
        "core_scoring": False,
        "enrichment_with_lightning": True,
        "enrichment_with_core": False,
        "per_second": 10,
        "per_minute": 600,
        "per_day": 25_000,
        "webhook_rate": 5,
        "cost_per_phone": Decimal("0.05"),
        "cost_per_contact": Decimal(1),
        "refund_unfound": True,
    }


def test_effective_plan_applies_overrides() -> None:
    base = team_plan()
    plan = effective_plan(
        base,
        {
            "per_second": 99,
            "webhook_rate": 20,
            "core_scoring": True,
            "api_access": False,
            "cost_per_phone": 0.03,
            "cost_per_contact": "0.5",
        },
    )
    assert plan.per_second == 99
    assert plan.webhook_rate == 20
    assert plan.core_scoring is True
    assert plan.api_access is False
    assert plan.cost_per_phone == Decimal("0.03")  # exact, not the binary float 0.03
    assert plan.cost_per_contact == Decimal("0.5")
    assert plan.per_minute == 600
    assert plan.features()["coreScoring"] is True
    assert plan.describe()["costPerPhone"] == 0.03
    assert base.per_second == 10  # the stored plan is left alone
    # P202: a client may be kept from refunds its plan gives, or given them.
    assert effective_plan(base, {"refund_unfound": False}).describe()["refundUnfound"] is False


def test_effective_plan_ignores_unknown_overrides_and_keeps_the_name() -> None:
    plan = effective_plan(team_plan(), {"name": "enterprise", "colour": "blue"})
    assert plan.name == "team"
    assert not hasattr(plan, "colour")
    assert plan.per_second == 10


@settings(max_examples=50)
@given(st.integers(min_value=1, max_value=10**6))
def test_effective_plan_rate_override_property(per_day: int) -> None:
    assert effective_plan(team_plan(), {"per_day": per_day}).per_day == per_day


# -- the polling loop and the wakers -----------------------------------------------------------

# Long enough that a test passes only if the loop was woken, not because its poll came round.
NEVER = 3600.0
# A bound on waits for something that should happen at once, for a loaded machine.
PROMPTLY = 10.0


class Steps:
    """A step that counts its calls; ``calls_reach(n)`` waits until there were ``n``."""

    def __init__(self, fail_first: int = 0) -> None:
        self.calls = 0
        self.fail_first = fail_first
        self.changed: asyncio.Event | None = None

    async def __call__(self) -> None:
        self.calls += 1
        if self.changed is not None:
            self.changed.set()
        if self.calls <= self.fail_first:
            raise RuntimeError(f"step {self.calls} failed")

    async def calls_reach(self, count: int) -> None:
        async with asyncio.timeout(PROMPTLY):
            while self.calls < count:
                # Made on the running event loop, which may be another test's next time.
                self.changed = asyncio.Event()
                await self.changed.wait()


async def test_polling_loop_steps_at_once_and_again_when_woken() -> None:
    steps = Steps()
    loop = PollingLoop(steps, poll_seconds=NEVER, name="test loop")
    loop.start()
    try:
        await steps.calls_reach(1)
        assert loop.running
        loop.wake()
        await steps.calls_reach(2)
        # Woken from another thread, as a task on a worker thread does.
        await asyncio.to_thread(loop.wake)
        await steps.calls_reach(3)
    finally:
        await loop.stop()
    assert not loop.running
    assert steps.calls == 3


async def test_a_loop_that_waits_first_steps_only_when_woken_or_its_poll_comes() -> None:
    steps = Steps()
    loop = PollingLoop(steps, poll_seconds=NEVER, name="test loop", wait_first=True)
    loop.start()
    try:
        for _ in range(5):
            await asyncio.sleep(0)  # the loop's task runs up to its wait
        assert loop.running and steps.calls == 0
        loop.wake()
        await steps.calls_reach(1)
    finally:
        await loop.stop()
    assert steps.calls == 1


async def test_polling_loop_steps_again_after_its_poll_interval() -> None:
    steps = Steps()
    loop = PollingLoop(steps, poll_seconds=0.01, name="test loop")
    loop.start()
    try:
        await steps.calls_reach(3)
    finally:
        await loop.stop()


async def test_a_run_of_failing_steps_is_logged_once_and_its_end_once() -> None:
    # A database or Redis away for a while fails every step: one line with the first one's
    # traceback, not one per poll, and one when a step works again; the loop goes on.
    steps = Steps(fail_first=3)
    loop = PollingLoop(steps, poll_seconds=NEVER, name="test loop")
    with capture_logs() as logs:
        loop.start()
        try:
            for calls in range(1, 6):
                await steps.calls_reach(calls)
                loop.wake()
        finally:
            await loop.stop()
    failure, recovery = logs
    assert (failure["event"], failure["log_level"]) == ("test loop failed; retrying", "error")
    assert failure["exc_info"] is True
    assert (recovery["event"], recovery["log_level"]) == ("test loop works again", "warning")
    assert recovery["failed_steps"] == 3


async def test_stop_cancels_a_step_under_way_and_later_wakes_do_nothing() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def hangs() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    loop = PollingLoop(hangs, poll_seconds=NEVER, name="test loop")
    loop.wake()  # not started: nothing to wake
    loop.start()
    async with asyncio.timeout(PROMPTLY):
        await started.wait()
        await loop.stop()
    assert cancelled.is_set()
    assert not loop.running
    loop.wake()
    await asyncio.to_thread(loop.wake)
    await loop.stop()  # stopping twice is harmless


def test_polling_loop_can_run_again_on_another_event_loop() -> None:
    """A loop started, stopped and started again on a new event loop (a second app in one
    test process) does not wait on an event of the old one."""
    steps = Steps()
    loop = PollingLoop(steps, poll_seconds=NEVER, name="test loop")

    async def run_and_wake(calls: int) -> None:
        loop.start()
        try:
            await steps.calls_reach(calls + 1)
            loop.wake()
            await steps.calls_reach(calls + 2)
        finally:
            await loop.stop()

    asyncio.run(run_and_wake(0))
    asyncio.run(run_and_wake(2))
    assert steps.calls == 4


def test_wakers_call_the_registered_loop_by_name_from_any_thread() -> None:
    wakers = Wakers()
    woken: list[str] = []
    wakers.wake("relay")  # no such loop in this process: nothing happens
    wakers.register("relay", lambda: woken.append("relay"))
    wakers.register("dispatcher", lambda: woken.append("dispatcher"))
    assert "relay" in wakers
    wakers.wake("relay")
    thread = threading.Thread(target=wakers.wake, args=("dispatcher",))
    thread.start()
    thread.join()
    assert woken == ["relay", "dispatcher"]
    wakers.unregister("relay")
    wakers.unregister("relay")
    wakers.wake("relay")
    assert "relay" not in wakers
    assert woken == ["relay", "dispatcher"]


def test_route_paths_lists_routes_in_order_with_the_prefixes_they_were_included_with() -> None:
    app = FastAPI()
    jobs = APIRouter(prefix="/jobs")
    jobs.add_api_route("/{jobId}", lambda jobId: jobId)
    pages = APIRouter()
    pages.add_api_route("", lambda: "home")
    app.add_api_route("/first", lambda: "first")
    include_router(app, jobs, prefix="/api/v2")
    app.mount("/static", FastAPI())
    include_router(app, pages, prefix="/app", include_in_schema=False)

    assert route_paths(app)[-4:] == [
        ("/first", False),
        ("/api/v2/jobs/{jobId}", False),
        ("/static", True),
        ("/app", False),
    ]


def test_route_paths_refuses_routers_it_cannot_list_rather_than_leaving_their_routes_out() -> None:
    nested = FastAPI()
    outer = APIRouter()
    outer.include_router(APIRouter(prefix="/inner"))
    include_router(nested, outer, prefix="/api")
    with pytest.raises(RuntimeError, match="include it in the app"):
        route_paths(nested)

    direct = FastAPI()
    direct.include_router(APIRouter(prefix="/api"))
    with pytest.raises(RuntimeError, match="was not included by"):
        route_paths(direct)
