"""The API document (/openapi.json) as a client generator and a reader of /docs use it: every
operation named, described and exemplified by examples that keep to its schemas, ids and
timestamps with their formats, the events described as sent, and the reference pages served
with no internet."""

from __future__ import annotations

import gc
import re
import weakref
from collections.abc import AsyncIterator, Iterator
from functools import cache
from html.parser import HTMLParser
from typing import Any

import httpx
import jsonschema_rs
import pytest
from fastapi import FastAPI

from dialscore.app import create_app
from dialscore.config import Settings
from dialscore.webhooks import verify
from tests.conftest import SECRET
from tests.fakes import running_receiver
from tests.support import V2, contact, make_tenant, settle, state_of, submit

METHODS = ("get", "post", "put", "patch", "delete")
# Identifiers of other systems, or of the service's records that are not UUIDs (P77).
NOT_UUIDS = {
    "leadId",
    "contactCrmId",
    "accountCrmId",
    "databaseContactId",
    "databaseCompanyId",
    "customerContactId",
    "enrichmentContactId",
}


@cache
def document() -> dict[str, Any]:
    """The document as every instance serves it (no database needed to make it)."""
    return _app().openapi()


def _app() -> FastAPI:
    settings = Settings(database_url="sqlite://", secret_key=SECRET, _env_file=None)  # type: ignore[call-arg]
    return create_app(settings, run_worker=False)


def operations() -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in document()["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                yield method, path, operation


def validator(schema: dict[str, Any]) -> jsonschema_rs.Validator:
    """A validator of ``schema``, a part of the document whose references it resolves, that
    checks formats too."""
    return jsonschema_rs.validator_for(
        {**schema, "components": document()["components"]}, validate_formats=True
    )


def assert_keeps_to(schema: dict[str, Any], instance: Any, where: str) -> None:
    errors = [f"{e.instance_path}: {e.message}" for e in validator(schema).iter_errors(instance)]
    assert not errors, (where, errors[:5])


def test_every_operation_has_a_readable_unique_id() -> None:
    ids = [operation["operationId"] for _, _, operation in operations()]
    assert len(ids) == len(set(ids)), ids
    for name in ids:
        assert re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)*", name), name
        assert "api" not in name.split("_") and not name.endswith(("_get", "_post")), name
    assert {"get_job", "score_contacts", "list_webhooks", "get_quota", "v1_get_job"} <= set(ids)
    webhooks = {e["post"]["operationId"] for e in document()["webhooks"].values()}
    assert webhooks == {"job_contact_scored", "job_completed", "webhook_test", "webhook_disabled"}


def test_every_operation_is_described_and_exemplified_within_its_schemas() -> None:
    for method, path, operation in operations():
        where = f"{method.upper()} {path}"
        assert operation.get("summary") and len(operation.get("description", "")) > 40, where
        body = operation.get("requestBody", {}).get("content", {}).get("application/json")
        if body is not None:
            assert "example" in body, where
            assert_keeps_to(body["schema"], body["example"], f"{where} request")
        answers = 0
        for code, response in operation["responses"].items():
            media = response.get("content", {}).get("application/json")
            if media is None or "example" not in media:
                continue
            answers += code.startswith("2")
            assert_keeps_to(media["schema"], media["example"], f"{where} {code}")
        # Every answer with a body has an example (204 has none).
        assert answers == 1 or "204" in operation["responses"], where


def test_no_validation_answer_is_documented_that_the_server_never_sends() -> None:
    for method, path, operation in operations():
        codes = set(operation["responses"])
        assert "422" not in codes, (method, path)
        assert "500" in codes, (method, path)
        if path.startswith("/api"):
            assert {"400", "401", "403", "429", "503"} & codes, (method, path)
    schemas = document()["components"]["schemas"]
    assert "HTTPValidationError" not in schemas and "ValidationError" not in schemas
    for event in document()["webhooks"].values():
        assert "422" not in event["post"]["responses"]


def _properties(schema: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every named property anywhere in ``schema``, with its schema."""
    if isinstance(schema, dict):
        yield from schema.get("properties", {}).items()
        for value in schema.values():
            yield from _properties(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _properties(value)


def _formats(schema: dict[str, Any]) -> set[str | None]:
    branches = schema.get("anyOf", [schema])
    return {b.get("format") for b in branches if b.get("type") == "string"}


def test_ids_and_timestamps_of_answers_and_events_carry_their_formats() -> None:
    schemas = document()["components"]["schemas"]
    # Only what the service says: requests echo what clients send.
    answers = {
        name: schema
        for name, schema in schemas.items()
        if not name.endswith(("Request", "Input", "CompanyInfo", "Create"))
        and not name.startswith("Rejected")
    }
    checked = 0
    for name, schema in _properties(answers):
        if (name == "id" or name.endswith("Id")) and name not in NOT_UUIDS:
            assert _formats(schema) == {"uuid"} or schema.get("pattern") == "^[0-9]+$", name
            checked += 1
        elif name.endswith("At"):
            assert _formats(schema) == {"date-time"}, name
            checked += 1
    assert checked > 30
    for method, path, operation in operations():
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "path":
                assert parameter["schema"].get("format") == "uuid", (method, path)


def test_the_webhooks_describe_each_event_its_envelope_and_signature() -> None:
    events = document()["webhooks"]
    assert set(events) == {
        "job.contact.scored",
        "job.completed",
        "webhook.test",
        "webhook.disabled",
    }
    schemas = document()["components"]["schemas"]
    for name, item in events.items():
        operation = item["post"]
        headers = {p["name"]: p for p in operation["parameters"] if p["in"] == "header"}
        assert headers["X-Service-Signature"]["required"], name
        # Standard Webhooks' headers beside it (P120).
        for standard in ("webhook-id", "webhook-timestamp", "webhook-signature"):
            assert headers[standard]["required"] and headers[standard]["description"], name
        body = operation["requestBody"]["content"]["application/json"]
        envelope = schemas[body["schema"]["$ref"].rsplit("/", 1)[1]]
        assert set(envelope["required"]) == {
            "payload",
            "eventType",
            "timestamp",
            "apiVersion",
            "id",
        }
        assert envelope["properties"]["eventType"]["const"] == name
        assert_keeps_to(body["schema"], body["example"], name)
        assert {"200", "4XX", "5XX"} <= set(operation["responses"]), name


@pytest.fixture
def private_settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"webhook_allow_private": True})


async def test_events_and_answers_as_sent_keep_to_the_document(private_settings: Settings) -> None:
    app = create_app(private_settings, run_worker=True)
    events = document()["webhooks"]
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as api:
            tenant = await make_tenant(state_of(app).db, SECRET)
            with running_receiver() as receiver:
                body = {"name": "r", "url": receiver.url, "eventTypes": list(events)[:2]}
                created = await api.post(f"{V2}/webhooks", json=body, headers=tenant.headers)
                assert created.status_code == 201, created.text
                webhook = created.json()["data"]
                sent = [contact(), {"lastName": "Roe", "zip": 94107, "firstName": None}]
                response = await submit(api, tenant, sent)
                await api.post(f"{V2}/webhooks/{webhook['id']}/test", headers=tenant.headers)
                await settle(app)
                received = list(receiver.received)
    # A rejected record is the element as sent, key order included, plus its reason.
    record = response.json()["error"]["records"][0]
    assert list(record) == ["lastName", "zip", "firstName", "rejectedReason"]
    # webhook.disabled (P160) as sent is checked against the document in
    # test_webhook_disable.py.
    assert {r.json()["eventType"] for r in received} == set(events) - {"webhook.disabled"}
    for request in received:
        event = request.json()
        operation = events[event["eventType"]]["post"]
        schema = operation["requestBody"]["content"]["application/json"]["schema"]
        assert_keeps_to(schema, event, event["eventType"])
        assert verify(webhook["secret"], request.body, request.headers["x-service-signature"])
        assert request.headers["user-agent"].startswith("Service-Webhooks/")


# -- the reference pages ------------------------------------------------------------------------


class _Assets(HTMLParser):
    """The addresses a page loads: src and href of its elements, and spec-url of Redoc's."""

    def __init__(self) -> None:
        super().__init__()
        self.addresses: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href", "spec-url") and value:
                self.addresses.append(value)


@pytest.fixture
async def pages() -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://docs.test") as client:
        yield client


CONTENT_TYPES = {
    ".js": "text/javascript",
    ".css": "text/css",
    ".png": "image/png",
    ".json": "application/json",
}


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
async def test_reference_pages_load_only_what_the_service_serves(
    pages: httpx.AsyncClient, page: str
) -> None:
    response = await pages.get(page)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    # No CDN, no web font: nothing outside the service itself.
    assert not re.search(r"(https?:)?//[a-z]", response.text, re.IGNORECASE), response.text
    parser = _Assets()
    parser.feed(response.text)
    assert any(a.endswith(".js") for a in parser.addresses), parser.addresses
    assert parser.addresses.count("/openapi.json") <= 1
    for address in {*parser.addresses, "/openapi.json"}:
        assert address.startswith("/") and not address.startswith("//"), address
        # The document is an operation (GET only); the assets are files, whose headers say all.
        method = "GET" if address == "/openapi.json" else "HEAD"
        asset = await pages.request(method, address)
        assert asset.status_code == 200, address
        suffix = address[address.rfind(".") :]
        assert asset.headers["content-type"].startswith(CONTENT_TYPES[suffix]), address
        assert int(asset.headers["content-length"]) > 1000, address


async def test_an_app_is_freed_once_dropped(settings: Settings) -> None:
    # FastAPI keeps the functions of routes in caches of its own: a route function that kept
    # its app would keep every app a process makes (a test process makes hundreds, and
    # collecting its garbage took seconds a pass).
    application = create_app(settings, run_worker=False)
    async with application.router.lifespan_context(application):
        pass
    dropped = weakref.ref(application)
    del application
    gc.collect()
    assert dropped() is None
