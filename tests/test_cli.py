"""The operator CLI, run as a real command: JSON output, errors, the generated secret key,
on the embedded SQLite default and on a PostgreSQL database migrated with ``dialscore migrate``."""

from __future__ import annotations

import json
import sqlite3
import stat
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jwt
import psycopg
import pytest

from tests.processes import (
    DATABASES,
    V2,
    base_env,
    cli_error,
    cli_json,
    fresh_postgres_database,
    processes,
    run_cli,
)
from tests.web_session import hidden_fields, sign_in

# D3: the shipped plans, and the default prices and webhook rate.
PLANS: dict[str, dict[str, Any]] = {
    "free": {
        "apiAccess": False,
        "lightningScoring": True,
        "coreScoring": False,
        "enrichmentWithLightning": False,
        "enrichmentWithCore": False,
        "perSecond": 5,
        "perMinute": 100,
        "perDay": 10_000,
    },
    "team": {
        "apiAccess": True,
        "lightningScoring": True,
        "coreScoring": False,
        "enrichmentWithLightning": True,
        "enrichmentWithCore": False,
        "perSecond": 10,
        "perMinute": 600,
        "perDay": 25_000,
    },
    "business": {
        "apiAccess": True,
        "lightningScoring": True,
        "coreScoring": True,
        "enrichmentWithLightning": True,
        "enrichmentWithCore": True,
        "perSecond": 25,
        "perMinute": 1_500,
        "perDay": 50_000,
    },
}
PLAN_KEYS = {
    "clientId",
    "plan",
    "apiAccess",
    "lightningScoring",
    "coreScoring",
    "enrichmentWithLightning",
    "enrichmentWithCore",
    "perSecond",
    "perMinute",
    "perDay",
    "webhookRate",
    "costPerPhone",
    "costPerContact",
    "refundUnfound",
}


def effective(client_id: str, plan: str, **overrides: Any) -> dict[str, Any]:
    values = {
        "clientId": client_id,
        "plan": plan,
        **PLANS[plan],
        "webhookRate": 5,
        "costPerPhone": 0.05,
        "costPerContact": 1,
        "refundUnfound": True,
    }
    values.update(overrides)
    return values


@dataclass
class Cli:
    """The ``dialscore`` command bound to one data directory and database."""

    database: str
    env: dict[str, str]
    cwd: Path
    data_dir: Path

    def ok(self, *args: str) -> dict[str, Any]:
        return cli_json(list(args), env=self.env, cwd=self.cwd)

    def error(self, *args: str) -> str:
        return cli_error(list(args), env=self.env, cwd=self.cwd)

    def with_stdin(self, stdin: str, *args: str) -> tuple[int, dict[str, Any]]:
        """Runs a command reading ``stdin``; its exit code and its one JSON object (stdout, or
        the error on stderr)."""
        completed = run_cli(list(args), env=self.env, cwd=self.cwd, stdin=stdin)
        shown = completed.stdout if completed.returncode == 0 else completed.stderr
        assert shown.count("\n") == 1, completed.describe()
        payload: dict[str, Any] = json.loads(shown)
        return completed.returncode, payload

    @property
    def secret_path(self) -> Path:
        return self.data_dir / "secret_key"

    def sql(self, statement: str) -> list[tuple[Any, ...]]:
        """Runs one statement on the command's database; the rows it returns."""
        url = self.env.get("DIALSCORE_DATABASE_URL")
        if url is None:
            with sqlite3.connect(self.data_dir / "dialscore.db") as conn:
                return [tuple(row) for row in conn.execute(statement).fetchall()]
        with psycopg.connect(url, autocommit=True) as conn:
            cursor = conn.execute(statement)
            return [tuple(row) for row in cursor.fetchall()] if cursor.description else []


@pytest.fixture(params=DATABASES)
def cli(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cli]:
    """SQLite: nothing prepared (the CLI migrates the embedded database itself).
    PostgreSQL: a fresh database brought up to date with ``dialscore migrate``."""
    data_dir = tmp_path / "var"
    if request.param == "sqlite":
        yield Cli("sqlite", base_env(data_dir), tmp_path, data_dir)
        return
    with fresh_postgres_database() as url:
        env = base_env(data_dir, DATABASE_URL=url)
        assert cli_json(["migrate"], env=env, cwd=tmp_path) == {"migrated": True}
        yield Cli("postgresql", env, tmp_path, data_dir)


def test_generated_secret_key_is_reused_and_keys_authenticate_in_another_process(
    cli: Cli, tmp_path: Path
) -> None:
    assert not cli.secret_path.exists()

    created = cli.ok("admin", "create-client", "--name", "Acme", "--credits", "100")
    assert set(created) == {"clientId", "userId", "apiKey", "email", "passwordSet", "signIn"}
    assert cli.secret_path.exists()
    assert stat.S_IMODE(cli.secret_path.stat().st_mode) == 0o600
    secret = cli.secret_path.read_text().strip()
    claims = jwt.decode(created["apiKey"], secret, algorithms=["HS256"])
    assert (claims["sub"], claims["cid"]) == (created["userId"], created["clientId"])

    second = cli.ok("admin", "create-key", "--user", created["userId"])
    assert set(second) == {"keyId", "apiKey", "monthlyCreditLimit"}
    assert cli.secret_path.read_text().strip() == secret
    assert jwt.decode(second["apiKey"], secret, algorithms=["HS256"])["jti"] == second["keyId"]

    with processes(tmp_path / "logs") as procs:
        server = procs.serve(env=cli.env, worker=False)

        def credits(api_key: str) -> httpx.Response:
            return httpx.get(
                f"{server.base_url}{V2}/account/credits",
                headers={"Authorization": f"Bearer {api_key}"},
                timeout=10.0,
                trust_env=False,
            )

        first_answer = credits(created["apiKey"])
        assert first_answer.status_code == 200, first_answer.text
        assert first_answer.json() == {
            "data": {"credits": 100, "key": {"monthlyCreditLimit": None, "spentThisMonth": 0}}
        }
        assert credits(second["apiKey"]).status_code == 200

        revoked = cli.ok("admin", "revoke-key", "--key", second["keyId"])
        assert revoked == {"keyId": second["keyId"], "revoked": True}
        assert credits(second["apiKey"]).status_code == 401
        assert credits(created["apiKey"]).status_code == 200
    assert cli.secret_path.read_text().strip() == secret


def test_admin_commands_print_one_json_object_with_their_keys(cli: Cli) -> None:
    created = cli.ok(
        "admin", "create-client", "--name", "Beta", "--plan", "business", "--credits", "12.5"
    )
    assert set(created) == {"clientId", "userId", "apiKey", "email", "passwordSet", "signIn"}
    client_id = created["clientId"]

    member = cli.ok("admin", "create-user", "--client", client_id, "--email", "Ann@Example.com")
    assert set(member) == {"userId", "email", "passwordSet", "signIn"}
    assert (member["email"], member["passwordSet"]) == ("ann@example.com", False)
    assert f"set-password --user {member['userId']}" in member["signIn"]
    admin = cli.ok(
        "admin",
        "create-user",
        "--client",
        client_id,
        "--email",
        "bo@example.com",
        "--role",
        "admin",
    )
    assert set(admin) == {"userId", "email", "passwordSet", "signIn"}
    assert len({created["userId"], member["userId"], admin["userId"]}) == 3

    key = cli.ok(
        "admin", "create-key", "--user", member["userId"], "--monthly-credit-limit", "250.5"
    )
    assert set(key) == {"keyId", "apiKey", "monthlyCreditLimit"}
    assert key["monthlyCreditLimit"] == 250.5
    limits = cli.sql(f"SELECT monthly_credit_limit FROM api_keys WHERE id = '{key['keyId']}'")
    assert limits == [(2_505_000,)]  # ten-thousandths of a credit
    assert cli.ok("admin", "revoke-key", "--key", key["keyId"]) == {
        "keyId": key["keyId"],
        "revoked": True,
    }

    added = cli.ok("admin", "add-credits", "--client", client_id, "--amount", "7.5")
    assert added == {"clientId": client_id, "credits": 20}
    removed = cli.ok("admin", "add-credits", "--client", client_id, "--amount=-0.0001")
    assert removed == {"clientId": client_id, "credits": 19.9999}


def test_set_plan_and_set_limits_print_effective_values_and_overrides_survive(cli: Cli) -> None:
    client_id = cli.ok("admin", "create-client", "--name", "Gamma", "--plan", "team")["clientId"]

    shown = cli.ok("admin", "set-limits", "--client", client_id)
    assert set(shown) == PLAN_KEYS
    assert shown == effective(client_id, "team")

    limited = cli.ok(
        "admin", "set-limits", "--client", client_id, "--per-second", "77", "--webhook-rate", "9"
    )
    assert limited == effective(client_id, "team", perSecond=77, webhookRate=9)

    moved = cli.ok("admin", "set-plan", "--client", client_id, "--plan", "business")
    assert set(moved) == PLAN_KEYS
    assert moved == effective(client_id, "business", perSecond=77, webhookRate=9)

    more = cli.ok("admin", "set-limits", "--client", client_id, "--per-minute", "1234")
    assert more == effective(client_id, "business", perSecond=77, perMinute=1234, webhookRate=9)

    down = cli.ok("admin", "set-plan", "--client", client_id, "--plan", "free")
    assert down == effective(client_id, "free", perSecond=77, perMinute=1234, webhookRate=9)

    # P202: refunds of enrichment contacts with no new number, off for this client and on
    # again; a plan change keeps the choice, and other changes leave it alone.
    kept = {"perSecond": 77, "perMinute": 1234, "webhookRate": 9}
    off = cli.ok("admin", "set-limits", "--client", client_id, "--no-refund-unfound")
    assert off == effective(client_id, "free", **kept, refundUnfound=False)
    moved = cli.ok("admin", "set-plan", "--client", client_id, "--plan", "team")
    assert moved == effective(client_id, "team", **kept, refundUnfound=False)
    other = cli.ok("admin", "set-limits", "--client", client_id, "--per-day", "500")
    assert other == effective(client_id, "team", **kept, perDay=500, refundUnfound=False)
    on = cli.ok("admin", "set-limits", "--client", client_id, "--refund-unfound")
    assert on == effective(client_id, "team", **kept, perDay=500)


def test_admin_errors_exit_non_zero_with_json_error_on_stderr_only(cli: Cli) -> None:
    created = cli.ok("admin", "create-client", "--name", "Delta", "--plan", "team")
    client_id = created["clientId"]
    cli.ok("admin", "create-user", "--client", client_id, "--email", "dup@example.com")
    missing = str(uuid.uuid4())

    cases: list[tuple[list[str], str]] = [
        (["create-client", "--name", "Nope", "--plan", "gold"], "gold"),
        (["set-plan", "--client", client_id, "--plan", "gold"], "gold"),
        (["create-user", "--client", missing, "--email", "x@example.com"], missing),
        (["add-credits", "--client", missing, "--amount", "5"], missing),
        (["create-user", "--client", client_id, "--email", "DUP@example.com"], "already exists"),
        (
            ["create-user", "--client", client_id, "--email", "r@example.com", "--role", "owner"],
            "role",
        ),
        (["set-limits", "--client", client_id, "--per-second", "0"], "at least 1"),
        (["revoke-key", "--key", missing], missing),
        (["tally-calls", "--client", missing], missing),
        (
            ["create-key", "--user", created["userId"], "--monthly-credit-limit", "-5"],
            "monthly credit limit",
        ),
    ]
    # Independent commands: run side by side to keep the test short.
    with ThreadPoolExecutor(max_workers=4) as pool:
        messages = list(pool.map(lambda case: cli.error("admin", *case[0]), cases))
    for (args, expected), message in zip(cases, messages, strict=True):
        assert expected in message, (args, message)

    # Nothing the failed commands attempted took effect.
    assert cli.ok("admin", "set-limits", "--client", client_id) == effective(client_id, "team")
    # A client with no calls: nothing to count (tests/test_best_hours_history.py counts some).
    assert cli.ok("admin", "tally-calls", "--client", client_id) == {
        "clientId": client_id,
        "calls": 0,
    }


@pytest.mark.skipif("postgresql" not in DATABASES, reason="PostgreSQL tests are disabled")
def test_admin_command_on_unmigrated_postgres_asks_for_migrate(tmp_path: Path) -> None:
    with fresh_postgres_database() as url:
        env = base_env(tmp_path / "var", DATABASE_URL=url)
        message = cli_error(["admin", "create-client", "--name", "Early"], env=env, cwd=tmp_path)
        assert "dialscore migrate" in message

        assert cli_json(["migrate"], env=env, cwd=tmp_path) == {"migrated": True}
        created = cli_json(["admin", "create-client", "--name", "Early"], env=env, cwd=tmp_path)
        assert {"clientId", "userId", "apiKey"} <= set(created)


def test_failed_work_lists_what_was_set_aside_and_requeues_it(cli: Cli) -> None:
    assert cli.ok("admin", "failed-work") == {"count": 0, "messages": []}
    zone = "" if cli.database == "sqlite" else "+00"
    cli.sql(
        "INSERT INTO outbox (actor, payload, available_at, attempts, created_at, last_error, "
        "failed_at) VALUES "
        f"('process_job', '{{\"job_id\": \"b\"}}', '2026-11-02 08:00:00{zone}', 10, "
        f"'2026-11-02 07:00:00{zone}', 'RuntimeError: second', '2026-11-02 08:00:00{zone}'), "
        f"('process_job', '{{\"job_id\": \"a\"}}', '2026-11-01 08:00:00{zone}', 10, "
        f"'2026-11-01 07:00:00{zone}', 'RuntimeError: first', '2026-11-01 08:00:00{zone}'), "
        f"('process_job', '{{\"job_id\": \"c\"}}', '2026-11-03 08:00:00{zone}', 1, "
        f"'2026-11-03 07:00:00{zone}', NULL, NULL)"
    )
    second, first, running = (row[0] for row in cli.sql("SELECT id FROM outbox ORDER BY id"))

    listed = cli.ok("admin", "failed-work")
    assert listed == {
        "count": 2,
        "messages": [
            {
                "id": first,
                "actor": "process_job",
                "payload": {"job_id": "a"},
                "attempts": 10,
                "lastError": "RuntimeError: first",
                "failedAt": "2026-11-01T08:00:00Z",
                "createdAt": "2026-11-01T07:00:00Z",
            },
            {
                "id": second,
                "actor": "process_job",
                "payload": {"job_id": "b"},
                "attempts": 10,
                "lastError": "RuntimeError: second",
                "failedAt": "2026-11-02T08:00:00Z",
                "createdAt": "2026-11-02T07:00:00Z",
            },
        ],
    }

    assert str(running) in cli.error("admin", "failed-work", "--requeue", str(running))
    assert "not both" in cli.error("admin", "failed-work", "--requeue", str(first), "--requeue-all")
    assert cli.ok("admin", "failed-work")["count"] == 2

    assert cli.ok("admin", "failed-work", "--requeue", str(first)) == {"requeued": [first]}
    assert [m["id"] for m in cli.ok("admin", "failed-work")["messages"]] == [second]
    assert cli.ok("admin", "failed-work", "--requeue-all") == {"requeued": [second]}
    assert cli.ok("admin", "failed-work") == {"count": 0, "messages": []}
    requeued = cli.sql("SELECT id, attempts, failed_at FROM outbox ORDER BY id")
    assert requeued == [(second, 0, None), (first, 0, None), (running, 1, None)]


PASSWORD = "a long enough password"


def test_an_admin_created_without_an_email_gets_one_before_a_password(cli: Cli) -> None:
    created = cli.ok("admin", "create-client", "--name", "Acme")
    client_id, user_id = created["clientId"], created["userId"]
    # No stand-in address is shown: null, and how to give a real one.
    assert (created["email"], created["passwordSet"]) == (None, False)
    assert f"set-password --user {user_id} --email EMAIL" in created["signIn"]
    beta = ("admin", "create-client", "--name", "Beta", "--password-stdin")
    code, refused = cli.with_stdin(PASSWORD + "\n", *beta)
    assert code == 1 and "--email" in refused["error"]

    listed = cli.ok("admin", "list-users", "--client", client_id)
    assert listed == {
        "clientId": client_id,
        "count": 1,
        "users": [
            {
                "userId": user_id,
                "email": None,
                "role": "admin",
                "active": True,
                "passwordSet": False,
                "signIn": created["signIn"],
            }
        ],
    }

    # A password alone would be one nobody can sign in with: refused before it is read.
    code, refused = cli.with_stdin(PASSWORD + "\n", "admin", "set-password", "--user", user_id)
    assert code == 1 and "no email yet" in refused["error"] and "--email" in refused["error"]
    assert cli.sql(f"SELECT password_hash FROM users WHERE id = '{user_id}'") == [(None,)]

    member = cli.ok("admin", "create-user", "--client", client_id, "--email", "bo@acme.example")
    for email, message in (
        ("BO@acme.example", "a user with email bo@acme.example already exists"),
        (f"admin+{client_id}@clients.dialscore.invalid", "clients.dialscore.invalid"),
        ("not-an-address", "email must be an email address"),
    ):
        set_email = ("admin", "set-password", "--user", user_id, "--email", email)
        code, refused = cli.with_stdin(PASSWORD + "\n", *set_email)
        assert code == 1 and message in refused["error"], (email, refused)
    assert "clients.dialscore.invalid" in cli.error(
        "admin", "create-user", "--client", client_id, "--email", "x@clients.dialscore.invalid"
    )

    code, given = cli.with_stdin(
        PASSWORD + "\n", "admin", "set-password", "--user", user_id, "--email", " Ann@Acme.example"
    )
    assert code == 0
    assert given == {"userId": user_id, "email": "ann@acme.example", "passwordSet": True}
    users = cli.ok("admin", "list-users", "--client", client_id)["users"]
    assert [(u["email"], u["role"], u["passwordSet"]) for u in users] == [
        ("ann@acme.example", "admin", True),
        ("bo@acme.example", "member", False),
    ]
    assert "signIn" not in users[0] and f"--user {member['userId']}" in users[1]["signIn"]

    # Without --base-url, the link names where 'serve' listens.
    link = cli.ok("admin", "set-password", "--user", member["userId"], "--link")
    assert link["passwordLink"].startswith("http://127.0.0.1:8000/app/set-password/")
    assert (link["email"], link["passwordSet"]) == ("bo@acme.example", False)
    assert "no client with id nobody" in cli.error("admin", "list-users", "--client", "nobody")
    assert "no user with id nobody" in cli.error("admin", "set-password", "--user", "nobody")
    stored = cli.sql("SELECT email FROM users ORDER BY email")
    assert stored == [("ann@acme.example",), ("bo@acme.example",)]


@pytest.mark.slow
def test_a_link_from_set_password_lets_a_user_without_email_sign_in(
    cli: Cli, tmp_path: Path
) -> None:
    created = cli.ok("admin", "create-client", "--name", "Acme")
    with processes(tmp_path / "logs") as procs:
        server = procs.serve(env=cli.env, worker=False)
        args = ["--user", created["userId"], "--email", "ann@acme.example", "--link"]
        made = cli.ok("admin", "set-password", *args, "--base-url", f"{server.base_url}/")
        assert (made["email"], made["passwordSet"]) == ("ann@acme.example", False)
        assert made["passwordLink"].startswith(f"{server.base_url}/app/set-password/")
        assert made["linkExpiresAt"].endswith("Z")

        with httpx.Client(base_url=server.base_url, timeout=10.0, trust_env=False) as browser:
            path = made["passwordLink"].removeprefix(server.base_url)
            form = browser.get(path)
            assert form.status_code == 200, form.text
            fields = hidden_fields(form.text, path)
            sent = {**fields, "password": PASSWORD, "confirm": PASSWORD}
            done = browser.post(path, data=sent)
            assert done.status_code == 200 and "ann@acme.example" in done.text, done.text
            jobs = sign_in(browser, "ann@acme.example", PASSWORD)
            assert "ann@acme.example" in jobs.text and "Sign out" in jobs.text
            assert browser.get(path).status_code == 404
