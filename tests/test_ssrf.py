"""The SSRF guard (D24): private targets refused at creation and again at every connection."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from dialscore.app import create_app
from dialscore.config import Settings
from dialscore.kit import outbound
from dialscore.kit.outbound import (
    RefusedTarget,
    Target,
    address_refusal,
    check_url,
    parse_target,
    resolve_allowed,
)
from tests.conftest import SECRET
from tests.fakes import Answer, Received, running_receiver
from tests.support import V2, Tenant, make_tenant, settle, state_of

# -- the address table ----------------------------------------------------------------------------

REFUSED = [
    "127.0.0.1",
    "127.255.255.254",
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",  # cloud metadata
    "100.64.0.1",  # carrier-grade NAT
    "100.100.100.200",  # Alibaba Cloud metadata (CGNAT range)
    "0.0.0.0",
    "224.0.0.1",  # multicast
    "240.0.0.1",  # reserved
    "255.255.255.255",  # broadcast
    "198.18.0.1",  # benchmarking
    "::1",
    "::",
    "fe80::1",
    "fc00::1",
    "fd00:ec2::254",  # AWS IPv6 metadata
    "ff02::1",
    "::ffff:127.0.0.1",  # IPv4-mapped loopback
    "::ffff:10.0.0.1",  # IPv4-mapped private
    "::ffff:169.254.169.254",  # IPv4-mapped metadata
    "2002:7f00:0001::",  # 6to4 of 127.0.0.1
    "64:ff9b::7f00:1",  # NAT64 (RFC 6052 well-known prefix) of 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
]

ALLOWED = [
    "93.184.216.34",
    "8.8.8.8",
    "1.1.1.1",
    "2606:4700:4700::1111",
    "::ffff:8.8.8.8",
]


@pytest.mark.parametrize("text", REFUSED)
def test_private_and_special_addresses_are_refused_with_a_reason(text: str) -> None:
    why = address_refusal(ipaddress.ip_address(text))
    assert why is not None, f"{text} must be refused"
    assert isinstance(why, str) and why.strip()
    assert "address" in why, why


@pytest.mark.parametrize("text", ALLOWED)
def test_public_addresses_are_allowed(text: str) -> None:
    assert address_refusal(ipaddress.ip_address(text)) is None


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("169.254.169.254", "link-local"),
        ("100.64.0.1", "carrier-grade"),
        ("224.0.0.1", "multicast"),
        ("::ffff:127.0.0.1", "loopback"),
        ("2002:7f00:0001::", "loopback"),
    ],
)
def test_the_reason_names_the_kind_of_address(text: str, word: str) -> None:
    why = address_refusal(ipaddress.ip_address(text))
    assert why is not None and word in why, why


# -- parse_target ---------------------------------------------------------------------------------


def test_https_is_required_unless_private_targets_are_allowed() -> None:
    with pytest.raises(RefusedTarget, match="https"):
        parse_target("http://example.com/hook", allow_private=False)
    target = parse_target("http://example.com/hook", allow_private=True)
    assert target == Target("http", "example.com", 80, "/hook")
    assert parse_target("https://example.com/hook", allow_private=False).scheme == "https"


@pytest.mark.parametrize("allow_private", [False, True])
@pytest.mark.parametrize(
    "url", ["ftp://example.com/hook", "file:///etc/passwd", "gopher://example.com/", "example.com"]
)
def test_other_schemes_are_never_allowed(url: str, allow_private: bool) -> None:
    with pytest.raises(RefusedTarget) as caught:
        parse_target(url, allow_private=allow_private)
    assert str(caught.value).strip()


@pytest.mark.parametrize("url", ["https://", "https:///hook", "https://:443/hook"])
def test_a_url_without_a_host_is_refused(url: str) -> None:
    with pytest.raises(RefusedTarget, match="host"):
        parse_target(url, allow_private=False)


def test_an_invalid_port_is_refused() -> None:
    with pytest.raises(RefusedTarget, match="valid"):
        parse_target("https://example.com:99999/hook", allow_private=False)


@pytest.mark.parametrize(
    ("url", "allow_private", "expected"),
    [
        ("https://example.com", False, Target("https", "example.com", 443, "/")),
        ("https://example.com/hook", False, Target("https", "example.com", 443, "/hook")),
        ("https://example.com:8443/h", False, Target("https", "example.com", 8443, "/h")),
        ("HTTPS://Example.COM/Hook", False, Target("https", "example.com", 443, "/Hook")),
        ("http://example.com/hook", True, Target("http", "example.com", 80, "/hook")),
        ("http://example.com:8080/hook", True, Target("http", "example.com", 8080, "/hook")),
        (
            "https://example.com/a/b?x=1&y=two#frag",
            False,
            Target("https", "example.com", 443, "/a/b?x=1&y=two"),
        ),
        ("https://[2606:4700::1]/h", False, Target("https", "2606:4700::1", 443, "/h")),
    ],
)
def test_ports_default_and_path_and_query_are_kept(
    url: str, allow_private: bool, expected: Target
) -> None:
    assert parse_target(url, allow_private=allow_private) == expected


# -- resolution -----------------------------------------------------------------------------------


async def test_localhost_is_refused_unless_private_targets_are_allowed() -> None:
    target = parse_target("https://localhost/hook", allow_private=False)
    with pytest.raises(RefusedTarget) as caught:
        await resolve_allowed(target, allow_private=False)
    message = str(caught.value)
    assert "localhost" in message and "loopback" in message, message
    assert await resolve_allowed(target, allow_private=True) in {"127.0.0.1", "::1"}

    with pytest.raises(RefusedTarget, match="loopback"):
        await check_url("https://localhost/hook", allow_private=False)
    await check_url("https://localhost/hook", allow_private=True)
    await check_url("http://localhost:8080/hook", allow_private=True)


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1/hook",
        "https://[::1]/hook",
        "https://[::ffff:127.0.0.1]/hook",
        "https://169.254.169.254/latest/meta-data/",
        "https://10.0.0.1:8443/hook",
        "https://0.0.0.0/hook",
    ],
)
async def test_literal_private_addresses_in_urls_are_refused(url: str) -> None:
    with pytest.raises(RefusedTarget, match="resolves to"):
        await check_url(url, allow_private=False)
    await check_url(url, allow_private=True)


@pytest.mark.parametrize(
    "url", ["https://93.184.216.34/hook", "https://[2606:4700:4700::1111]:8443/hook"]
)
async def test_literal_public_addresses_need_no_resolution(url: str) -> None:
    target = parse_target(url, allow_private=False)
    address = await resolve_allowed(target, allow_private=False)
    assert ipaddress.ip_address(address) == ipaddress.ip_address(target.host)


@pytest.mark.parametrize("allow_private", [False, True])
async def test_an_unresolvable_host_is_refused(allow_private: bool) -> None:
    with pytest.raises(RefusedTarget, match="does not resolve"):
        await check_url("https://no-such-host.invalid/hook", allow_private=allow_private)


async def test_any_private_address_among_the_answers_refuses_the_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A name that resolves to a public and a private address is refused (the resolver, not our
    code, is replaced here)."""
    answers = [("93.184.216.34", 443), ("10.0.0.7", 443)]

    async def fake_getaddrinfo(host: str, port: int, **kwargs: Any) -> list[Any]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", a) for a in answers]

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", fake_getaddrinfo)
    target = parse_target("https://mixed.example/hook", allow_private=False)
    with pytest.raises(RefusedTarget, match=r"10\.0\.0\.7"):
        await resolve_allowed(target, allow_private=False)
    answers.pop()
    assert await resolve_allowed(target, allow_private=False) == "93.184.216.34"


# -- every connection is checked ------------------------------------------------------------------


async def _create_subscription(app: FastAPI, tenant: Tenant, url: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as api:
        return await api.post(
            f"{V2}/webhooks",
            json={"name": "r", "url": url, "eventTypes": ["job.contact.scored", "job.completed"]},
            headers=tenant.headers,
        )


async def test_a_private_target_is_refused_at_connection_not_only_at_creation(
    settings: Settings,
) -> None:
    """A subscription created while private targets were allowed (or whose name later resolves
    to a private address) is refused when the dispatcher connects: nothing reaches it."""
    lenient = settings.model_copy(update={"webhook_allow_private": True})
    strict = settings.model_copy(update={"webhook_allow_private": False})
    with running_receiver() as receiver:
        first: FastAPI = create_app(lenient, run_worker=True)
        async with first.router.lifespan_context(first):
            tenant = await make_tenant(state_of(first).db, SECRET)
            created = await _create_subscription(first, tenant, receiver.url)
            assert created.status_code == 201, created.text
            webhook_id = created.json()["data"]["id"]
            await settle(first)

        second: FastAPI = create_app(strict, run_worker=True)
        async with second.router.lifespan_context(second):
            # The strict app refuses the same URL at creation ...
            again = await _create_subscription(second, tenant, receiver.url)
            assert again.status_code == 400, again.text
            transport = httpx.ASGITransport(app=second)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as api:
                # ... and at connection, for the subscription that already exists.
                sent = await api.post(f"{V2}/webhooks/{webhook_id}/test", headers=tenant.headers)
                assert sent.status_code == 202, sent.text
                delivery_id = sent.json()["data"]["id"]
                await settle(second)
                log = await api.get(
                    f"{V2}/webhooks/{webhook_id}/deliveries", headers=tenant.headers
                )
            assert log.status_code == 200, log.text
        received = list(receiver.received)

    assert received == []
    deliveries = {d["id"]: d for d in log.json()["data"]["deliveries"]}
    delivery = deliveries[delivery_id]
    assert delivery["eventType"] == "webhook.test"
    assert delivery["state"] == "failed", delivery
    assert "refused" in delivery["lastError"], delivery
    assert delivery["lastStatusCode"] is None
    assert delivery["attemptCount"] == 1
    assert delivery["nextAttemptAt"] is None
    assert [a["statusCode"] for a in delivery["attempts"]] == [None]
    assert "refused" in delivery["attempts"][0]["error"]


# -- outbound.Poster ------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def poster(*, allow_private: bool) -> AsyncIterator[outbound.Poster]:
    sender = outbound.Poster(allow_private=allow_private, max_connections=4)
    sender.start()
    try:
        yield sender
    finally:
        await sender.close()


async def test_post_does_not_follow_redirects() -> None:
    with running_receiver() as target:

        def redirect(request: Received, index: int) -> Answer:
            return Answer(302, {"Location": target.url, "Retry-After": "7"})

        with running_receiver(redirect) as redirecting:
            async with poster(allow_private=True) as sender:
                answer = await sender.post(
                    redirecting.url,
                    content=b'{"a":1}',
                    headers={"Content-Type": "application/json"},
                    timeout=5.0,
                )
            calls = list(redirecting.received)
        reached = list(target.received)
    assert (answer.status_code, answer.retry_after) == (302, "7")
    assert len(calls) == 1 and calls[0].body == b'{"a":1}'
    assert reached == []


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_post_refuses_a_private_target_before_connecting(host: str) -> None:
    """An address in the URL is checked before the request, a name when it is resolved."""
    with running_receiver() as receiver:
        port = int(receiver.url.rsplit(":", 1)[1].split("/")[0])
        async with poster(allow_private=False) as sender:
            with pytest.raises(RefusedTarget, match="loopback"):
                await sender.post(
                    f"https://{host}:{port}/hook", content=b"{}", headers={}, timeout=5.0
                )
        assert receiver.received == []


async def test_post_connects_to_the_resolved_address_with_the_original_host_header() -> None:
    with running_receiver() as receiver:
        port = int(receiver.url.rsplit(":", 1)[1].split("/")[0])
        async with poster(allow_private=True) as sender:
            answer = await sender.post(
                f"http://localhost:{port}/hook?x=1",
                content=b"{}",
                headers={"X-Extra": "yes"},
                timeout=5.0,
            )
        received = list(receiver.received)
    assert answer.status_code == 200
    assert len(received) == 1
    assert received[0].headers["host"] == f"localhost:{port}"
    assert received[0].target == "/hook?x=1"
    assert received[0].headers["x-extra"] == "yes"


async def test_post_sends_the_stored_form_of_the_url_as_it_is() -> None:
    """The path and query go out percent-encoded exactly as normalise_url stored them."""
    with running_receiver() as receiver:
        port = int(receiver.url.rsplit(":", 1)[1].split("/")[0])
        url = f"http://127.0.0.1:{port}/h%C3%A9 x?q=a b&r=%2F"
        stored = outbound.normalise_url(url, allow_private=True)
        async with poster(allow_private=True) as sender:
            await sender.post(stored, content=b"{}", headers={}, timeout=5.0)
        (received,) = list(receiver.received)
    assert received.target == stored.split(f":{port}", 1)[1]
