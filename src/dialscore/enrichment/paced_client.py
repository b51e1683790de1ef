"""The HTTP client every enrichment provider adapter talks through: capped, paced, retried."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx
import structlog

from dialscore import __version__
from dialscore.kit.clock import utcnow
from dialscore.scoring.providers import ProviderUnavailable
from dialscore.scoring.twilio import Clock, Sleep, TokenBucket
from dialscore.webhooks.policy import parse_retry_after

log = structlog.get_logger(__name__)

# Answers that speak for the account, not the contact: nothing can be enriched while they last.
REFUSED = frozenset({401, 402, 403})

RetryHint = Callable[[httpx.Response], float | None]


def retry_after_header(response: httpx.Response) -> float | None:
    """Seconds the service asked us to wait in ``Retry-After``, when it did."""
    return parse_retry_after(response.headers.get("Retry-After"), utcnow())


class PacedClient:
    """One provider's requests: at most ``max_in_flight`` at once, paced by a token bucket
    shared by every request on the instance, each bounded by ``timeout``; 429, 5xx, timeouts
    and connection errors retried with backoff (``Retry-After`` honoured up to a cap).

    Create and use an instance on one event loop."""

    def __init__(
        self,
        provider: str,
        *,
        base_url: str,
        headers: Mapping[str, str],
        credentials_hint: str,
        max_in_flight: int = 10,
        rate_per_second: float = 10.0,
        burst: float = 1.0,
        timeout: float = 10.0,
        max_retries: int = 2,
        backoff: float = 0.5,
        max_retry_after: float = 30.0,
        retry_hint: RetryHint = retry_after_header,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        if max_retries < 0:
            raise ValueError("max_retries must not be negative")
        self.provider = provider
        self._credentials_hint = credentials_hint
        self._timeout = timeout
        self._max_retries = max_retries
        self._backoff = backoff
        self._max_retry_after = max_retry_after
        self._retry_hint = retry_hint
        self._sleep = sleep
        self._bucket = TokenBucket(rate_per_second, burst, clock=clock, sleep=sleep)
        self._in_flight = asyncio.Semaphore(max_in_flight)
        self._refusal_logged = False
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            headers={
                "Accept": "application/json",
                "User-Agent": f"dialscore/{__version__}",
                **headers,
            },
            timeout=httpx.Timeout(timeout),
            limits=httpx.Limits(
                max_connections=max_in_flight, max_keepalive_connections=max_in_flight
            ),
            follow_redirects=False,
            # Proxy variables and .netrc play no part: the target and credentials are configured.
            trust_env=False,
        )

    async def close(self) -> None:
        await self._client.aclose()

    async def send(
        self,
        method: str,
        path: str,
        *,
        contact_id: str,
        params: Mapping[str, str] | None = None,
        json: Mapping[str, Any] | None = None,
    ) -> httpx.Response | None:
        """The provider's last answer: a success, or a client error that is this request's own
        and not worth repeating. None when every attempt failed (logged). Raises
        ProviderUnavailable when credentials are refused or the service cannot be reached.

        Nothing the contact carries is logged: requests are named by ``contact_id``."""
        attempt = 0
        while True:
            retry_after: float | None = None
            try:
                response = await self._send_once(method, path, params, json)
            except httpx.ConnectError as exc:
                if attempt >= self._max_retries:
                    log.warning(
                        "enrichment_provider_unreachable", provider=self.provider, error=str(exc)
                    )
                    raise ProviderUnavailable(self.provider, f"cannot connect: {exc}") from None
                problem = f"cannot connect: {exc}"
            except (httpx.TimeoutException, TimeoutError):
                problem = f"no answer within {self._timeout} s"
            except httpx.UnsupportedProtocol as exc:
                raise ProviderUnavailable(self.provider, f"bad base URL: {exc}") from None
            except httpx.TransportError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            except httpx.HTTPError as exc:
                log.warning(
                    "enrichment_provider_failed",
                    provider=self.provider,
                    contact_id=contact_id,
                    error=type(exc).__name__,
                )
                return None
            else:
                status = response.status_code
                if status in REFUSED:
                    raise self._refused(response)
                if status != 429 and status < 500:
                    return response
                problem = f"HTTP {status}"
                retry_after = self._retry_hint(response)
                if retry_after is not None:
                    retry_after = min(max(retry_after, 0.0), self._max_retry_after)
                    # The wait speaks for the account: every request waits, not just this one.
                    self._bucket.hold(retry_after)
            if attempt >= self._max_retries:
                log.warning(
                    "enrichment_provider_gave_up",
                    provider=self.provider,
                    contact_id=contact_id,
                    attempts=attempt + 1,
                    problem=problem,
                )
                return None
            delay = retry_after if retry_after is not None else self._backoff * 2**attempt
            attempt += 1
            await self._sleep(delay)

    async def _send_once(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        json: Mapping[str, Any] | None,
    ) -> httpx.Response:
        async with self._in_flight:
            await self._bucket.acquire()
            # httpx times each phase alone; this bounds the whole request.
            async with asyncio.timeout(self._timeout):
                return await self._client.request(method, path, params=params, json=json)

    def _refused(self, response: httpx.Response) -> ProviderUnavailable:
        reason = f"credentials refused (HTTP {response.status_code})"
        if response.status_code == 402:
            reason = "out of credits (HTTP 402)"
        if not self._refusal_logged:
            # Once per instance: the same refusal would otherwise be logged for every contact.
            self._refusal_logged = True
            log.error(
                "enrichment_provider_refused",
                provider=self.provider,
                status=response.status_code,
                hint=self._credentials_hint,
                message=error_message(response),
            )
        return ProviderUnavailable(self.provider, reason)


def error_message(response: httpx.Response) -> str | None:
    """The provider's own words about an error answer, when it gave some, shortened for logs.

    PDL answers ``{"error": {"type", "message"}}``; Apollo ``{"error": "..."}`` or
    ``{"message": "..."}``."""
    try:
        body = response.json()
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    if isinstance(error, dict):
        error = error.get("message") or error.get("type")
    message = error if isinstance(error, str) else body.get("message")
    return message[:200] if isinstance(message, str) else None
