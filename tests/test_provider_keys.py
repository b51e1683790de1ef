"""A client's own enrichment provider keys and its order of sources (P204): stored sealed,
shown by their last four characters, opened for the worker; the order only reorders the
operator's sources. The service on SQLite and PostgreSQL, and the admin commands."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update
from structlog.testing import capture_logs

from dialscore.config import Settings
from dialscore.enrichment import client_settings as cs
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.kit.errors import NotFound
from dialscore.models import Client, ClientProviderKey
from tests.conftest import SECRET
from tests.processes import (
    DATABASES,
    cli_database_env,
    cli_error,
    cli_json,
    run_cli,
)
from tests.support import Tenant, make_tenant

PDL_KEY = "pdl-Secret-Key-0123456789abcdef"
APOLLO_KEY = "apollo_Key_zyxw9876"


async def set_key(db: Database, tenant: Tenant, provider: str, key: str) -> cs.ProviderKeyView:
    async with db.unit_of_work() as session:
        return await cs.set_provider_key(
            session,
            client_id=tenant.client_id,
            provider=provider,
            api_key=key,
            server_secret=SECRET,
            user_id=tenant.user_id,
            now=utcnow(),
        )


async def stored_rows(db: Database, client_id: str) -> list[ClientProviderKey]:
    async with db.read() as session:
        rows = await session.scalars(
            select(ClientProviderKey).where(ClientProviderKey.client_id == client_id)
        )
        return list(rows)


async def enrichment_of(db: Database, client_id: str, secret: str = SECRET) -> cs.ClientEnrichment:
    async with db.read() as session:
        return await cs.client_enrichment(session, client_id, secret)


# -- keys --------------------------------------------------------------------------------------


async def test_a_key_is_set_replaced_and_cleared(db: Database, tenant: Tenant) -> None:
    shown = await set_key(db, tenant, "pdl", f"  {PDL_KEY}\n")
    assert (shown.provider, shown.last_four) == ("pdl", "cdef")

    (row,) = await stored_rows(db, tenant.client_id)
    assert (row.provider, row.last_four, row.updated_by) == ("pdl", "cdef", tenant.user_id)
    assert PDL_KEY not in row.key_ciphertext and "0123456789" not in row.key_ciphertext
    assert cs.secret_box(SECRET).open(row.key_ciphertext) == PDL_KEY
    assert (await enrichment_of(db, tenant.client_id)).keys == {"pdl": PDL_KEY}

    # Set again: replaced in place, on both databases.
    await set_key(db, tenant, "pdl", "pdl-another-key-5555")
    await set_key(db, tenant, "apollo", APOLLO_KEY)
    assert len(await stored_rows(db, tenant.client_id)) == 2
    async with db.read() as session:
        views = await cs.provider_keys(session, tenant.client_id)
    assert [(v.provider, v.last_four) for v in views] == [("apollo", "9876"), ("pdl", "5555")]
    got = await enrichment_of(db, tenant.client_id)
    assert got.keys == {"pdl": "pdl-another-key-5555", "apollo": APOLLO_KEY}
    # Its representation names the providers, never a key.
    assert APOLLO_KEY not in repr(got) and "5555" not in repr(got)

    async with db.unit_of_work() as session:
        assert await cs.clear_provider_key(session, client_id=tenant.client_id, provider="pdl")
    async with db.unit_of_work() as session:
        again = await cs.clear_provider_key(session, client_id=tenant.client_id, provider="pdl")
        assert again is False
    assert (await enrichment_of(db, tenant.client_id)).keys == {"apollo": APOLLO_KEY}


async def refuse(db: Database, client_id: str, provider: str) -> None:
    """What a job notes when the provider refuses the client's key."""
    async with db.unit_of_work() as session:
        await session.execute(
            update(ClientProviderKey)
            .where(ClientProviderKey.client_id == client_id, ClientProviderKey.provider == provider)
            .values(refused_at=utcnow(), refused_reason="credentials refused (HTTP 401)")
        )


async def test_a_refused_key_says_so_until_it_is_set_again(db: Database, tenant: Tenant) -> None:
    await set_key(db, tenant, "pdl", PDL_KEY)
    await refuse(db, tenant.client_id, "pdl")
    async with db.read() as session:
        (view,) = await cs.provider_keys(session, tenant.client_id)
    assert view.refused_at is not None
    assert view.refused_reason == "credentials refused (HTTP 401)"
    # Still the client's key: the worker reads it, and the provider says again whether it works.
    assert (await enrichment_of(db, tenant.client_id)).keys == {"pdl": PDL_KEY}
    await set_key(db, tenant, "pdl", "pdl-fixed-key-7777")
    async with db.read() as session:
        (view,) = await cs.provider_keys(session, tenant.client_id)
    assert (view.last_four, view.refused_at, view.refused_reason) == ("7777", None, None)


async def test_a_key_is_the_clients_own(db: Database, tenant: Tenant) -> None:
    other = await make_tenant(db, SECRET, name="Other")
    await set_key(db, tenant, "pdl", PDL_KEY)
    assert (await enrichment_of(db, other.client_id)).keys == {}
    async with db.read() as session:
        assert await cs.provider_keys(session, other.client_id) == []
    async with db.unit_of_work() as session:
        cleared = await cs.clear_provider_key(session, client_id=other.client_id, provider="pdl")
        assert cleared is False
    assert (await enrichment_of(db, tenant.client_id)).keys == {"pdl": PDL_KEY}


async def test_a_key_sealed_with_another_server_secret_is_left_out(
    db: Database, tenant: Tenant
) -> None:
    await set_key(db, tenant, "pdl", PDL_KEY)
    await set_key(db, tenant, "apollo", APOLLO_KEY)
    with capture_logs() as logs:
        got = await enrichment_of(db, tenant.client_id, secret="another-server-secret-entirely")
    assert got.keys == {}
    warned = [entry for entry in logs if entry["event"] == "provider_key_unreadable"]
    assert {(e["client_id"], e["provider"]) for e in warned} == {
        (tenant.client_id, "pdl"),
        (tenant.client_id, "apollo"),
    }
    assert all(e["log_level"] == "warning" for e in warned)
    assert PDL_KEY not in repr(logs) and APOLLO_KEY not in repr(logs)
    # The right secret still opens them.
    assert set((await enrichment_of(db, tenant.client_id)).keys) == {"pdl", "apollo"}


@pytest.mark.parametrize(
    ("provider", "key", "message"),
    [
        ("zoominfo", PDL_KEY, "unknown provider 'zoominfo' (known: pdl, apollo)"),
        ("PDL", PDL_KEY, "unknown provider"),
        ("pdl", "", "the API key is empty"),
        ("pdl", " \t\n ", "the API key is empty"),
        ("pdl", "abc1234", "too short: at least 8"),
        ("pdl", "k" * 501, "too long: at most 500"),
        ("pdl", "abcd efgh1234", "a space, a line break or a control character"),
        ("pdl", "abcdefgh\n1234", "a space, a line break or a control character"),
        ("pdl", "abcdefgh\x001234", "a space, a line break or a control character"),
        ("pdl", "abcdefgh\u200b1234", "a space, a line break or a control character"),
    ],
)
async def test_a_wrong_provider_or_key_is_refused_and_nothing_is_stored(
    db: Database, tenant: Tenant, provider: str, key: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        await set_key(db, tenant, provider, key)
    assert await stored_rows(db, tenant.client_id) == []


async def test_the_longest_key_is_kept_whole_and_an_unknown_client_is_not_found(
    db: Database, tenant: Tenant
) -> None:
    longest = "k" * 496 + "WXYZ"
    assert (await set_key(db, tenant, "apollo", longest)).last_four == "WXYZ"
    assert (await enrichment_of(db, tenant.client_id)).keys == {"apollo": longest}
    nobody = Tenant("00000000-0000-4000-8000-000000000000", tenant.user_id, "", "")
    with pytest.raises(NotFound, match="no client"):
        await set_key(db, nobody, "pdl", PDL_KEY)
    assert await enrichment_of(db, nobody.client_id) == cs.ClientEnrichment({}, None)


# -- the order of sources ----------------------------------------------------------------------


EVERY = "history,directory,pdl,apollo"


def operator(sources: str) -> Settings:
    return Settings(enrichment_sources=sources, _env_file=None)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("sources", "order", "expected"),
    [
        # None or nothing: the operator's order.
        (EVERY, None, ["history", "directory", "pdl", "apollo"]),
        (EVERY, [], ["history", "directory", "pdl", "apollo"]),
        # The names the client gives first, in its order; then the operator's others.
        (EVERY, ["pdl", "history"], ["pdl", "history", "directory", "apollo"]),
        (EVERY, ["apollo"], ["apollo", "history", "directory", "pdl"]),
        ("history, pdl ,apollo", ["apollo", "pdl", "history"], ["apollo", "pdl", "history"]),
        # A source the operator does not enable is never added.
        ("history,pdl", ["apollo", "directory", "pdl"], ["pdl", "history"]),
        ("history", ["pdl"], ["history"]),
        ("", ["pdl", "history"], []),
        # A name given twice counts once.
        ("history,directory,pdl", ["pdl", "pdl", "directory"], ["pdl", "directory", "history"]),
    ],
)  # fmt: skip
def test_the_clients_order_only_reorders_the_operators_sources(
    sources: str, order: list[str] | None, expected: list[str]
) -> None:
    assert cs.effective_order(operator(sources), order) == expected


async def stored_order(db: Database, client_id: str) -> tuple[Any, bool]:
    """The column's value, and whether it is SQL NULL (not JSON null)."""
    async with db.read() as session:
        value = await session.scalar(select(Client.enrichment_order).where(Client.id == client_id))
        is_null = await session.scalar(
            select(Client.id).where(Client.id == client_id, Client.enrichment_order.is_(None))
        )
    return value, is_null is not None


async def test_an_order_is_set_checked_and_reset(
    db: Database, tenant: Tenant, settings: Settings
) -> None:
    async def set_order(order: list[str] | None) -> tuple[str, ...] | None:
        async with db.unit_of_work() as session:
            return await cs.set_enrichment_order(
                session, client_id=tenant.client_id, order=order, settings=settings
            )

    assert await stored_order(db, tenant.client_id) == (None, True)
    assert await set_order(["pdl", " history "]) == ("pdl", "history")
    assert await stored_order(db, tenant.client_id) == (["pdl", "history"], False)
    got = await enrichment_of(db, tenant.client_id)
    assert got.order == ("pdl", "history")
    assert cs.effective_order(settings, got.order) == ["pdl", "history", "directory", "apollo"]

    for wrong, message in (
        (["pdl", "zoominfo"], "unknown source 'zoominfo' (known: history, directory, pdl, apollo"),
        (["PDL"], "unknown source 'PDL'"),
        (["apollo", "history", "apollo"], "source 'apollo' is named twice"),
    ):
        with pytest.raises(ValueError) as refused:
            await set_order(wrong)
        assert message in str(refused.value)
    assert await stored_order(db, tenant.client_id) == (["pdl", "history"], False)

    # A source the operator does not enable may be named: it counts once they do.
    assert await set_order(["apollo"]) == ("apollo",)
    assert await set_order([]) is None
    assert await stored_order(db, tenant.client_id) == (None, True)
    await set_order(["directory"])
    assert await set_order(None) is None
    assert await stored_order(db, tenant.client_id) == (None, True)
    assert (await enrichment_of(db, tenant.client_id)).order is None

    nobody = "00000000-0000-4000-8000-000000000000"
    async with db.unit_of_work() as session:
        with pytest.raises(NotFound):
            await cs.set_enrichment_order(
                session, client_id=nobody, order=["pdl"], settings=settings
            )


async def test_the_worker_reads_keys_and_order_at_once(db: Database, tenant: Tenant) -> None:
    await set_key(db, tenant, "apollo", APOLLO_KEY)
    async with db.unit_of_work() as session:
        await cs.set_enrichment_order(
            session,
            client_id=tenant.client_id,
            order=["apollo", "history"],
            settings=operator("history,apollo"),
        )
    got = await enrichment_of(db, tenant.client_id)
    assert got == cs.ClientEnrichment({"apollo": APOLLO_KEY}, ("apollo", "history"))
    async with db.read() as session:
        (view,) = await cs.provider_keys(session, tenant.client_id)
    assert view.updated_at > utcnow() - timedelta(minutes=5)


# -- the admin commands ------------------------------------------------------------------------


@pytest.fixture(params=DATABASES)
def cli_env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    with cli_database_env(request.param, tmp_path) as env:
        yield env


def test_the_commands_set_and_clear_a_key_showing_its_last_four_only(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    client = cli_json(["admin", "create-client", "--name", "Acme"], env=cli_env, cwd=tmp_path)
    client_id = client["clientId"]
    command = ["admin", "set-provider-key", "--client", client_id, "--provider", "pdl"]

    result = run_cli(command, env=cli_env, cwd=tmp_path, stdin=f"  {PDL_KEY}  \n")
    assert result.returncode == 0, result.describe()
    assert PDL_KEY not in result.stdout + result.stderr, result.describe()
    shown = json.loads(result.stdout)
    assert shown == {
        "clientId": client_id,
        "provider": "pdl",
        "lastFour": "cdef",
        "updatedAt": shown["updatedAt"],
    }

    for args, stdin, message in (
        (["--provider", "zoominfo"], PDL_KEY, "unknown provider 'zoominfo' (known: pdl, apollo)"),
        (["--provider", "pdl"], "", "the API key is empty"),
        (["--provider", "pdl"], "one two three four\n", "a space, a line break"),
        (["--provider", "pdl"], f"{PDL_KEY}\n{PDL_KEY}\n", "a space, a line break"),
    ):
        result = run_cli(
            ["admin", "set-provider-key", "--client", client_id, *args],
            env=cli_env,
            cwd=tmp_path,
            stdin=stdin,
        )
        assert result.returncode != 0 and result.stdout == "", result.describe()
        assert message in json.loads(result.stderr)["error"], result.describe()
        assert PDL_KEY not in result.stderr
    nobody = ["admin", "set-provider-key", "--client", "nobody", "--provider", "pdl"]
    result = run_cli(nobody, env=cli_env, cwd=tmp_path, stdin=PDL_KEY)
    assert result.returncode != 0 and result.stdout == "", result.describe()
    assert json.loads(result.stderr) == {"error": "no client with id nobody"}

    cleared = cli_json([*command, "--clear"], env=cli_env, cwd=tmp_path)
    assert cleared == {"clientId": client_id, "provider": "pdl", "removed": True}
    cleared = cli_json([*command, "--clear"], env=cli_env, cwd=tmp_path)
    assert cleared == {"clientId": client_id, "provider": "pdl", "removed": False}


def test_the_commands_set_show_and_reset_the_order(cli_env: dict[str, str], tmp_path: Path) -> None:
    env = {**cli_env, "DIALSCORE_ENRICHMENT_SOURCES": "history,directory,pdl"}
    client_id = cli_json(["admin", "create-client", "--name", "Acme"], env=env, cwd=tmp_path)[
        "clientId"
    ]
    command = ["admin", "set-enrichment-order", "--client", client_id]

    shown = cli_json(command, env=env, cwd=tmp_path)
    default = ["history", "directory", "pdl"]
    assert shown == {"clientId": client_id, "order": None, "effectiveOrder": default}
    shown = cli_json([*command, "--order", "apollo, pdl,history"], env=env, cwd=tmp_path)
    assert shown == {
        "clientId": client_id,
        "order": ["apollo", "pdl", "history"],
        "effectiveOrder": ["pdl", "history", "directory"],
    }
    assert cli_json(command, env=env, cwd=tmp_path) == shown

    for args, message in (
        (["--order", "pdl,zoominfo"], "unknown source 'zoominfo'"),
        (["--order", "pdl,history,pdl"], "source 'pdl' is named twice"),
        (["--order", " , "], "--order names no source"),
        (["--order", "pdl", "--reset"], "give --order or --reset, not both"),
    ):
        assert message in cli_error([*command, *args], env=env, cwd=tmp_path)
    assert cli_json(command, env=env, cwd=tmp_path) == shown
    assert cli_error(
        ["admin", "set-enrichment-order", "--client", "nobody", "--reset"], env=env, cwd=tmp_path
    ) == ("no client with id nobody")

    reset = cli_json([*command, "--reset"], env=env, cwd=tmp_path)
    assert reset == {"clientId": client_id, "order": None, "effectiveOrder": default}
