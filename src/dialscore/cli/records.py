"""Operator commands that print a client's records: the Reassigned Numbers Database queries
(P195), as one JSON object or, with --csv, as CSV."""

from __future__ import annotations

import csv
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dialscore.cli.output import emit, fail, run_with_db

if TYPE_CHECKING:
    from datetime import datetime

    from dialscore.config import Settings
    from dialscore.kit.db import Database

# The columns of --csv, the names of the API's fields.
RND_COLUMNS = ("number", "consentDate", "askedAt", "answer", "jobId", "contactId")


def add_record_commands(admin: typer.Typer) -> None:
    admin.command("rnd-queries")(rnd_queries)


def _since(text: str | None) -> datetime:
    from dialscore.accuracy.service import parse_since
    from dialscore.kit.clock import utcnow
    from dialscore.kit.errors import ApiError

    try:
        return parse_since(text, utcnow())
    except ApiError as exc:
        fail(exc.message.replace("since", "--since", 1))
        raise


def rnd_queries(
    client: Annotated[str, typer.Option(help="Client id")],
    since: Annotated[
        str | None,
        typer.Option(
            help="From this ISO 8601 date (midnight UTC) or date-time with a time zone; "
            "default 90 days ago",
            show_default=False,
        ),
    ] = None,
    as_csv: Annotated[
        bool, typer.Option("--csv", help="Print CSV with a header line instead of JSON")
    ] = False,
) -> None:
    """Print a client's Reassigned Numbers Database queries, in the order they were asked:
    the number, the consent date asked about, when, the answer (yes, no, no_data, or none
    when none was read), the job and the contact."""
    start = _since(since)

    async def action(db: Database, settings: Settings) -> dict[str, Any]:
        from dialscore.accounts import service as accounts
        from dialscore.kit.clock import isoformat
        from dialscore.scoring import rnd_record

        writer = csv.DictWriter(sys.stdout, RND_COLUMNS, lineterminator="\n")
        listed: list[dict[str, Any]] = []
        async with db.read() as session:
            # Fails with "no client with id …" rather than print an empty record.
            await accounts.get_client(session, client_id=client)
            if as_csv:
                writer.writeheader()
            async for chunk in rnd_record.queries_since(session, client_id=client, since=start):
                presented = [rnd_record.present_query(query) for query in chunk]
                if as_csv:
                    writer.writerows(presented)
                else:
                    listed.extend(presented)
        return {
            "clientId": client,
            "since": isoformat(start),
            "count": len(listed),
            "queries": listed,
        }

    shown = run_with_db(action)
    if not as_csv:
        emit(shown)
