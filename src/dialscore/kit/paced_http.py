"""The HTTP client every outside provider (verification, enrichment) is called through:
capped, paced, retried; and what it raises when a provider cannot answer at all."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
import structlog

from dialscore import __version__
from dialscore.kit import metrics
from dialscore.kit.clock import utcnow

log = structlog.get_logger(__name__)

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]
RetryHint = Callable[[httpx.Response], float | None]
ErrorDetails = Callable[[httpx.Response], dict[str, Any]]

# Answers that speak for the account, not the request: nothing can be done while they last.
REFUSED = frozenset({401, 402, 403})


class ProviderUnavailable(Exception):
    """The provider cannot answer at all (down, unreachable or misconfigured); ``refused``
    when it is the account that is refused (the key, its credits or its rights)."""

    def __init__(self, provider: str, reason: str, *, refused: bool = False) -> None:
        super().__init__(f"{provider}: {reason}")
        self.provider = provider
        self.reason = reason
        self.refused = refused


def parse_retry_after(value: str | None, now: datetime) -> float | None:
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - now).total_seconds())


def retry_after_header(response: httpx.Response) -> float | None:
    """Seconds the service asked us to wait in ``Retry-After``, when it did."""
    return parse_retry_after(response.headers.get("Retry-After"), utcnow())


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


def error_details(response: httpx.Response) -> dict[str, Any]:
    """An error answer's log fields: the provider's own words (``error_message``)."""
    return {"message": error_message(response)}


class TokenBucket:
    """At most ``rate`` acquisitions a second after an initial burst of ``capacity``.

    A caller that finds no token reserves the next one (the count goes negative) and waits for
    it, so concurrent callers are spaced in arrival order without a lock."""

    def __init__(
        self,
        rate: float,
        capacity: float = 1.0,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.rate = rate
        self.capacity = capacity
        self._clock = clock
        self._sleep = sleep
        self._tokens = capacity
        self._updated = clock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.capacity, self._tokens + (now - self._updated) * self.rate)
        self._updated = now

    def reserve(self) -> float:
        """Take one token; the seconds until it may be used."""
        self._refill()
        self._tokens -= 1
        return 0.0 if self._tokens >= 0 else -self._tokens / self.rate

    async def acquire(self) -> float:
        """Wait for a token; the seconds waited."""
        wait = self.reserve()
        if wait > 0:
            try:
                await self._sleep(wait)
            except asyncio.CancelledError:
                # A cancelled caller gives its place back rather than leave a debt behind.
                self._tokens += 1
                raise
        return wait

    def hold(self, seconds: float) -> None:
        """Hand out no token for ``seconds`` (the service asked everyone to back off)."""
        self._refill()
        self._tokens = min(self._tokens, 1 - seconds * self.rate)


@dataclass(frozen=True)
class Pacing:
    """How one provider's requests go out: at most ``max_in_flight`` at once, ``rate_per_second``
    after a burst of ``burst``, each bounded by ``timeout``; a failed one tried again up to
    ``max_retries`` times, after ``backoff`` seconds doubling each time or as long as the
    service asks (``Retry-After``, at most ``max_retry_after``). ``clock`` and ``sleep`` are
    the time the pacing reads and waits on."""

    max_in_flight: int = 10
    rate_per_second: float = 10.0
    burst: float = 1.0
    timeout: float = 10.0
    max_retries: int = 2
    backoff: float = 0.5
    max_retry_after: float = 30.0
    clock: Clock = time.monotonic
    sleep: Sleep = asyncio.sleep

    def __post_init__(self) -> None:
        if self.max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        if self.rate_per_second <= 0:
            raise ValueError("rate_per_second must be positive")
        if self.burst < 1:
            raise ValueError("burst must be at least 1")
        if self.timeout <= 0:
            raise ValueError("timeout must be positive")
        if self.max_retries < 0:
            raise ValueError("max_retries must not be negative")


class PacedClient:
    """One provider's requests, paced as ``pacing`` says by a token bucket shared by every
    request on the instance; 429, 5xx, timeouts and connection errors retried.

    ``events`` names its log events (``<events>_gave_up``, ``_refused``, ``_unreachable``,
    ``_failed``); ``refused`` are the statuses that speak for the account, not the request
    (they raise ProviderUnavailable); ``describe_error`` gives the log fields of a refused or
    rejected answer; ``retry_hint`` reads how long an answer asks to wait.

    Create and use an instance on one event loop."""

    def __init__(
        self,
        provider: str,
        *,
        base_url: str,
        headers: Mapping[str, str],
        credentials_hint: str,
        pacing: Pacing,
        events: str = "enrichment_provider",
        refused: frozenset[int] = REFUSED,
        describe_error: ErrorDetails = error_details,
        auth: httpx.Auth | None = None,
        retry_hint: RetryHint = retry_after_header,
    ) -> None:
        self.provider = provider
        self._credentials_hint = credentials_hint
        self._events = events
        self._refused_statuses = refused
        self._describe_error = describe_error
        self._timeout = pacing.timeout
        self._max_retries = pacing.max_retries
        self._backoff = pacing.backoff
        self._max_retry_after = pacing.max_retry_after
        self._retry_hint = retry_hint
        self._sleep = pacing.sleep
        self._bucket = TokenBucket(
            pacing.rate_per_second, pacing.burst, clock=pacing.clock, sleep=pacing.sleep
        )
        self._in_flight = asyncio.Semaphore(pacing.max_in_flight)
        self._refusal_logged = False
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            auth=auth,
            headers={
                "Accept": "application/json",
                "User-Agent": f"dialscore/{__version__}",
                **headers,
            },
            timeout=httpx.Timeout(pacing.timeout),
            limits=httpx.Limits(
                max_connections=pacing.max_in_flight,
                max_keepalive_connections=pacing.max_in_flight,
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
        subject: Mapping[str, str],
        params: Mapping[str, str] | None = None,
        json: Mapping[str, Any] | None = None,
    ) -> httpx.Response | None:
        """The provider's last answer: a success, or a client error that is this request's own
        and not worth repeating. None when every attempt failed (logged). Raises
        ProviderUnavailable when credentials are refused or the service cannot be reached.

        Requests are named in the log by ``subject`` (a contact id, a masked number): nothing
        else they carry is logged."""
        attempt = 0
        while True:
            retry_after: float | None = None
            try:
                response = await self._send_once(method, path, params, json)
            except httpx.ConnectError as exc:
                if attempt >= self._max_retries:
                    log.warning(
                        f"{self._events}_unreachable", provider=self.provider, error=str(exc)
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
                    f"{self._events}_failed",
                    provider=self.provider,
                    error=type(exc).__name__,
                    **subject,
                )
                return None
            else:
                status = response.status_code
                if status in self._refused_statuses:
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
                    f"{self._events}_gave_up",
                    provider=self.provider,
                    attempts=attempt + 1,
                    problem=problem,
                    **subject,
                )
                return None
            delay = retry_after if retry_after is not None else self._backoff * 2**attempt
            attempt += 1
            await self._sleep(delay)

    async def fetch_json(
        self,
        method: str,
        path: str,
        *,
        events: str,
        subject: Mapping[str, str],
        params: Mapping[str, str] | None = None,
        json: Mapping[str, Any] | None = None,
    ) -> dict[str, Any] | None:
        """``send``, then the answer's JSON object. None when no answer came, for 404
        (nothing there, logged ``<events>_not_found``), for any other status than 200
        (``<events>_rejected``) and for an answer that is no JSON object
        (``<events>_unreadable``)."""
        response = await self.send(method, path, subject=subject, params=params, json=json)
        if response is None:
            return None
        if response.status_code == 404:
            log.debug(f"{events}_not_found", **subject)
            return None
        if response.status_code != 200:
            log.warning(
                f"{events}_rejected",
                status=response.status_code,
                **subject,
                **self._describe_error(response),
            )
            return None
        try:
            body = response.json()
        except ValueError:
            log.warning(f"{events}_unreadable", reason="not JSON", **subject)
            return None
        if not isinstance(body, dict):
            log.warning(f"{events}_unreadable", reason="not an object", **subject)
            return None
        return body

    async def _send_once(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        json: Mapping[str, Any] | None,
    ) -> httpx.Response:
        async with self._in_flight:
            await self._bucket.acquire()
            started = time.perf_counter()
            try:
                # httpx times each phase alone; this bounds the whole request.
                async with asyncio.timeout(self._timeout):
                    response = await self._client.request(method, path, params=params, json=json)
            except BaseException as exc:
                metrics.observe_provider_failure(self.provider, exc, started)
                raise
            metrics.observe_provider_answer(
                self.provider, response.status_code, self._refused_statuses, started
            )
            return response

    def _refused(self, response: httpx.Response) -> ProviderUnavailable:
        reason = f"credentials refused (HTTP {response.status_code})"
        if response.status_code == 402:
            reason = "out of credits (HTTP 402)"
        if not self._refusal_logged:
            # Once per instance: the same refusal would otherwise be logged for every contact.
            self._refusal_logged = True
            log.error(
                f"{self._events}_refused",
                provider=self.provider,
                status=response.status_code,
                hint=self._credentials_hint,
                **self._describe_error(response),
            )
        return ProviderUnavailable(self.provider, reason, refused=True)
