"""Hostile requests that once answered 500, one by one, on both databases (P73-P76): deep
nesting, long integers, NUL characters and lone surrogates, URLs the resolver could not read,
odd Idempotency-Key, Authorization and Content-Length headers, queries out of range."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from dialscore.config import Settings
from dialscore.kit.db import Database
from dialscore.models import Contact
from tests.support import V2, Tenant, assert_error, contact, settle, write_kept_contacts
from tests.test_hostile_input import RECEIVER, _dumps

REPLAYED = "Idempotent-Replayed"
NUL_REASON = "must not contain NUL characters (\\u0000)"
SURROGATE_REASON = "must not contain lone surrogates (\\ud800 to \\udfff)"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Loopback receivers allowed, so that subscriptions can be made without DNS."""
    return settings.model_copy(update={"webhook_allow_private": True})


SUBMISSIONS = [
    f"{V2}/contacts/score",
    f"{V2}/contacts/enrich",
    "/api/contacts/score",
    "/api/contacts/enrich",
]
JSON_POSTS = [*SUBMISSIONS, f"{V2}/calls", f"{V2}/webhooks"]
GOOD = json.dumps(contact(companyAccount="Acme")).encode()


async def post_raw(
    api: httpx.AsyncClient, tenant: Tenant, path: str, body: bytes, **headers: Any
) -> httpx.Response:
    sent = {**tenant.headers, "Content-Type": "application/json", **headers}
    return await api.post(path, content=body, headers=sent)


async def test_deep_nesting_and_long_integers_answer_400_in_words(
    api: httpx.AsyncClient, tenant: Tenant
) -> None:
    deep = b'{"contacts": ' + b"[" * 10_000 + b"]" * 10_000 + b"}"
    long_integer = b'{"contacts": [{"firstName": "Ann", "phone": ' + b"1" * 5000 + b"}]}"
    for path in JSON_POSTS:
        for body, words in ((deep, "nested deeper than 64 levels"), (long_integer, "5000 digits")):
            for key in ({}, {"Idempotency-Key": "k"}):
                response = await post_raw(api, tenant, path, body, **key)
                assert words in assert_error(response, 400), path


def _nested(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


async def test_a_body_at_the_depth_limit_is_taken_and_read_back(
    app: FastAPI, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    # Levels: the body, contacts, the contact, unmappedFields, then 60 arrays: 64 in all.
    kept = contact(unmappedFields={"x": _nested(60)}, big=-(10**4299))
    taken = await post_raw(api, tenant, f"{V2}/contacts/score", _dumps({"contacts": [kept]}))
    assert taken.status_code == 200, taken.text
    deeper = contact(unmappedFields={"x": _nested(61)})
    refused = await post_raw(api, tenant, f"{V2}/contacts/score", _dumps({"contacts": [deeper]}))
    assert "64 levels" in assert_error(refused, 400)
    await settle(app)
    job_id = taken.json()["data"]["jobId"]
    read = await api.get(f"{V2}/jobs/{job_id}/contacts", headers=tenant.headers)
    assert read.status_code == 200, read.text
    unmapped = read.json()["data"]["contacts"][0]["unmappedFields"]
    assert unmapped == {"x": _nested(60), "big": -(10**4299)}


# Each record holds a NUL or a lone surrogate somewhere: as JSON text, since json.dumps would
# not be asked to write a lone surrogate by a real client either.
HOSTILE_RECORDS = [
    (b'{"firstName": "A\\u0000nn", "lastName": "Lee", "phone": "+14155552672", '
     b'"companyAccount": "Acme"}', f"firstName {NUL_REASON}", "A\ufffdnn"),
    (b'{"firstName": "\\ud800", "lastName": "Lee", "phone": "+14155552673", '
     b'"companyAccount": "Acme"}', f"firstName {SURROGATE_REASON}", "\ufffd"),
    (b'{"firstName": "Bo", "lastName": "Lee", "phone": "+14155552674", '
     b'"companyAccount": "Acme", "x\\udc00": 1}', f"field names {SURROGATE_REASON}", "Bo"),
    (b'{"firstName": "Cy", "lastName": "Lee", "phone": "+14155552675", '
     b'"companyAccount": "Acme", "unmappedFields": {"a": ["\\u0000"]}}',
     f"unmappedFields {NUL_REASON}", "Cy"),
]  # fmt: skip


async def test_nul_and_lone_surrogates_reject_their_record_alone(
    db: Database, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    records = b", ".join(record for record, _, _ in HOSTILE_RECORDS)
    body = b'{"contacts": [' + GOOD + b", " + records + b"]}"
    for path in SUBMISSIONS:
        key = {"Idempotency-Key": "hostile"} if path.startswith(V2) else {}
        response = await post_raw(api, tenant, path, body, **key)
        assert response.status_code == 200, response.text
        answer = response.json()
        counts = (answer["data"]["totalRecordCount"], answer["data"]["acceptedRecordCount"])
        assert counts == (5, 1), path
        rejected = answer["error"]["records"]
        reasons = [reason for _, reason, _ in HOSTILE_RECORDS]
        assert [r["rejectedReason"] for r in rejected] == reasons, path
        # Echoed with U+FFFD in place of what no text may hold.
        assert [r["firstName"] for r in rejected] == [shown for _, _, shown in HOSTILE_RECORDS]
        assert "x\ufffd" in rejected[2]
        assert rejected[3]["unmappedFields"] == {"a": ["\ufffd"]}
        if key:
            again = await post_raw(api, tenant, path, body, **key)
            assert again.headers.get(REPLAYED) == "true"
            assert again.json() == answer
    await write_kept_contacts(db)
    async with db.read() as session:
        stored = (await session.scalars(select(Contact.fields))).all()
    assert [fields["firstName"] for fields in stored] == ["Ann"] * len(SUBMISSIONS)


async def test_nul_and_lone_surrogates_in_calls_reject_the_call(
    api: httpx.AsyncClient, tenant: Tenant
) -> None:
    body = (
        b'{"calls": [{"number": "+14155552671", "outcome": "connected"}, '
        b'{"number": "+14155552671\\u0000", "outcome": "connected"}, '
        b'{"number": "+14155552671", "outcome": "connected", "ivrPath": "1\\ud8002"}]}'
    )
    response = await post_raw(api, tenant, f"{V2}/calls", body, **{"Idempotency-Key": "calls"})
    assert response.status_code == 200, response.text
    rejected = response.json()["error"]["records"]
    assert [r["rejectedReason"] for r in rejected] == [
        f"number {NUL_REASON}",
        f"ivrPath {SURROGATE_REASON}",
    ]
    assert [rejected[0]["number"], rejected[1]["ivrPath"]] == ["+14155552671\ufffd", "1\ufffd2"]
    assert response.json()["data"] == {"totalRecordCount": 3, "acceptedRecordCount": 1}


NAMED_BODIES = [
    *[(path, b'{"contacts": [' + GOOD + b'], "name": "%s"}') for path in SUBMISSIONS],
    (f"{V2}/webhooks", b'{"name": "%s", "url": "' + RECEIVER.encode() + b'", '
     b'"eventTypes": ["job.completed"]}'),
]  # fmt: skip


async def test_nul_and_lone_surrogates_in_a_name_refuse_the_request(
    db: Database, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    for path, body in NAMED_BODIES:
        for text, reason in ((b"Q3\\u0000", NUL_REASON), (b"Q3\\udfff", SURROGATE_REASON)):
            response = await post_raw(api, tenant, path, body % text)
            assert assert_error(response, 400) == f"'name' {reason}", path
    async with db.read() as session:
        assert (await session.scalars(select(Contact.id))).all() == []


REFUSED_URLS = [
    ("https://a..b/x", "invalid host name (Empty Label)"),
    ("https://" + "a" * 70 + ".com/x", "invalid host name (Label too long)"),
    ("https://127.0.0.1/x\r\nHost: elsewhere", "control characters (U+000D at position 19)"),
    ("https://127.0.0.1/\tx", "control characters (U+0009 at position 18)"),
    ("https://user:secret@127.0.0.1/x", "must not contain a user name or password"),
    ("https://127.0.0.1/\ud800", SURROGATE_REASON),
]


async def test_refused_webhook_and_callback_urls_say_why(
    db: Database, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    for url, why in REFUSED_URLS:
        hook = {"name": "hooks", "url": url, "eventTypes": ["job.completed"]}
        message = assert_error(await post_raw(api, tenant, f"{V2}/webhooks", _dumps(hook)), 400)
        assert why in message and "url" in message, (url, message)
        element = contact(callbackUrl=url)
        answer = await post_raw(api, tenant, "/api/contacts/score", _dumps({"contacts": [element]}))
        assert answer.status_code == 200, answer.text
        (rejected,) = answer.json()["error"]["records"]
        assert rejected["rejectedReason"].startswith("callbackUrl is not allowed: url "), url
        assert why in rejected["rejectedReason"], url
    async with db.read() as session:
        assert (await session.scalars(select(Contact.id))).all() == []


async def test_urls_are_stored_and_echoed_normalised(
    db: Database, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    hook = {
        "name": "hooks",
        "url": "HTTP://LocalHost:80/In?a=b c#top",
        "eventTypes": ["job.completed"],
    }
    created = await post_raw(api, tenant, f"{V2}/webhooks", _dumps(hook))
    assert created.status_code == 201, created.text
    assert created.json()["data"]["url"] == "http://localhost/In?a=b%20c"
    listed = await api.get(f"{V2}/webhooks", headers=tenant.headers)
    assert [w["url"] for w in listed.json()["data"]["webhooks"]] == ["http://localhost/In?a=b%20c"]
    element = contact(callbackUrl="HTTP://[0:0::1]:9/Hook#x")
    answer = await post_raw(api, tenant, "/api/contacts/score", _dumps({"contacts": [element]}))
    assert answer.json()["data"]["acceptedRecordCount"] == 1, answer.text
    await write_kept_contacts(db)
    async with db.read() as session:
        assert (await session.scalars(select(Contact.callback_url))).all() == [
            "http://[::1]:9/Hook"
        ]


async def test_an_idempotency_key_is_printable_ascii(
    db: Database, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    body = b'{"contacts": [' + GOOD + b"]}"
    for key in (b"\xc3\xa9", b"a\x00b", b"tab\there", b"\x7f", b"\xe9"):
        response = await post_raw(
            api, tenant, f"{V2}/contacts/score", body, **{"Idempotency-Key": key}
        )
        assert "printable ASCII" in assert_error(response, 400), key
    async with db.read() as session:
        assert (await session.scalars(select(Contact.id))).all() == []


QUERIES = [
    ("page=" + "9" * 5000, "'page' must be an integer of at most 4300 digits"),
    ("page=99999999999999999999", "'page' must be at most 1000000000"),
    ("limit=" + "9" * 30, "'limit' must be at most 1000"),
    ("limit=%00", "'limit' must be an integer"),
    ("source=%ED%A0%80", "'source' must be one of"),
]


async def test_out_of_range_queries_answer_400_in_words(
    api: httpx.AsyncClient, tenant: Tenant
) -> None:
    for query, words in QUERIES:
        for path in (f"{V2}/jobs", "/api/jobs"):
            response = await api.get(f"{path}?{query}", headers=tenant.headers)
            assert assert_error(response, 400).startswith(words), (path, query)


async def test_an_odd_content_length_answers_without_a_server_error(
    api: httpx.AsyncClient, tenant: Tenant
) -> None:
    body = b'{"contacts": [' + GOOD + b"]}"
    for length in ("²", "-1", " 5"):
        headers = {"Content-Length": length.encode("latin-1")}
        response = await post_raw(api, tenant, f"{V2}/contacts/score", body, **headers)
        assert response.status_code == 200, (length, response.text)
    too_long = {"Content-Length": b"1" * 30}
    response = await post_raw(api, tenant, f"{V2}/contacts/score", body, **too_long)
    assert "larger than" in assert_error(response, 413)


async def test_odd_authorization_headers_answer_401(api: httpx.AsyncClient) -> None:
    body = b'{"contacts": [' + GOOD + b"]}"
    for value in (b"Bearer \xff\xfe", b"Bearer a\x00b", b"Bearer " + b"x" * 10_000, b"\xc3\xa9"):
        headers = {"Authorization": value, "Content-Type": "application/json"}
        response = await api.post(f"{V2}/contacts/score", content=body, headers=headers)
        assert_error(response, 401)
