"""What a newcomer meets first: the README's first steps, run as written; the CLI run from
another directory, a busy port, the service's address opened in a browser, and a key made with
another data directory."""

from __future__ import annotations

import json
import os
import pty
import re
import shlex
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from dialscore.kit.clock import utcnow
from dialscore.kit.security import issue_api_key
from tests.processes import dialscore_command, processes, run_cli, wait_for_job
from tests.support import V2, Tenant, assert_error
from tests.web_session import sign_in


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


# -- the README's first steps, run as written ---------------------------------------------------

README = Path(__file__).resolve().parents[1] / "README.md"
# Where the README says the service answers; the test's service answers on a free port.
README_SERVICE = "http://127.0.0.1:8000"
# What the reader types when the create-client command asks for a password.
TYPED_PASSWORD = "a password of my own"
PLACEHOLDER = re.compile(r"<([A-Za-z]+)>")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")


@dataclass
class Step:
    """A shell command of the README, its continuation lines joined, and the JSON the README
    shows it printing (None when it shows none)."""

    command: str
    shown: Any = None


def readme_section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    assert f"\n## {title}\n" in text, f"README.md has no section '{title}'"
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def shell_steps(section: str) -> list[Step]:
    steps: list[Step] = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.DOTALL):
        lines = block.splitlines()
        while lines:
            line = lines.pop(0)
            if line.startswith("#"):
                comments = [line]
                while lines and lines[0].startswith("#"):
                    comments.append(lines.pop(0))
                shown = [c[1:].strip() for c in comments]
                # "# Password:" and the like are what the reader sees asked, not output.
                starts = [i for i, c in enumerate(shown) if c.startswith("{")]
                if starts and steps:
                    steps[-1].shown = json.loads(" ".join(shown[starts[0] :]))
            elif line.strip():
                while line.endswith("\\") and lines:
                    line = line[:-1] + lines.pop(0).strip()
                steps.append(Step(line.strip()))
    return steps


def assert_shows(shown: Any, printed: Any, where: str = "") -> None:
    """``printed`` has what the README shows: each key shown, equal values, and for an
    elided value ("eyJ…") a string starting as shown."""
    if isinstance(shown, dict):
        assert isinstance(printed, dict), (where, printed)
        for key, value in shown.items():
            assert key in printed, f"the README shows {where}{key}, which is not printed"
            assert_shows(value, printed[key], f"{where}{key}.")
    elif isinstance(shown, str) and "…" in shown:
        assert isinstance(printed, str) and printed.startswith(shown.split("…")[0]), where
    elif isinstance(shown, float):
        assert printed == pytest.approx(shown), where
    else:
        assert printed == shown, (where, printed)


def elided_values(shown: Any, printed: Any) -> dict[str, str]:
    """What each elided value the README shows ("eyJ…") stands for in the printed output."""
    if isinstance(shown, dict) and isinstance(printed, dict):
        found: dict[str, str] = {}
        for key, value in shown.items():
            found.update(elided_values(value, printed.get(key)))
        return found
    if isinstance(shown, str) and "…" in shown and shown != "…" and isinstance(printed, str):
        return {shown: printed}
    return {}


def printed_value(outputs: list[Any], name: str) -> str:
    """The value of the key ``name`` in what the steps printed, latest first."""
    for output in reversed(outputs):
        stack = [output]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                if isinstance(item.get(name), str):
                    return str(item[name])
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
    raise AssertionError(f"the README asks for <{name}>, which no earlier step printed")


def shell_env(base: dict[str, str]) -> dict[str, str]:
    """A shell where nothing of dialscore is set and curl goes straight to 127.0.0.1."""
    proxies = {"http_proxy", "https_proxy", "all_proxy", "no_proxy"}
    return {k: v for k, v in base.items() if k.lower() not in proxies}


@pytest.mark.slow
def test_the_readme_first_steps_run_as_written_and_end_signed_in(tmp_path: Path) -> None:
    section = readme_section("First steps")
    steps = shell_steps(section)
    assert len(steps) >= 4, steps
    # The checkout the README is read in, as the reader has it: its .venv/bin/dialscore.
    venv_bin = tmp_path / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "dialscore").write_text(
        f'#!/bin/sh\nexec {shlex.join(dialscore_command())} "$@"\n', encoding="utf-8"
    )
    (venv_bin / "dialscore").chmod(0o755)
    env = shell_env(env_without_settings())

    with processes(tmp_path) as procs:
        # The service on the embedded default, in the directory the commands run in.
        server = procs.serve(env=env)
        outputs: list[Any] = []
        elided: dict[str, str] = {}
        assignments: list[str] = []
        email = None
        for step in steps:
            command = step.command.replace(README_SERVICE, server.base_url)
            for text, value in elided.items():
                command = command.replace(text, value)
            for name in PLACEHOLDER.findall(command):
                value = printed_value(outputs, name)
                if name == "jobId":
                    # A person reads the results once the job is done.
                    api_key = printed_value(outputs, "apiKey")
                    wait_until_finalized(server.base_url, api_key, value)
                command = command.replace(f"<{name}>", value)
            assert "…" not in command and "<" not in command, command
            words = shlex.split(command)
            if "--email" in words:
                email = words[words.index("--email") + 1]
            if ASSIGNMENT.match(command):
                assignments.append(command)
                continue
            completed = subprocess.run(
                ["bash", "-c", "set -eu\n" + "\n".join([*assignments, command])],
                input=TYPED_PASSWORD + "\n",
                env=env,
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert completed.returncode == 0, (step.command, completed.stderr, procs.diagnostics())
            printed = json.loads(completed.stdout)
            assert "error" not in printed or printed["error"] is None, (step.command, printed)
            if step.shown is not None:
                assert_shows(step.shown, printed)
                elided.update(elided_values(step.shown, printed))
            outputs.append(printed)

        # The steps scored a contact and read it back...
        contacts = outputs[-1]["data"]["contacts"]
        assert [(c["firstName"], c["lastName"]) for c in contacts] == [("Ann", "Lee")]
        assert contacts[0]["phones"], contacts
        # ...and gave the admin an email and a password, with which the README signs in.
        assert email is not None, "the first steps give the admin no email to sign in with"
        assert f"sign in as {email}" in " ".join(section.split()), section
        job_id = printed_value(outputs, "jobId")
        with httpx.Client(base_url=server.base_url, timeout=10.0, trust_env=False) as browser:
            jobs = sign_in(browser, email, TYPED_PASSWORD)
        assert str(jobs.url).endswith("/app/jobs"), jobs.url
        assert email in jobs.text and f"/app/jobs/{job_id}" in jobs.text, jobs.text


def wait_until_finalized(base_url: str, api_key: str, job_id: str) -> None:
    with httpx.Client(
        base_url=base_url,
        headers={"Authorization": f"Bearer {api_key}"},
        timeout=10.0,
        trust_env=False,
    ) as client:
        wait_for_job(
            client, job_id, lambda job: job["status"] == "Finalized", timeout=30, what="the job"
        )
