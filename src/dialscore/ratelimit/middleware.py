"""The limiter in front of every /api request, and the nine X-RateLimit headers on every
answer it gives: 2xx, 4xx, 429 and 5xx alike (D25, D26)."""

from __future__ import annotations

import json
from collections.abc import Mapping

import structlog
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dialscore.kit import metrics
from dialscore.kit.deps import AppState
from dialscore.ratelimit.service import LimiterUnavailable, RequestLimiter, unconsumed
from dialscore.ratelimit.windows import Decision

log = structlog.get_logger(__name__)

LIMITED_PREFIX = "/api"
QUOTA_PATH = "/api/public/quota"

_NAMES = {
    tier: tuple(
        f"x-ratelimit-{part}-{tier}".encode("latin-1") for part in ("limit", "remaining", "reset")
    )
    for tier in ("second", "minute", "day")
}


def rate_headers(decision: Decision, *, exhausted: bool = False) -> list[tuple[bytes, bytes]]:
    headers = []
    for state in decision.states:
        limit, remaining, reset = _NAMES[state.tier]
        headers.append((limit, str(state.limit).encode()))
        headers.append((remaining, b"0" if exhausted else str(state.remaining).encode()))
        headers.append((reset, str(state.reset).encode()))
    return headers


async def _answer(
    send: Send, status: int, body: Mapping[str, object], headers: list[tuple[bytes, bytes]]
) -> None:
    content = json.dumps(body, separators=(",", ":")).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(content)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": content})


def too_many(decision: Decision) -> tuple[dict[str, object], list[tuple[bytes, bytes]]]:
    tier = decision.blocked
    limit = next(state.limit for state in decision.states if state.tier == tier)
    retry_after = round(decision.retry_after, 3)
    body: dict[str, object] = {
        "error": "rate limit exceeded",
        "message": (
            f"Too many requests: the limit of {limit} per {tier} is used up. "
            f"Retry in {retry_after} s."
        ),
        "tier": tier,
        "retryAfter": retry_after,
    }
    headers = [(b"retry-after", str(decision.retry_after_header).encode())]
    return body, headers


class RateLimitMiddleware:
    def __init__(self, app: ASGIApp, limiter: RequestLimiter) -> None:
        self.app = app
        self.limiter = limiter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(LIMITED_PREFIX):
            await self.app(scope, receive, send)
            return
        state: AppState = scope["app"].state.dialscore
        client = scope.get("client")
        identity = await self.limiter.identify(
            state.db, Headers(scope=scope).get("authorization"), client[0] if client else "-"
        )
        request_state = scope.setdefault("state", {})
        request_state["principal"] = identity.principal
        request_state["auth_error"] = identity.error
        consume = scope["path"] != QUOTA_PATH
        try:
            decision = await self.limiter.check(identity.key, identity.limits, consume=consume)
        except LimiterUnavailable:
            exhausted = rate_headers(unconsumed(identity.limits), exhausted=True)
            headers = [(b"retry-after", b"1"), *exhausted]
            message = {"error": "the rate limiter is unavailable; retry shortly"}
            await _answer(send, 503, message, headers)
            return
        request_state["rate_limit"] = decision
        extra = rate_headers(decision)
        # The quota call counts nothing, so it cannot go over a tier: it always answers.
        if consume and not decision.allowed:
            metrics.observe_rate_limited(decision.blocked)
            body, headers = too_many(decision)
            await _answer(send, 429, body, [*headers, *extra])
            return

        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message = {**message, "headers": [*message.get("headers", ()), *extra]}
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception:
            if started:
                raise
            log.exception("unhandled error", path=scope["path"])
            await _answer(send, 500, {"error": "internal server error"}, extra)
