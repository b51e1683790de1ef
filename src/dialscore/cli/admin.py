"""Operator commands; each prints one JSON object on stdout."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

import typer

from dialscore.accounts import service
from dialscore.cli.output import emit, fail, run_with_db
from dialscore.config import Settings
from dialscore.kit.clock import isoformat, utcnow
from dialscore.kit.db import Database
from dialscore.kit.envelope import number
from dialscore.kit.errors import NotFound
from dialscore.models import OutboxMessage
from dialscore.outbox import failed
from dialscore.v1 import service as v1

admin = typer.Typer(
    help="Manage clients, users, keys, credits and plans, and work that failed",
    no_args_is_help=True,
)


def _amount(text: str) -> Decimal:
    try:
        value = Decimal(text)
    except InvalidOperation:
        fail(f"not a number: {text}")
        raise
    if not value.is_finite() or value != value.quantize(Decimal("0.0001")):
        fail("credit amounts have at most 4 decimal places")
    return value


@admin.command("create-client")
def create_client(
    name: Annotated[str, typer.Option(help="Company name")],
    plan: Annotated[str, typer.Option(help="free, team, business or enterprise")] = "team",
    credits: Annotated[str, typer.Option(help="Opening credit balance")] = "0",
    email: Annotated[str | None, typer.Option(help="Email of the admin user")] = None,
) -> None:
    """Create a client with an admin user and an API key for that user."""
    amount = _amount(credits)

    async def action(db: Database, settings: Settings) -> dict[str, Any]:
        async with db.unit_of_work() as session:
            client, user = await service.create_client(
                session, name=name, plan=plan, credits=amount, admin_email=email
            )
            key = await service.create_key(
                session, user_id=user.id, secret=settings.resolved_secret_key
            )
        return {"clientId": client.id, "userId": user.id, "apiKey": key.api_key}

    emit(run_with_db(action))


@admin.command("create-user")
def create_user(
    client: Annotated[str, typer.Option(help="Client id")],
    email: Annotated[str, typer.Option(help="Email address")],
    role: Annotated[str, typer.Option(help="admin or member")] = "member",
) -> None:
    """Add a user to a client."""

    async def action(db: Database, settings: Settings) -> dict[str, Any]:
        async with db.unit_of_work() as session:
            user = await service.create_user(session, client_id=client, email=email, role=role)
        return {"userId": user.id}

    emit(run_with_db(action))


@admin.command("create-key")
def create_key(user: Annotated[str, typer.Option(help="User id")]) -> None:
    """Issue an API key acting as a user; the key is shown only now."""

    async def action(db: Database, settings: Settings) -> dict[str, Any]:
        async with db.unit_of_work() as session:
            key = await service.create_key(
                session, user_id=user, secret=settings.resolved_secret_key
            )
        return {"keyId": key.key_id, "apiKey": key.api_key}

    emit(run_with_db(action))


@admin.command("revoke-key")
def revoke_key(key: Annotated[str, typer.Option(help="Key id")]) -> None:
    """Revoke an API key; it answers 401 from now on."""

    async def action(db: Database, settings: Settings) -> dict[str, Any]:
        async with db.unit_of_work() as session:
            row = await service.revoke_key(session, key_id=key)
        return {"keyId": row.id, "revoked": True}

    emit(run_with_db(action))


@admin.command("add-credits")
def add_credits(
    client: Annotated[str, typer.Option(help="Client id")],
    amount: Annotated[str, typer.Option(help="Credits to add (negative to remove)")],
) -> None:
    """Add credits to a client's balance (recorded in the ledger)."""
    value = _amount(amount)

    async def action(db: Database, settings: Settings) -> dict[str, Any]:
        async with db.unit_of_work() as session:
            balance = await service.add_credits(session, client_id=client, amount=value)
        return {"clientId": client, "credits": number(balance)}

    emit(run_with_db(action))


@admin.command("set-plan")
def set_plan(
    client: Annotated[str, typer.Option(help="Client id")],
    plan: Annotated[str, typer.Option(help="free, team, business or enterprise")],
) -> None:
    """Move a client to another plan; prints its effective plan values."""

    async def action(db: Database, settings: Settings) -> dict[str, Any]:
        async with db.unit_of_work() as session:
            values = await service.set_plan(session, client_id=client, plan=plan)
        return {"clientId": client, **values.describe()}

    emit(run_with_db(action))


@admin.command("set-limits")
def set_limits(
    client: Annotated[str, typer.Option(help="Client id")],
    per_second: Annotated[int | None, typer.Option(help="Requests per second")] = None,
    per_minute: Annotated[int | None, typer.Option(help="Requests per minute")] = None,
    per_day: Annotated[int | None, typer.Option(help="Requests per day")] = None,
    webhook_rate: Annotated[int | None, typer.Option(help="Webhook deliveries per second")] = None,
) -> None:
    """Override a client's rate limits; prints its effective plan values."""
    values = {
        "per_second": per_second,
        "per_minute": per_minute,
        "per_day": per_day,
        "webhook_rate": webhook_rate,
    }
    given = {k: v for k, v in values.items() if v is not None}

    async def action(db: Database, settings: Settings) -> dict[str, Any]:
        async with db.unit_of_work() as session:
            if given:
                plan = await service.set_overrides(session, client_id=client, values=dict(given))
            else:
                plan = await service.client_plan(session, client_id=client)
        return {"clientId": client, **plan.describe()}

    emit(run_with_db(action))


@admin.command("show-callback-secret")
def show_callback_secret(user: Annotated[str, typer.Option(help="User id")]) -> None:
    """Show the secret that signs a user's version 1 contact callbacks (made on first use)."""

    async def action(db: Database, settings: Settings) -> dict[str, Any]:
        async with db.unit_of_work() as session:
            secret = await v1.callback_secret(
                session, user_id=user, server_secret=settings.resolved_secret_key
            )
        return {"userId": user, "callbackSecret": secret}

    emit(run_with_db(action))


def _failed_message(message: OutboxMessage) -> dict[str, Any]:
    return {
        "id": message.id,
        "actor": message.actor,
        "payload": message.payload,
        "attempts": message.attempts,
        "lastError": message.last_error,
        "failedAt": isoformat(message.failed_at),
        "createdAt": isoformat(message.created_at),
    }


@admin.command("failed-work")
def failed_work(
    requeue: Annotated[
        int | None,
        typer.Option("--requeue", help="Make this message due again, its attempts reset"),
    ] = None,
    requeue_all: Annotated[
        bool, typer.Option("--requeue-all", help="Requeue every message set aside")
    ] = False,
) -> None:
    """List the background work set aside after failing DIALSCORE_OUTBOX_MAX_ATTEMPTS times
    (its last error included), or put it back in the queue."""
    if requeue is not None and requeue_all:
        fail("give --requeue ID or --requeue-all, not both")

    async def action(db: Database, settings: Settings) -> dict[str, Any]:
        if requeue is None and not requeue_all:
            async with db.read() as session:
                messages = await failed.list_failed(session)
            return {"count": len(messages), "messages": [_failed_message(m) for m in messages]}
        async with db.unit_of_work() as session:
            ids = await failed.requeue(
                session, now=utcnow(), outbox_ids=None if requeue_all else [requeue or 0]
            )
            if requeue is not None and not ids:
                raise NotFound(f"no work set aside with id {requeue}")
        return {"requeued": ids}

    emit(run_with_db(action))
