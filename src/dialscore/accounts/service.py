"""Account use cases: authentication, plans, credits, and the operator's admin actions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.accounts import repository as repo
from dialscore.accounts.schemas import ROLES, EffectivePlan, Principal
from dialscore.kit.clock import new_id, utcnow
from dialscore.kit.envelope import number
from dialscore.kit.errors import (
    ApiError,
    BadRequest,
    Forbidden,
    NotFound,
    PaymentRequired,
    Unauthorized,
)
from dialscore.kit.security import InvalidToken, issue_api_key, read_api_key
from dialscore.models import ApiKey, Client, Plan, User

INTEGER_VALUES = ("per_second", "per_minute", "per_day", "webhook_rate")
DECIMAL_VALUES = ("cost_per_phone", "cost_per_contact")


def effective_plan(plan: Plan, overrides: dict[str, Any]) -> EffectivePlan:
    values: dict[str, Any] = {name: getattr(plan, name) for name in EffectivePlan.value_names()}
    for name, value in overrides.items():
        if name in DECIMAL_VALUES:
            values[name] = Decimal(str(value))
        elif name in values:
            values[name] = value
    return EffectivePlan(name=plan.name, **values)


# -- authentication ---------------------------------------------------------------------------


def bearer_token(authorization: str | None) -> str:
    if not authorization:
        raise Unauthorized("missing Authorization header: send 'Authorization: Bearer <API key>'")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("the Authorization header must be 'Bearer <API key>'")
    return token.strip()


async def authenticate(
    session: AsyncSession, *, secret: str, authorization: str | None, now: datetime
) -> Principal:
    """The principal of a bearer token; 401 for anything but a live key of ours."""
    token = bearer_token(authorization)
    try:
        claims = read_api_key(secret, token)
    except InvalidToken:
        raise Unauthorized("invalid API key") from None
    rows = await repo.principal_rows(session, claims.key_id)
    if rows is None:
        raise Unauthorized("invalid API key")
    key, user, client, plan = rows
    if key.user_id != claims.user_id or key.client_id != claims.client_id:
        raise Unauthorized("invalid API key")
    if key.revoked_at is not None:
        raise Unauthorized("this API key has been revoked")
    if user.deactivated_at is not None:
        raise Unauthorized("this API key's user has been deactivated")
    if key.expires_at is not None and key.expires_at <= now:
        raise Unauthorized("this API key has expired")
    return Principal(
        user_id=user.id,
        client_id=client.id,
        role=user.role,
        key_id=key.id,
        plan=effective_plan(plan, client.overrides),
    )


def require_api_access(principal: Principal) -> Principal:
    if not principal.plan.api_access:
        raise Forbidden(f"the '{principal.plan.name}' plan has no API access")
    return principal


# -- credits ----------------------------------------------------------------------------------


async def current_balance(session: AsyncSession, client_id: str) -> Decimal:
    value = await repo.balance(session, client_id)
    if value is None:
        raise NotFound("no such client")
    return value


async def charge(
    session: AsyncSession,
    *,
    client_id: str,
    user_id: str,
    amount: Decimal,
    reason: str,
    job_id: str | None = None,
) -> Decimal:
    """Debits ``amount`` and writes its ledger row; 402 (nothing taken) when it is not covered."""
    if amount <= 0:
        return await current_balance(session, client_id)
    remaining = await repo.debit_if_covered(session, client_id, amount)
    if remaining is None:
        have = await current_balance(session, client_id)
        raise PaymentRequired(
            f"insufficient credits: this request needs {number(amount)} credits "
            f"and the balance is {number(have)}"
        )
    repo.add_ledger_entry(
        session,
        client_id=client_id,
        user_id=user_id,
        job_id=job_id,
        delta=-amount,
        balance_after=remaining,
        reason=reason,
    )
    return remaining


async def add_credits(session: AsyncSession, *, client_id: str, amount: Decimal) -> Decimal:
    if amount == 0:
        raise BadRequest("amount must not be zero")
    if amount < 0:
        remaining = await repo.debit_if_covered(session, client_id, -amount)
        if remaining is None:
            await _client(session, client_id)
            raise BadRequest("cannot remove more credits than the balance holds")
    else:
        credited = await repo.credit(session, client_id, amount)
        if credited is None:
            raise NotFound(f"no client with id {client_id}")
        remaining = credited
    repo.add_ledger_entry(
        session, client_id=client_id, delta=amount, balance_after=remaining, reason="operator"
    )
    return remaining


# -- operator actions -------------------------------------------------------------------------


@dataclass(frozen=True)
class CreatedKey:
    key_id: str
    api_key: str


async def _client(session: AsyncSession, client_id: str) -> Client:
    client = await repo.get_client(session, client_id)
    if client is None:
        raise NotFound(f"no client with id {client_id}")
    return client


async def _plan(session: AsyncSession, name: str) -> Plan:
    plan = await repo.get_plan(session, name)
    if plan is None:
        names = ", ".join(await repo.list_plan_names(session))
        raise BadRequest(f"unknown plan '{name}' (plans: {names})")
    return plan


async def create_client(
    session: AsyncSession, *, name: str, plan: str, credits: Decimal, admin_email: str | None
) -> tuple[Client, User]:
    if not name.strip():
        raise BadRequest("name must not be blank")
    if credits < 0:
        raise BadRequest("credits must not be negative")
    await _plan(session, plan)
    now = utcnow()
    client = Client(
        id=new_id(),
        name=name.strip(),
        plan_name=plan,
        overrides={},
        credits=credits,
        created_at=now,
    )
    session.add(client)
    await session.flush()
    if credits:
        repo.add_ledger_entry(
            session, client_id=client.id, delta=credits, balance_after=credits, reason="operator"
        )
    email = admin_email or f"admin+{client.id}@clients.dialscore.invalid"
    user = await create_user(session, client_id=client.id, email=email, role="admin")
    return client, user


async def create_user(session: AsyncSession, *, client_id: str, email: str, role: str) -> User:
    if role not in ROLES:
        raise BadRequest(f"role must be one of {', '.join(ROLES)}")
    email = email.strip().lower()
    if "@" not in email:
        raise BadRequest("email must be an email address")
    await _client(session, client_id)
    if await repo.get_user_by_email(session, email) is not None:
        raise ApiError(f"a user with email {email} already exists", 409)
    user = User(id=new_id(), client_id=client_id, email=email, role=role, created_at=utcnow())
    session.add(user)
    try:
        await session.flush()
    except IntegrityError:
        raise ApiError(f"a user with email {email} already exists", 409) from None
    return user


async def create_key(
    session: AsyncSession, *, user_id: str, secret: str, expires_at: datetime | None = None
) -> CreatedKey:
    user = await repo.get_user(session, user_id)
    if user is None:
        raise NotFound(f"no user with id {user_id}")
    now = utcnow()
    key = ApiKey(
        id=new_id(),
        user_id=user.id,
        client_id=user.client_id,
        created_at=now,
        expires_at=expires_at,
    )
    session.add(key)
    await session.flush()
    token = issue_api_key(
        secret,
        user_id=user.id,
        client_id=user.client_id,
        key_id=key.id,
        issued_at=now,
        expires_at=expires_at,
    )
    return CreatedKey(key_id=key.id, api_key=token)


async def revoke_key(session: AsyncSession, *, key_id: str) -> ApiKey:
    key = await repo.get_key(session, key_id)
    if key is None:
        raise NotFound(f"no API key with id {key_id}")
    if key.revoked_at is None:
        key.revoked_at = utcnow()
    return key


async def set_plan(session: AsyncSession, *, client_id: str, plan: str) -> EffectivePlan:
    client = await _client(session, client_id)
    plan_row = await _plan(session, plan)
    client.plan_name = plan_row.name
    return effective_plan(plan_row, client.overrides)


async def set_overrides(
    session: AsyncSession, *, client_id: str, values: dict[str, int | None]
) -> EffectivePlan:
    """Replaces the client's value for each given name; None removes the override."""
    client = await _client(session, client_id)
    overrides = dict(client.overrides)
    for name, value in values.items():
        if name not in INTEGER_VALUES:
            raise BadRequest(f"'{name}' cannot be overridden here")
        if value is None:
            overrides.pop(name, None)
        elif value < 1:
            raise BadRequest(f"{name} must be at least 1")
        else:
            overrides[name] = value
    client.overrides = overrides
    return effective_plan(await _plan(session, client.plan_name), overrides)


async def client_plan(session: AsyncSession, *, client_id: str) -> EffectivePlan:
    client = await _client(session, client_id)
    return effective_plan(await _plan(session, client.plan_name), client.overrides)
