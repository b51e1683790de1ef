"""Operator commands; each prints one JSON object on stdout."""

from __future__ import annotations

import getpass
import sys
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dialscore.cli.output import emit, fail, run_with_db

if TYPE_CHECKING:
    from dialscore.config import Settings
    from dialscore.kit.db import Database
    from dialscore.models import OutboxMessage, User

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


PASSWORD_STDIN_HELP = (
    "Read a web app password for the user from standard input (not echoed on a terminal)"
)


def _read_password() -> str:
    """A password from standard input: asked for twice without echo on a terminal, else the
    first line (its line ending removed). Exits with {error} when it cannot be used."""
    from dialscore.kit.errors import ApiError
    from dialscore.signin.service import check_password

    if sys.stdin.isatty():
        password = getpass.getpass("Password: ")
        if password and getpass.getpass("Password again: ") != password:
            fail("the two passwords are not the same")
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        fail("no password on standard input")
    try:
        return check_password(password)
    except ApiError as exc:
        fail(exc.message)
        raise


def _sign_in(user: User) -> dict[str, Any]:
    """What a person signs in to the web app with: the user's email (null for one created
    without: P94) and whether a password is set, with the step that is missing, if any."""
    from dialscore.accounts.emails import shown_email

    email = shown_email(user.email)
    shown: dict[str, Any] = {"email": email, "passwordSet": user.password_hash is not None}
    command = f"dialscore admin set-password --user {user.id}"
    if email is None:
        shown["signIn"] = (
            f"no email yet, so no sign-in to the web app: give one with '{command} --email EMAIL'"
        )
    elif user.password_hash is None and user.deactivated_at is None:
        shown["signIn"] = (
            f"no password yet: set one with '{command}', or add --link for a one-time link "
            "the user sets it with"
        )
    return shown


@admin.command("create-client")
def create_client(
    name: Annotated[str, typer.Option(help="Company name")],
    plan: Annotated[str, typer.Option(help="free, team, business or enterprise")] = "team",
    credits: Annotated[str, typer.Option(help="Opening credit balance")] = "0",
    email: Annotated[
        str | None,
        typer.Option(help="Email of the admin user, who signs in to the web app with it"),
    ] = None,
    password_stdin: Annotated[bool, typer.Option(help=PASSWORD_STDIN_HELP)] = False,
) -> None:
    """Create a client with an admin user and an API key for that user."""
    amount = _amount(credits)
    if password_stdin and email is None:
        fail("--password-stdin needs --email too: the admin signs in with their email")
    password = _read_password() if password_stdin else None

    async def action(db: Database, settings: Settings) -> dict[str, Any]:
        from dialscore.accounts import service
        from dialscore.signin import service as signin

        async with db.unit_of_work() as session:
            client, user = await service.create_client(
                session, name=name, plan=plan, credits=amount, admin_email=email
            )
            key = await service.create_key(
                session, user_id=user.id, secret=settings.resolved_secret_key
            )
            if password is not None:
                await signin.set_password(session, user_id=user.id, password=password)
        return {"clientId": client.id, "userId": user.id, "apiKey": key.api_key, **_sign_in(user)}

    emit(run_with_db(action))


@admin.command("create-user")
def create_user(
    client: Annotated[str, typer.Option(help="Client id")],
    email: Annotated[str, typer.Option(help="Email address")],
    role: Annotated[str, typer.Option(help="admin or member")] = "member",
    password_stdin: Annotated[bool, typer.Option(help=PASSWORD_STDIN_HELP)] = False,
) -> None:
    """Add a user to a client."""
    password = _read_password() if password_stdin else None

    async def action(db: Database, settings: Settings) -> dict[str, Any]:
        from dialscore.accounts import service
        from dialscore.signin import service as signin

        async with db.unit_of_work() as session:
            user = await service.create_user(session, client_id=client, email=email, role=role)
            if password is not None:
                await signin.set_password(session, user_id=user.id, password=password)
        return {"userId": user.id, **_sign_in(user)}

    emit(run_with_db(action))


@admin.command("list-users")
def list_users(client: Annotated[str, typer.Option(help="Client id")]) -> None:
    """List a client's users: email, role, whether active, whether a password is set."""

    async def action(db: Database, settings: Settings) -> dict[str, Any]:
        from dialscore.accounts import team

        async with db.read() as session:
            users = await team.list_users(session, client_id=client)
        shown = []
        for user in users:
            sign_in = _sign_in(user)
            email = sign_in.pop("email")
            active = user.deactivated_at is None
            shown.append(
                {"userId": user.id, "email": email, "role": user.role, "active": active, **sign_in}
            )
        return {"clientId": client, "count": len(shown), "users": shown}

    emit(run_with_db(action))


def _link_base(base_url: str | None, settings: Settings) -> str:
    """Where people open the web app: ``base_url``, else where ``serve`` listens."""
    if base_url is not None:
        if not base_url.startswith(("http://", "https://")):
            fail("--base-url must start with http:// or https://")
        return base_url.rstrip("/")
    # An address that means every interface is reached, from this machine, at its loopback.
    host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(settings.host, settings.host)
    return f"http://{f'[{host}]' if ':' in host else host}:{settings.port}"


@admin.command("set-password")
def set_password(
    user: Annotated[str, typer.Option(help="User id")],
    email: Annotated[
        str | None,
        typer.Option(help="Give the user this email too (one created without an email needs it)"),
    ] = None,
    link: Annotated[
        bool,
        typer.Option(
            "--link",
            help=(
                "Instead of reading a password, print a one-time link (valid 24 hours) with "
                "which the user sets their own"
            ),
        ),
    ] = False,
    base_url: Annotated[
        str | None,
        typer.Option(
            help=(
                "Where people open the service, for the link "
                "(default: http://DIALSCORE_HOST:DIALSCORE_PORT)"
            ),
            show_default=False,
        ),
    ] = None,
) -> None:
    """Set a user's web app password, read from standard input (not echoed on a terminal),
    and end the user's open sessions; or, with --link, print a one-time link to set it.
    With --email, give the user that email first."""
    if base_url is not None and not link:
        fail("--base-url is where the --link points: give --link too")

    async def action(db: Database, settings: Settings) -> dict[str, Any]:
        from dialscore.accounts import service
        from dialscore.accounts.emails import is_placeholder
        from dialscore.kit.clock import isoformat, utcnow
        from dialscore.kit.errors import BadRequest
        from dialscore.signin import service as signin
        from dialscore.signin.schemas import policy

        # Checked before a password is asked for, and outside the write, which must not wait
        # on a person typing.
        async with db.read() as session:
            row = await service.find_user(session, user_id=user)
        if email is None and is_placeholder(row.email):
            raise BadRequest(
                f"user {row.id} has no email yet, and a person signs in to the web app with "
                f"one: give it with 'dialscore admin set-password --user {row.id} --email EMAIL'"
            )
        prefix = _link_base(base_url, settings) if link else ""
        password = None if link else _read_password()
        now, rules = utcnow(), policy(settings)
        async with db.unit_of_work() as session:
            row, token = await signin.give_sign_in(
                session, user_id=row.id, email=email, password=password, now=now, policy=rules
            )
        shown = {"userId": row.id, **_sign_in(row)}
        if token is None:
            return shown
        return {
            **shown,
            "passwordLink": f"{prefix}/app/set-password/{token}",
            "linkExpiresAt": isoformat(now + rules.password_link_lifetime),
        }

    emit(run_with_db(action))


@admin.command("create-key")
def create_key(
    user: Annotated[str, typer.Option(help="User id")],
    monthly_credit_limit: Annotated[
        str | None,
        typer.Option(
            help="Credits the key's submissions may spend in a UTC calendar month (no limit "
            "when not given)",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Issue an API key acting as a user; the key is shown only now."""
    limit = None if monthly_credit_limit is None else _amount(monthly_credit_limit)

    async def action(db: Database, settings: Settings) -> dict[str, Any]:
        from dialscore.accounts import service
        from dialscore.kit.envelope import number

        async with db.unit_of_work() as session:
            key = await service.create_key(
                session,
                user_id=user,
                secret=settings.resolved_secret_key,
                monthly_credit_limit=limit,
            )
        return {
            "keyId": key.key_id,
            "apiKey": key.api_key,
            "monthlyCreditLimit": None if limit is None else number(limit),
        }

    emit(run_with_db(action))


@admin.command("revoke-key")
def revoke_key(key: Annotated[str, typer.Option(help="Key id")]) -> None:
    """Revoke an API key; it answers 401 from now on."""

    async def action(db: Database, settings: Settings) -> dict[str, Any]:
        from dialscore.accounts import service

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
        from dialscore.accounts import service
        from dialscore.kit.envelope import number

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
        from dialscore.accounts import service

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
    refund_unfound: Annotated[
        bool | None,
        typer.Option(
            "--refund-unfound/--no-refund-unfound",
            help="Whether finished enrichment jobs refund the contacts no new number was found "
            "for (P202); the plan's choice when not given",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Override a client's rate limits and refunds; prints its effective plan values."""
    values = {
        "per_second": per_second,
        "per_minute": per_minute,
        "per_day": per_day,
        "webhook_rate": webhook_rate,
        "refund_unfound": refund_unfound,
    }
    given = {k: v for k, v in values.items() if v is not None}

    async def action(db: Database, settings: Settings) -> dict[str, Any]:
        from dialscore.accounts import service

        async with db.unit_of_work() as session:
            if given:
                plan = await service.set_overrides(session, client_id=client, values=dict(given))
            else:
                plan = await service.client_plan(session, client_id=client)
        return {"clientId": client, **plan.describe()}

    emit(run_with_db(action))


@admin.command("tally-calls")
def tally_calls(client: Annotated[str, typer.Option(help="Client id")]) -> None:
    """Count a client's reported calls of the last 90 days again by line type, time zone and
    local hour, what its best hours to call are learnt from (for calls reported before these
    counts were kept, or after the time zone data changed); prints how many calls."""

    async def action(db: Database, settings: Settings) -> dict[str, Any]:
        from dialscore.accounts import service as accounts
        from dialscore.calls import service as calls
        from dialscore.kit.clock import utcnow

        async with db.unit_of_work() as session:
            await accounts.get_client(session, client_id=client)  # 404 for an unknown client
            counted = await calls.rebuild_tallies(session, client_id=client, now=utcnow())
        return {"clientId": client, "calls": counted}

    emit(run_with_db(action))


@admin.command("show-callback-secret")
def show_callback_secret(user: Annotated[str, typer.Option(help="User id")]) -> None:
    """Show the secret that signs a user's version 1 contact callbacks (made on first use)."""

    async def action(db: Database, settings: Settings) -> dict[str, Any]:
        from dialscore.v1 import service as v1

        async with db.unit_of_work() as session:
            secret = await v1.callback_secret(
                session, user_id=user, server_secret=settings.resolved_secret_key
            )
        return {"userId": user, "callbackSecret": secret}

    emit(run_with_db(action))


def _failed_message(message: OutboxMessage) -> dict[str, Any]:
    from dialscore.kit.clock import isoformat

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
        from dialscore.kit.clock import utcnow
        from dialscore.kit.errors import NotFound
        from dialscore.outbox import failed

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
