"""What a newcomer meets first: the CLI run from another directory, a busy port, the service's
address opened in a browser, and a key made with another data directory."""

from __future__ import annotations

import json
import os
import pty
import shutil
import socket
import subprocess
import time
from pathlib import Path

import httpx
import jwt
import pytest

from dialscore.kit.clock import utcnow
from dialscore.kit.security import issue_api_key
from tests.processes import dialscore_command, run_cli
from tests.support import V2, Tenant, assert_error


def env_without_settings() -> dict[str, str]:
    """The environment of a shell where nothing of dialscore is configured."""
    return {k: v for k, v in os.environ.items() if not k.startswith("DIALSCORE_")}


@pytest.mark.slow
def test_admin_refuses_a_data_directory_nobody_named_and_takes_one_with_data_dir(
    tmp_path: Path, sqlite_template: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = env_without_settings()

    refused = run_cli(["admin", "create-client", "--name", "Acme"], env=env, cwd=elsewhere)
    assert refused.returncode == 1 and refused.stdout == "", refused.describe()
    message = json.loads(refused.stderr)["error"]
    assert str(elsewhere / "var") in message
    assert "--data-dir" in message and "DIALSCORE_DATA_DIR" in message
    assert not (elsewhere / "var").exists()

    # A service's directory, named from elsewhere, is used; on a terminal the command says
    # which database it writes to.
    data_dir = tmp_path / "service" / "var"
    data_dir.mkdir(parents=True)
    shutil.copyfile(sqlite_template, data_dir / "dialscore.db")
    args = ["--data-dir", str(data_dir), "admin", "create-client", "--name", "Acme"]
    created, note = run_with_terminal_stderr(args, env=env, cwd=elsewhere)
    secret = (data_dir / "secret_key").read_text().strip()
    assert jwt.decode(created["apiKey"], secret, algorithms=["HS256"])["sub"] == created["userId"]
    assert f"database sqlite:///{data_dir / 'dialscore.db'}" in note
    assert not (elsewhere / "var").exists()


def run_with_terminal_stderr(
    args: list[str], *, env: dict[str, str], cwd: Path
) -> tuple[dict[str, str], str]:
    """Runs a command whose stderr is a terminal; its JSON output and what stderr showed."""
    leader, follower = pty.openpty()
    try:
        completed = subprocess.run(
            [*dialscore_command(), *args],
            env=env,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=follower,
            text=True,
            timeout=60,
            check=False,
        )
        os.set_blocking(leader, False)
        try:
            shown = os.read(leader, 65536).decode(errors="replace")
        except BlockingIOError:
            shown = ""
    finally:
        os.close(follower)
        os.close(leader)
    assert completed.returncode == 0, (completed.stdout, shown)
    payload: dict[str, str] = json.loads(completed.stdout)
    return payload, shown.replace("\r\n", "\n").replace("\n", "")


@pytest.mark.slow
def test_a_busy_port_fails_at_once_naming_the_setting(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**env_without_settings(), "DIALSCORE_DATA_DIR": str(tmp_path / "var")}
        started = time.monotonic()
        result = run_cli(["serve", "--port", str(port)], env=env, cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == "", result.describe()
    message = json.loads(result.stderr)["error"]
    assert f"port {port}" in message and "DIALSCORE_PORT" in message and "--port" in message
    # Before the start-up: nothing was migrated, nothing made.
    assert not (tmp_path / "var").exists()
    assert time.monotonic() - started < 30


async def test_the_service_address_leads_to_the_web_app(api: httpx.AsyncClient) -> None:
    for method in ("GET", "HEAD"):
        response = await api.request(method, "/")
        assert response.status_code == 307
        assert response.headers["location"] == "/app"
    followed = await api.get("/", follow_redirects=True)
    assert followed.status_code == 200 and "/app/sign-in" in str(followed.url)


async def test_a_key_made_with_another_secret_says_so(
    api: httpx.AsyncClient, tenant: Tenant
) -> None:
    # What 'dialscore admin create-key' run with another data directory would have made.
    foreign = issue_api_key(
        "a-secret-key-generated-in-another-data-directory",
        user_id=tenant.user_id,
        client_id=tenant.client_id,
        key_id=tenant.key_id,
        issued_at=utcnow(),
    )
    response = await api.get(
        f"{V2}/account/credits", headers={"Authorization": f"Bearer {foreign}"}
    )
    message = assert_error(response, 401)
    assert "secret key" in message and "data directory" in message
    assert (await api.get(f"{V2}/account/credits", headers=tenant.headers)).status_code == 200
