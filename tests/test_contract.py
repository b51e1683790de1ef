"""The contract test: every operation of /openapi.json, called with generated requests against
the live service on the embedded database, answers only documented status codes, never a 5xx,
and only bodies and headers its schema describes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
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
from tests.conftest import SECRET
from tests.live import LiveService
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


async def _tenant(url: str) -> Tenant:
    db = Database(url)
    try:
        return await make_tenant(db, SECRET, plan="enterprise", credits=1_000_000)
    finally:
        await db.dispose()


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveService, Tenant]]:
    with LiveService(tmp_path_factory.mktemp("contract"), run_worker=False) as live:
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
