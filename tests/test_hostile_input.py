"""Hostile requests (P73-P76): nothing a client sends answers a 5xx, and every refusal is
`{error}` in words, on both databases. Property tests throw generated hostile bodies at every
JSON POST operation and hostile values at every parameter of every GET operation, both found
from the app's routes, so a new endpoint is covered without a change here. The cases that once
answered 500 are pinned in tests/test_hostile_cases.py."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from dialscore.app import create_app
from dialscore.config import Settings
from tests.conftest import SECRET
from tests.support import V2, Tenant, contact, settle

# Outbound traffic stays on this machine: a URL a test may store is a loopback one, and every
# other URL it sends is refused before any name is resolved, or names this machine.
RECEIVER = "http://127.0.0.1:9/hook"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Loopback receivers allowed, so that subscriptions can be made without DNS."""
    return settings.model_copy(update={"webhook_allow_private": True})


# -- the operations, from the app's routes ----------------------------------------------------


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    # Names of the body's fields, and of the fields of its array elements (contacts, calls).
    fields: tuple[str, ...] = ()
    element_fields: tuple[str, ...] = ()
    # Query parameters, for GET operations.
    query: tuple[str, ...] = ()


def _resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """A schema with its $ref followed and its one non-null alternative taken."""
    for _ in range(10):
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            schema = document["components"]["schemas"][name]
            continue
        options = [s for s in schema.get("anyOf", schema.get("oneOf", [])) if s != {"type": "null"}]
        if options:
            schema = options[0]
            continue
        break
    return schema


def _body_fields(document: dict[str, Any], operation: dict[str, Any]) -> tuple[set[str], set[str]]:
    content = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
    body = _resolve(document, content.get("schema", {}))
    fields = set(body.get("properties", {}))
    elements: set[str] = set()
    for prop in body.get("properties", {}).values():
        resolved = _resolve(document, prop)
        if resolved.get("type") == "array":
            elements |= set(_resolve(document, resolved.get("items", {})).get("properties", {}))
    return fields, elements


def operations(app: FastAPI) -> list[Operation]:
    """Every POST and GET operation of the API (under /api), as its routes and the OpenAPI
    document built from them say."""
    document = app.openapi()
    found = []
    for route in iter_route_contexts(app.routes):
        path = route.path
        if not isinstance(path, str) or not path.startswith("/api"):
            continue
        for method in sorted(route.methods or ()):
            described = document["paths"].get(path, {}).get(method.lower(), {})
            if method == "POST":
                fields, elements = _body_fields(document, described)
                found.append(
                    Operation("POST", path, tuple(sorted(fields)), tuple(sorted(elements)))
                )
            elif method == "GET":
                query = [p["name"] for p in described.get("parameters", []) if p["in"] == "query"]
                found.append(Operation("GET", path, query=tuple(query)))
    return found


def _operations_of_the_app() -> list[Operation]:
    """The operations as any instance of the app has them (no database needed)."""
    app_settings = Settings(database_url="sqlite://", secret_key=SECRET, _env_file=None)  # type: ignore[call-arg]
    return operations(create_app(app_settings, run_worker=False))


OPERATIONS = _operations_of_the_app()
POSTS = [o for o in OPERATIONS if o.method == "POST"]
GETS = [o for o in OPERATIONS if o.method == "GET" and (o.query or "{" in o.path)]


def test_the_operations_are_found_from_the_routes() -> None:
    paths = {(o.method, o.path) for o in OPERATIONS}
    assert ("POST", f"{V2}/contacts/score") in paths
    assert ("POST", "/api/contacts/enrich") in paths
    assert ("GET", f"{V2}/jobs/{{jobId}}/contacts") in paths
    score = next(o for o in POSTS if o.path == f"{V2}/contacts/score")
    assert {"contacts", "name", "scoringType"} <= set(score.fields)
    assert {"firstName", "phone", "unmappedFields"} <= set(score.element_fields)
    assert len(POSTS) >= 11


# -- hostile values ---------------------------------------------------------------------------

# JSON text spliced into a body where a marker string stands: what json.dumps cannot write.
MARKER = "\x01raw\x01"
RAW = [
    "[" * 64 + "]" * 64,
    "[" * 65 + "]" * 65,
    '{"a":' * 70 + "1" + "}" * 70,
    "[" * 10_000 + "]" * 10_000,
    "9" * 4300,
    "-" + "9" * 4301,
    "1" * 5000,
    "1e999",
    "-1e400",
    "NaN",
    "Infinity",
    '"\\ud800"',
    '"a\\udfffb"',
    '"\\udc00\\ud800"',
    '"\\u0000"',
    '"\\u0000\\ud800"',
]
ODD_TEXT = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\ud800",
    "x\udfffy",
    "\r\n",
    "\t",
    "\x7f",
    "\x85",
    "\u202e",
    "\ufeff",
    "é",
    "\U0001d54f",
    "\U0010ffff",
    "'; DROP TABLE jobs; --",
    "x" * 1001,
    "+1 (415) 555-2671",
]
# Hosts are refused before resolution, or are loopback or localhost: nothing leaves the machine.
ODD_URLS = [
    "https://a..b/x",
    "https://" + "a" * 70 + ".com/x",
    "https://u:p@127.0.0.1/x",
    "https://127.0.0.1/x\r\nHost: elsewhere",
    "https://127.0.0.1/\x00",
    "https://127.0.0.1\t/",
    "https://[::1/x",
    "https://127.0.0.1:99999/",
    "https://127.0.0.1:0/",
    "https://\ud800.example/",
    "https://ex_ample.example/",
    "https://-a.example/",
    "https://xn--zz.example/",
    "https:///x",
    "javascript:alert(1)",
    "HTTP://LOCALHOST:9/Hook#frag",
    "http://[::1]:9/hook",
    "http://127.0.0.1:9/" + "é" * 1200,
    RECEIVER,
]

texts = st.one_of(
    st.sampled_from(ODD_TEXT),
    st.text(alphabet=st.characters(categories=["Cc", "Cs", "Zs", "Lo", "So"]), max_size=12),
)
scalars = st.one_of(
    texts,
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([MARKER + str(i) for i in range(len(RAW))]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(texts | st.just("a"), inner, max_size=3)
    ),
    max_leaves=6,
)


def _dumps(value: Any) -> bytes:
    """JSON of ``value`` with each marker replaced by its raw text; lone surrogates are written
    as escapes, which JSON allows."""
    text = json.dumps(value, ensure_ascii=True)
    for i in reversed(range(len(RAW))):
        text = text.replace(json.dumps(MARKER + str(i)), RAW[i])
    return text.encode()


BASES: dict[str, dict[str, Any]] = {
    "/contacts/score": {"contacts": [contact(companyAccount="Acme")]},
    "/contacts/enrich": {"contacts": [contact(companyAccount="Acme")]},
    "/calls": {"calls": [{"number": "+14155552671", "outcome": "connected"}]},
    # Inactive: the jobs the tests make send it nothing (P19).
    "/webhooks": {
        "name": "hooks",
        "url": RECEIVER,
        "eventTypes": ["job.completed"],
        "status": "inactive",
    },
    "/rescore": {"name": "again"},
}


def _base(path: str) -> dict[str, Any]:
    """A body the operation would accept, to put one hostile value in."""
    for suffix, body in BASES.items():
        if path.endswith(suffix):
            return json.loads(json.dumps(body))
    return {}


@st.composite
def hostile_bodies(draw: st.DrawFn, operation: Operation) -> bytes:
    """A body for ``operation`` that is hostile as a whole, in one field, or in one field of
    its first element."""
    body = _base(operation.path)
    # Mostly one value in an otherwise acceptable body, so that it goes deep.
    where = draw(st.sampled_from(["body", "field", "field", "element", *["element-field"] * 3]))
    if where == "body":
        return _dumps(draw(values))
    arrays = [k for k, v in body.items() if isinstance(v, list) and v and isinstance(v[0], dict)]
    if where == "field" or not arrays:
        name = draw(st.sampled_from([*operation.fields, "extra"]))
        body[name] = draw(_value_for(name))
        return _dumps(body)
    array = body[arrays[0]]
    if where == "element":
        array.insert(draw(st.integers(0, len(array))), draw(values))
        return _dumps(body)
    name = draw(st.sampled_from([*operation.element_fields, "extra", "unmappedFields"]))
    array[0][name] = draw(_value_for(name))
    return _dumps(body)


def _value_for(name: str) -> st.SearchStrategy[Any]:
    if name.lower().endswith("url"):
        return st.sampled_from(ODD_URLS) | values
    return values


# Idempotency-Key values as the bytes of the header; mostly none or a usable one, so that the
# body is what is refused or accepted.
keys = st.one_of(
    st.sampled_from([None, None, b"k", b"k" * 255]),
    st.sampled_from([b"k" * 256, b"", b" ", "ключ".encode(), b"a\tb", b"\x00", b"\xff"]),
    st.binary(min_size=1, max_size=8).filter(lambda b: b"\r" not in b and b"\n" not in b),
)


def assert_answered_in_words(response: httpx.Response, what: object) -> None:
    """No 5xx; a 4xx is {error: "…"}."""
    assert response.status_code < 500, (what, response.status_code, response.text[:300])
    if response.status_code >= 400:
        assert response.headers["content-type"].startswith("application/json"), what
        body = response.json()
        assert set(body) == {"error"}, (what, body)
        assert isinstance(body["error"], str) and body["error"].strip(), (what, body)


# The ids made for a tenant: every example of a property test uses the same ones.
_IDS: dict[str, dict[str, str]] = {}


async def _real_ids(api: httpx.AsyncClient, tenant: Tenant, app: FastAPI) -> dict[str, str]:
    """Ids of the tenant's own objects for the operations' path parameters: a finished job, a
    subscription and one of its deliveries."""
    if tenant.api_key in _IDS:
        return _IDS[tenant.api_key]
    scored = await api.post(
        f"{V2}/contacts/score", json={"contacts": [contact()]}, headers=tenant.headers
    )
    hook = await api.post(f"{V2}/webhooks", json=BASES["/webhooks"], headers=tenant.headers)
    assert (scored.status_code, hook.status_code) == (200, 201), (scored.text, hook.text)
    hook_id = hook.json()["data"]["id"]
    test = await api.post(f"{V2}/webhooks/{hook_id}/test", headers=tenant.headers)
    await settle(app)
    job_id = scored.json()["data"]["jobId"]
    ids = {"jobId": job_id, "id": hook_id, "deliveryId": test.json()["data"]["id"]}
    _IDS[tenant.api_key] = ids
    return ids


def _path(operation: Operation, ids: dict[str, str], hostile: str | None = None) -> str:
    path = operation.path
    while "{" in path:
        start, end = path.index("{"), path.index("}")
        name = path[start + 1 : end]
        value = hostile if hostile is not None else ids.get(name, str(uuid.uuid4()))
        path = path[:start] + quote(value, safe="", errors="surrogatepass") + path[end + 1 :]
    return path


PROPERTY = hypothesis_settings(
    max_examples=5,
    deadline=None,
    # A failure shows its request as drawn: shrinking requests against a live app could take
    # minutes of the suite's time.
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)


@PROPERTY
@given(data=st.data())
async def test_no_post_body_answers_a_server_error(
    data: st.DataObject, app: FastAPI, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    ids = await _real_ids(api, tenant, app)
    for operation in POSTS:
        body = data.draw(hostile_bodies(operation), label=operation.path)
        headers: dict[str, Any] = {**tenant.headers, "Content-Type": "application/json"}
        key = data.draw(keys, label="Idempotency-Key")
        if key is not None:
            headers["Idempotency-Key"] = key
        response = await api.post(_path(operation, ids), content=body, headers=headers)
        assert_answered_in_words(response, (operation.path, body[:200], key))
    # Active again: events of jobs that finished while it was active are not held back (P19),
    # so that the app's deliveries settle when the test ends.
    await api.post(f"{V2}/webhooks/{ids['id']}/active", headers=tenant.headers)


@PROPERTY
@given(data=st.data())
async def test_no_query_or_path_value_answers_a_server_error(
    data: st.DataObject, app: FastAPI, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    ids = await _real_ids(api, tenant, app)
    odd = st.sampled_from([*ODD_TEXT, "9" * 5000, "-1", "0", "1e3", "1000000000001"]) | texts
    for operation in GETS:
        hostile_path = data.draw(st.none() | odd, label="path") if "{" in operation.path else None
        query = {name: data.draw(st.none() | odd, label=name) for name in operation.query}
        encoded = "&".join(
            f"{k}={quote(v, errors='surrogatepass')}" for k, v in query.items() if v is not None
        )
        path = _path(operation, ids, hostile_path)
        url = path + (f"?{encoded}" if encoded else "")
        response = await api.get(url, headers=tenant.headers)
        assert_answered_in_words(response, url[:300])
