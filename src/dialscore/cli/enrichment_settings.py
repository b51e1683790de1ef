"""Operator commands for a client's own enrichment settings (P204): its own API keys for the
paid providers, and the order its sources are tried in. Each prints one JSON object; a key is
shown by its last four characters only."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dialscore.cli.output import emit, fail, run_with_db

if TYPE_CHECKING:
    from dialscore.config import Settings
    from dialscore.kit.db import Database


def add_enrichment_commands(admin: typer.Typer) -> None:
    admin.command("set-provider-key")(set_provider_key)
    admin.command("set-enrichment-order")(set_enrichment_order)


def _read_key() -> str:
    """The key from standard input: asked for without echo on a terminal, else all that is
    piped in (the checks refuse a key of several lines)."""
    if sys.stdin.isatty():
        typed: str = typer.prompt("API key", hide_input=True, err=True)
        return typed
    return sys.stdin.read()


def set_provider_key(
    client: Annotated[str, typer.Option(help="Client id")],
    provider: Annotated[str, typer.Option(help="pdl (People Data Labs) or apollo (Apollo)")],
    clear: Annotated[
        bool, typer.Option("--clear", help="Remove the client's own key for the provider")
    ] = False,
) -> None:
    """Set a client's own API key for an enrichment provider, read from standard input (asked
    for without echo on a terminal), replacing any it had; or, with --clear, remove it. Jobs
    of the client then call the provider with that key. Prints the last four characters only."""
    from dialscore.enrichment.client_settings import check_provider

    try:
        check_provider(provider)
    except ValueError as exc:
        fail(str(exc))

    async def action(db: Database, settings: Settings) -> dict[str, Any]:
        from dialscore.accounts import service as accounts
        from dialscore.enrichment import client_settings
        from dialscore.kit.clock import isoformat, utcnow

        # The client is checked before a key is asked for, and outside the write, which must
        # not wait on a person typing.
        async with db.read() as session:
            await accounts.get_client(session, client)
        if clear:
            async with db.unit_of_work() as session:
                removed = await client_settings.clear_provider_key(
                    session, client_id=client, provider=provider
                )
            return {"clientId": client, "provider": provider, "removed": removed}
        api_key = _read_key()
        try:
            api_key = client_settings.check_api_key(api_key)
        except ValueError as exc:
            fail(str(exc))
        async with db.unit_of_work() as session:
            shown = await client_settings.set_provider_key(
                session,
                client_id=client,
                provider=provider,
                api_key=api_key,
                server_secret=settings.resolved_secret_key,
                user_id=None,
                now=utcnow(),
            )
        return {
            "clientId": client,
            "provider": shown.provider,
            "lastFour": shown.last_four,
            "updatedAt": isoformat(shown.updated_at),
        }

    emit(run_with_db(action))


def set_enrichment_order(
    client: Annotated[str, typer.Option(help="Client id")],
    order: Annotated[
        str | None,
        typer.Option(
            help="Source names separated by commas, first tried first (history, directory, "
            "pdl, apollo); the sources not named follow in the service's order",
            show_default=False,
        ),
    ] = None,
    reset: Annotated[bool, typer.Option("--reset", help="Go back to the service's order")] = False,
) -> None:
    """Set the order a client's enrichment sources are tried in, or go back to the service's
    (DIALSCORE_ENRICHMENT_SOURCES) with --reset; without either, show it. The client's order
    only reorders the sources the service tries. Prints the order stored (null: the
    service's) and the order its jobs use."""
    if order is not None and reset:
        fail("give --order or --reset, not both")
    names = None if order is None else [name.strip() for name in order.split(",")]
    if names is not None and not any(names):
        fail("--order names no source: give names separated by commas, or --reset")

    async def action(db: Database, settings: Settings) -> dict[str, Any]:
        from dialscore.accounts import service as accounts
        from dialscore.enrichment import client_settings

        if names is None and not reset:
            async with db.read() as session:
                await accounts.get_client(session, client)
                stored = await client_settings.enrichment_order(session, client)
        else:
            async with db.unit_of_work() as session:
                try:
                    stored = await client_settings.set_enrichment_order(
                        session,
                        client_id=client,
                        order=[name for name in names or () if name],
                        settings=settings,
                    )
                except ValueError as exc:
                    fail(str(exc))
                    raise
        return {
            "clientId": client,
            "order": None if stored is None else list(stored),
            "effectiveOrder": client_settings.effective_order(settings, stored),
        }

    emit(run_with_db(action))
