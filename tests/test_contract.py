"""The contract test: every operation of /openapi.json, called with generated requests against
the live service on the embedded database, answers only documented status codes, never a 5xx,
and only bodies and headers its schema describes."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
import uvicorn
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from dialscore.app import create_app
from dialscore.config import Settings
from dialscore.kit.db import Database
from dialscore.migrations import upgrade
from tests.conftest import SECRET
from tests.processes import free_port
from tests.support import Tenant, make_tenant

# Generated requests per operation: enough to cross every documented parameter and body shape
# a few times, few enough to keep the test to about a minute.
EXAMPLES_PER_OPERATION = 30
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


class LoopbackOnlyLoop(asyncio.SelectorEventLoop):
    """An event loop that resolves only addresses and ``localhost``: generated webhook and
    callback URLs name any host, and a test sends nothing beyond this machine, DNS included."""

    async def getaddrinfo(  # type: ignore[override]
        self, host: Any, port: Any, *args: Any, **kwargs: Any
    ) -> Any:
        text = host.decode() if isinstance(host, bytes) else str(host or "")
        if text != "localhost":
            try:
                socket.inet_pton(socket.AF_INET6 if ":" in text else socket.AF_INET, text)
            except OSError:
                raise socket.gaierror(socket.EAI_NONAME, "not resolved in tests") from None
        return await super().getaddrinfo(host, port, *args, **kwargs)


class LiveService:
    """The service on 127.0.0.1 in a thread of this process, without its worker (so that no
    job runs and no webhook is sent anywhere)."""

    def __init__(self, data_dir: Path) -> None:
        self.port = free_port()
        url = f"sqlite:///{data_dir / 'dialscore.db'}"
        upgrade(url)
        self.settings = Settings(
            database_url=url,
            data_dir=data_dir,
            secret_key=SECRET,
            redis_url=None,
            _env_file=None,  # type: ignore[call-arg]
        )
        app = create_app(self.settings, run_worker=False)
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _serve(self) -> None:
        loop = LoopbackOnlyLoop()
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self.server.serve())
        finally:
            loop.close()

    def __enter__(self) -> LiveService:
        self.thread.start()
        for _ in range(300):
            if self.server.started or not self.thread.is_alive():
                break
            threading.Event().wait(0.05)
        assert self.server.started, "the service did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


async def _tenant(url: str) -> Tenant:
    db = Database(url)
    try:
        return await make_tenant(db, SECRET, plan="enterprise", credits=1_000_000)
    finally:
        await db.dispose()


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveService, Tenant]]:
    with LiveService(tmp_path_factory.mktemp("contract")) as live:
        # The document the tests are made from is the one the live service serves.
        served = httpx.get(f"{live.base_url}/openapi.json", timeout=10).json()
        assert served == _documented_schema()
        tenant = asyncio.run(_tenant(live.settings.resolved_database_url))
        yield live, tenant


def _documented_schema() -> dict[str, Any]:
    """The service's /openapi.json, as any instance of it serves it (no database needed)."""
    settings = Settings(database_url="sqlite://", secret_key=SECRET, _env_file=None)  # type: ignore[call-arg]
    return create_app(settings, run_worker=False).openapi()


schema = schemathesis.openapi.from_dict(_documented_schema())


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_keeps_its_contract(
    case: schemathesis.Case, service: tuple[LiveService, Tenant]
) -> None:
    live, tenant = service
    case.call_and_validate(base_url=live.base_url, headers=tenant.headers, checks=CHECKS)
