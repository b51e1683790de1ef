"""Account use cases: authentication, plans, credits, and the operator's admin actions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import structlog
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.accounts import repository as repo
from dialscore.accounts.emails import given_email_problem, placeholder_email
from dialscore.accounts.refunds import refund as refund  # P202, a use case of its own module
from dialscore.accounts.schemas import ROLES, EffectivePlan, Principal
from dialscore.kit.clock import canonical_uuid, new_id, utcnow
from dialscore.kit.db import Database
from dialscore.kit.envelope import number
from dialscore.kit.errors import (
    ApiError,
    BadRequest,
    Forbidden,
    NotFound,
    PaymentRequired,
    Unauthorized,
)
from dialscore.kit.security import ForeignSignature, InvalidToken, issue_api_key, read_api_key
from dialscore.kit.text import text_problem
from dialscore.models import ApiKey, Client, Plan, User

log = structlog.get_logger(__name__)

MAX_LABEL_LENGTH = 200
# The largest monthly credit limit a key may carry (P201).
MAX_MONTHLY_LIMIT = Decimal(10**9)
# A key's last use is written at most this often, so that authenticating rarely writes.
KEY_USE_INTERVAL = timedelta(seconds=60)
INTEGER_VALUES = ("per_second", "per_minute", "per_day", "webhook_rate")
BOOLEAN_VALUES = ("refund_unfound",)
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
    principal, _ = await _authenticate(session, secret=secret, authorization=authorization, now=now)
    return principal


async def authenticate_and_record(
    db: Database, *, secret: str, authorization: str | None, now: datetime
) -> Principal:
    """Like ``authenticate`` (in a read transaction), then notes the key's use.

    The key row read to authenticate tells whether its last use is older than
    ``KEY_USE_INTERVAL``; only then does a short write transaction run one conditional
    UPDATE. A busy key therefore costs one write a minute, an idle one none."""
    async with db.read() as session:
        principal, last_used_at = await _authenticate(
            session, secret=secret, authorization=authorization, now=now
        )
    if principal.key_id is not None and (
        last_used_at is None or now - last_used_at >= KEY_USE_INTERVAL
    ):
        try:
            async with db.write() as session:
                await repo.mark_key_used(session, principal.key_id, now, now - KEY_USE_INTERVAL)
                await session.commit()
        except Exception:
            # Noting the use is worth less than answering the request.
            log.warning("cannot record an API key's last use", key_id=principal.key_id)
    return principal


async def _authenticate(
    session: AsyncSession, *, secret: str, authorization: str | None, now: datetime
) -> tuple[Principal, datetime | None]:
    token = bearer_token(authorization)
    try:
        claims = read_api_key(secret, token)
    except ForeignSignature:
        # What a key made by 'dialscore admin' run with another data directory gets (P87).
        raise Unauthorized(
            "invalid API key: it was not signed with this server's secret key (a key made "
            "with another data directory or DIALSCORE_SECRET_KEY is not valid here)"
        ) from None
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
    principal = Principal(
        user_id=user.id,
        client_id=client.id,
        role=user.role,
        key_id=key.id,
        plan=effective_plan(plan, client.overrides),
    )
    return principal, key.last_used_at


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
    key_id: str | None = None,
) -> Decimal:
    """Debits ``amount`` and writes its ledger row; 402 (nothing taken) when it is not covered
    or when it would take the API key ``key_id`` past its monthly credit limit (P201)."""
    if amount <= 0:
        return await current_balance(session, client_id)
    # The client's row first, then the key's: a refund (P202) takes them in that order too,
    # so two transactions never wait for each other's row.
    remaining = await repo.debit_if_covered(session, client_id, amount)
    if remaining is None:
        have = await current_balance(session, client_id)
        raise PaymentRequired(
            f"insufficient credits: this request needs {number(amount)} credits "
            f"and the balance is {number(have)}"
        )
    if key_id is not None:
        month = repo.spending_month(utcnow())
        if await repo.spend_from_key(session, key_id, amount, month) is None:
            # The caller's transaction is rolled back on this error: the debit with it.
            raise PaymentRequired(await _over_limit(session, key_id, amount, month))
    repo.add_ledger_entry(
        session,
        client_id=client_id,
        user_id=user_id,
        job_id=job_id,
        key_id=key_id,
        delta=-amount,
        balance_after=remaining,
        reason=reason,
    )
    return remaining


async def _over_limit(session: AsyncSession, key_id: str, amount: Decimal, month: str) -> str:
    key = await repo.get_key(session, key_id)
    limit = key.monthly_credit_limit if key is not None else None
    if key is None or limit is None:
        return "this API key cannot spend credits"
    left = max(limit - spent_this_month(key, month), Decimal(0))
    return (
        f"monthly credit limit reached: this request needs {number(amount)} credits and this "
        f"API key has {number(left)} of its {number(limit)} left this month (UTC)"
    )


async def key_spending(session: AsyncSession, key_id: str) -> tuple[Decimal | None, Decimal]:
    """An API key's monthly credit limit (None: none) and what it spent this UTC month (P201);
    404 when there is no such key."""
    key = await repo.get_key(session, key_id)
    if key is None:
        raise NotFound(f"no API key with id {key_id}")
    return key.monthly_credit_limit, spent_this_month(key, repo.spending_month(utcnow()))


def spent_this_month(key: ApiKey, month: str) -> Decimal:
    """What ``key`` spent in ``month``: its count, or nothing when it counts another month."""
    return key.spent_this_month if key.spent_month == month else Decimal(0)


async def add_credits(session: AsyncSession, *, client_id: str, amount: Decimal) -> Decimal:
    if amount == 0:
        raise BadRequest("amount must not be zero")
    if amount < 0:
        remaining = await repo.debit_if_covered(session, client_id, -amount)
        if remaining is None:
            await get_client(session, client_id)
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


async def get_client(session: AsyncSession, client_id: str) -> Client:
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
    if admin_email is None:
        # A stand-in until an operator gives the admin an email (P94).
        email = placeholder_email(client.id)
        return client, await _add_user(session, client_id=client.id, email=email, role="admin")
    return client, await create_user(session, client_id=client.id, email=admin_email, role="admin")


async def create_user(session: AsyncSession, *, client_id: str, email: str, role: str) -> User:
    if role not in ROLES:
        raise BadRequest(f"role must be one of {', '.join(ROLES)}")
    email = await _free_email(session, email)
    await get_client(session, client_id)
    return await _add_user(session, client_id=client_id, email=email, role=role)


async def _add_user(session: AsyncSession, *, client_id: str, email: str, role: str) -> User:
    user = User(id=new_id(), client_id=client_id, email=email, role=role, created_at=utcnow())
    session.add(user)
    try:
        await session.flush()
    except IntegrityError:
        raise ApiError(f"a user with email {email} already exists", 409) from None
    return user


async def _free_email(session: AsyncSession, email: str, *, user_id: str | None = None) -> str:
    """``email`` as stored, when no other user of the service has it (P16); else 400 or 409."""
    email = email.strip().lower()
    problem = given_email_problem(email)
    if problem is not None:
        raise BadRequest(problem)
    holder = await repo.get_user_by_email(session, email)
    if holder is not None and holder.id != user_id:
        raise ApiError(f"a user with email {email} already exists", 409)
    return email


async def set_email(session: AsyncSession, *, user_id: str, email: str) -> User:
    """Gives a user an email (their first, for an admin created without one: P94)."""
    user = await find_user(session, user_id=user_id)
    user.email = await _free_email(session, email, user_id=user.id)
    return user


def check_label(label: str | None) -> str | None:
    """A key's label, trimmed; 400 when it is blank, too long or unstorable (P74)."""
    if label is None:
        return None
    label = label.strip()
    if not label:
        raise BadRequest("the label must not be blank")
    if len(label) > MAX_LABEL_LENGTH:
        raise BadRequest(f"the label must have at most {MAX_LABEL_LENGTH} characters")
    problem = text_problem(label)
    if problem is not None:
        raise BadRequest(f"the label {problem}")
    return label


async def find_user(session: AsyncSession, *, user_id: str) -> User:
    """A user of any client, by an id given from outside (a form, a path, the CLI); 404 when
    none has it, as for an id that is not a UUID."""
    canonical = canonical_uuid(user_id)
    user = None if canonical is None else await repo.get_user(session, canonical)
    if user is None:
        raise NotFound(f"no user with id {user_id}")
    return user


async def create_key(
    session: AsyncSession,
    *,
    user_id: str,
    secret: str,
    expires_at: datetime | None = None,
    label: str | None = None,
    monthly_credit_limit: Decimal | None = None,
) -> CreatedKey:
    """A new API key of the user; ``monthly_credit_limit``: the credits its submissions may
    spend in a UTC calendar month (P201), none when None."""
    user = await find_user(session, user_id=user_id)
    now = utcnow()
    key = ApiKey(
        id=new_id(),
        user_id=user.id,
        client_id=user.client_id,
        created_at=now,
        expires_at=expires_at,
        label=check_label(label),
        monthly_credit_limit=check_monthly_limit(monthly_credit_limit),
        spent_this_month=Decimal(0),
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


def check_monthly_limit(value: Decimal | None) -> Decimal | None:
    """A monthly credit limit as given; 400 unless it is a whole or decimal number of
    credits from 0 (a key that may spend nothing) to a billion, to four places."""
    if value is None:
        return None
    if not value.is_finite() or value < 0 or value > MAX_MONTHLY_LIMIT:
        raise BadRequest(f"the monthly credit limit must be a number from 0 to {MAX_MONTHLY_LIMIT}")
    if value != value.quantize(Decimal("0.0001")):
        raise BadRequest("the monthly credit limit has more than 4 decimal places")
    return value


async def revoke_key(session: AsyncSession, *, key_id: str, client_id: str | None = None) -> ApiKey:
    """Revokes a key (only one of ``client_id``'s, when given: another's is not found)."""
    canonical = canonical_uuid(key_id)
    key = None if canonical is None else await repo.get_key(session, canonical)
    if key is None or (client_id is not None and key.client_id != client_id):
        raise NotFound(f"no API key with id {key_id}")
    if key.revoked_at is None:
        key.revoked_at = utcnow()
    return key


async def set_plan(session: AsyncSession, *, client_id: str, plan: str) -> EffectivePlan:
    client = await get_client(session, client_id)
    plan_row = await _plan(session, plan)
    client.plan_name = plan_row.name
    return effective_plan(plan_row, client.overrides)


async def set_overrides(
    session: AsyncSession, *, client_id: str, values: dict[str, int | None]
) -> EffectivePlan:
    """Replaces the client's value for each given name (a bool for ``refund_unfound``);
    None removes the override."""
    client = await get_client(session, client_id)
    overrides = dict(client.overrides)
    for name, value in values.items():
        if name not in INTEGER_VALUES + BOOLEAN_VALUES:
            raise BadRequest(f"'{name}' cannot be overridden here")
        if value is None:
            overrides.pop(name, None)
        elif name in BOOLEAN_VALUES:
            if not isinstance(value, bool):
                raise BadRequest(f"{name} must be true or false")
            overrides[name] = value
        elif value < 1:
            raise BadRequest(f"{name} must be at least 1")
        else:
            overrides[name] = value
    client.overrides = overrides
    return effective_plan(await _plan(session, client.plan_name), overrides)


async def client_plan(session: AsyncSession, *, client_id: str) -> EffectivePlan:
    client = await get_client(session, client_id)
    return effective_plan(await _plan(session, client.plan_name), client.overrides)
