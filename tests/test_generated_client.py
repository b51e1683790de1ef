"""A client generated from the live /openapi.json by openapi-python-client type-checks (mypy
--strict) with a script that drives the service through it, and that script runs against the
live service: the document is complete and exact enough for a client fully typed.

openapi-python-client runs in an environment of its own, ``.venv-codegen`` (made by
``scripts/bootstrap test``; ``DIALSCORE_TEST_CODEGEN_VENV`` names another): its command line
needs an older typer than dialscore's. The generated client needs only httpx and attrs, which
that environment has, so the script is checked and run with its interpreter."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from dialscore.kit.db import Database
from tests.conftest import SECRET
from tests.fakes import running_receiver
from tests.live import LiveService
from tests.support import V2, Tenant, make_tenant

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
CODEGEN = Path(os.environ.get("DIALSCORE_TEST_CODEGEN_VENV", ROOT / ".venv-codegen"))
DRIVE = Path(__file__).with_name("generated_client_drive.py")
# Bounds of each step, in seconds: far above what each takes.
GENERATE_TIMEOUT = 120
MYPY_TIMEOUT = 300
DRIVE_TIMEOUT = 120


def _run(args: list[str | Path], *, cwd: Path, timeout: float) -> str:
    """Runs a command to completion (bounded); its output, or a failure that shows it."""
    env = {**os.environ, "PATH": f"{CODEGEN / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(map(str, args))} exited {done.returncode}\n{output}"
    return output


async def _tenant(url: str) -> Tenant:
    db = Database(url)
    try:
        return await make_tenant(db, SECRET, plan="enterprise", credits=100)
    finally:
        await db.dispose()


def test_a_generated_client_drives_the_service_fully_typed(tmp_path: Path) -> None:
    python = CODEGEN / "bin" / "python"
    if not (CODEGEN / "bin" / "openapi-python-client").exists():
        pytest.fail(f"no openapi-python-client in {CODEGEN}: run ./scripts/bootstrap test")
    work = tmp_path / "client"
    work.mkdir()
    settings: dict[str, Any] = {"webhook_allow_private": True}
    with (
        running_receiver() as receiver,
        LiveService(tmp_path / "data", run_worker=True, **settings) as live,
    ):
        tenant = asyncio.run(_tenant(live.settings.resolved_database_url))
        (work / "openapi.json").write_bytes(
            httpx.get(f"{live.base_url}/openapi.json", timeout=10).content
        )
        # No post-hooks: the code is checked as generated, not as formatted.
        (work / "config.yaml").write_text("post_hooks: []\n")
        generated = _run(
            [
                CODEGEN / "bin" / "openapi-python-client",
                "generate",
                "--path=openapi.json",
                "--meta=none",
                "--output-path=dialscore_client",
                "--config=config.yaml",
            ],
            cwd=work,
            timeout=GENERATE_TIMEOUT,
        )
        # Anything the generator could not read it skips, with a warning.
        assert "warning" not in generated.lower(), generated
        shutil.copy(DRIVE, work / DRIVE.name)
        _run(
            [
                sys.executable,
                "-m",
                "mypy",
                "--strict",
                "--config-file=",
                f"--python-executable={python}",
                f"--cache-dir={work / '.mypy_cache'}",
                DRIVE.name,
            ],
            cwd=work,
            timeout=MYPY_TIMEOUT,
        )
        seen = json.loads(
            _run(
                [python, DRIVE.name, live.base_url, tenant.api_key, receiver.url],
                cwd=work,
                timeout=DRIVE_TIMEOUT,
            )
        )
        with httpx.Client(base_url=live.base_url, headers=tenant.headers, timeout=10) as api:
            job = api.get(f"{V2}/jobs/{seen['jobId']}").json()["data"]
            contact = api.get(f"{V2}/jobs/{seen['jobId']}/contacts").json()["data"]["contacts"][0]
            webhooks = api.get(f"{V2}/webhooks").json()["data"]["webhooks"]
            balance = api.get(f"{V2}/account/credits").json()["data"]["credits"]

    # Every key of every answer the script read is declared: nothing in an untyped bag.
    assert seen["undeclared"] == []
    assert seen["rejected"] == ["firstName is required"]
    assert (seen["status"], seen["jobType"]) == (job["status"], job["jobType"])
    assert seen["status"] == "Finalized" and seen["contacts"] == 1
    assert seen["createdAt"].endswith("+00:00")
    assert seen["contactId"] == contact["id"] and seen["leadStatus"] == contact["leadStatus"]
    assert seen["phones"] == [p["status"] for p in contact["phones"]]
    assert seen["connectRates"] == [p["connectRate"] for p in contact["phones"]]
    assert seen["bestPhone"] == contact["bestPhone"]["number"]
    assert seen["secret"].startswith("whsec_") and seen["webhookStatus"] == "active"
    assert seen["listed"] == [w["id"] for w in webhooks] == [seen["webhookId"]]
    assert seen["credits"] == balance == pytest.approx(100 - seen["charged"])
    assert seen["quotaDayRemaining"] > 0
