"""Twilio Lookup v2 line type intelligence as a verification provider for core scoring."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import quote

import httpx
import structlog

from dialscore import __version__
from dialscore.kit.clock import utcnow
from dialscore.scoring.providers import ProviderUnavailable, Verification
from dialscore.webhooks.policy import parse_retry_after

log = structlog.get_logger(__name__)

DEFAULT_BASE_URL = "https://lookups.twilio.com"
FIELDS = "line_type_intelligence"

# Twilio's documented line_type_intelligence.type values, in our vocabulary.
TWILIO_LINE_TYPES: dict[str, str] = {
    "landline": "landline",
    "mobile": "mobile",
    "fixedVoip": "voip",
    "nonFixedVoip": "voip",
    "personal": "personal",
    "tollFree": "toll_free",
    "premium": "premium",
    "sharedCost": "shared_cost",
    "uan": "uan",
    "voicemail": "voicemail",
    "pager": "pager",
    "unknown": "unknown",
}

_E164 = re.compile(r"\+[1-9][0-9]{1,14}")

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


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


def _masked(number: str) -> str:
    """Enough of a number to tell log lines apart, not enough to dial it."""
    return f"{number[:3]}…{number[-2:]}" if len(number) > 6 else "…"


class TwilioLookup:
    """``GET /v2/PhoneNumbers/{number}?Fields=line_type_intelligence``, one number a request.

    Requests in flight are capped and paced by a token bucket shared by every verify() call on
    the instance; 429, 5xx, timeouts and connection errors are retried with backoff. Create and
    use an instance on one event loop."""

    def __init__(
        self,
        account_sid: str,
        auth_token: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        max_in_flight: int = 10,
        rate_per_second: float = 50.0,
        burst: float = 1.0,
        timeout: float = 5.0,
        max_retries: int = 2,
        backoff: float = 0.5,
        max_retry_after: float = 30.0,
        name: str = "twilio",
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        if max_retries < 0:
            raise ValueError("max_retries must not be negative")
        self.name = name
        self._timeout = timeout
        self._max_retries = max_retries
        self._backoff = backoff
        self._max_retry_after = max_retry_after
        self._sleep = sleep
        self._bucket = TokenBucket(rate_per_second, burst, clock=clock, sleep=sleep)
        self._in_flight = asyncio.Semaphore(max_in_flight)
        self._refusal_logged = False
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            auth=httpx.BasicAuth(account_sid, auth_token),
            headers={"Accept": "application/json", "User-Agent": f"dialscore/{__version__}"},
            timeout=httpx.Timeout(timeout),
            limits=httpx.Limits(
                max_connections=max_in_flight, max_keepalive_connections=max_in_flight
            ),
            follow_redirects=False,
            # Proxy variables and .netrc play no part: the target and credentials are configured.
            trust_env=False,
        )

    async def verify(self, numbers: Sequence[str]) -> dict[str, Verification]:
        results: dict[str, Verification] = {}

        async def verify_into(number: str) -> None:
            verification = await self._verify_one(number)
            if verification is not None:
                results[number] = verification

        try:
            # The first ProviderUnavailable cancels the rest of the batch: it would fail alike.
            async with asyncio.TaskGroup() as group:
                for number in dict.fromkeys(numbers):
                    group.create_task(verify_into(number))
        except* ProviderUnavailable as failures:
            raise _first_unavailable(failures) from None
        return results

    async def close(self) -> None:
        await self._client.aclose()

    async def _verify_one(self, number: str) -> Verification | None:
        if not _E164.fullmatch(number):
            log.warning(
                "twilio_lookup_skipped", reason="not an E.164 number", number=_masked(number)
            )
            return None
        path = f"/v2/PhoneNumbers/{quote(number, safe='')}"
        attempt = 0
        while True:
            retry_after: float | None = None
            try:
                response = await self._get(path)
            except httpx.ConnectError as exc:
                if attempt >= self._max_retries:
                    # Not the number's fault: nothing can be verified while it lasts.
                    log.warning("twilio_lookup_unreachable", error=str(exc))
                    raise ProviderUnavailable(self.name, f"cannot connect: {exc}") from None
                problem = f"cannot connect: {exc}"
            except (httpx.TimeoutException, TimeoutError):
                problem = f"no answer within {self._timeout} s"
            except httpx.UnsupportedProtocol as exc:
                raise ProviderUnavailable(self.name, f"bad base URL: {exc}") from None
            except httpx.TransportError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            except httpx.HTTPError as exc:
                log.warning("twilio_lookup_failed", number=_masked(number), error=repr(exc))
                return None
            else:
                status = response.status_code
                if status == 200:
                    return self._read(number, response)
                if status == 404:
                    log.debug("twilio_lookup_not_found", number=_masked(number))
                    return None
                if status in (401, 403):
                    raise self._refused(response)
                if status != 429 and status < 500:
                    log.warning(
                        "twilio_lookup_rejected",
                        number=_masked(number),
                        status=status,
                        **_twilio_error(response),
                    )
                    return None
                problem = f"HTTP {status}"
                retry_after = parse_retry_after(response.headers.get("Retry-After"), utcnow())
                if retry_after is not None:
                    retry_after = min(retry_after, self._max_retry_after)
                    # Retry-After speaks for the account: every request waits, not just this.
                    self._bucket.hold(retry_after)
            if attempt >= self._max_retries:
                log.warning(
                    "twilio_lookup_gave_up",
                    number=_masked(number),
                    attempts=attempt + 1,
                    problem=problem,
                )
                return None
            delay = retry_after if retry_after is not None else self._backoff * 2**attempt
            attempt += 1
            await self._sleep(delay)

    async def _get(self, path: str) -> httpx.Response:
        async with self._in_flight:
            await self._bucket.acquire()
            # httpx times each phase alone; this bounds the whole request.
            async with asyncio.timeout(self._timeout):
                return await self._client.get(path, params={"Fields": FIELDS})

    def _read(self, number: str, response: httpx.Response) -> Verification | None:
        try:
            body = response.json()
        except ValueError:
            log.warning("twilio_lookup_unreadable", number=_masked(number), reason="not JSON")
            return None
        if not isinstance(body, dict):
            log.warning("twilio_lookup_unreadable", number=_masked(number), reason="not an object")
            return None
        if body.get("valid") is False:
            return Verification(self.name, "unknown", valid=False)
        intelligence = body.get("line_type_intelligence")
        if not isinstance(intelligence, dict):
            log.warning(
                "twilio_lookup_unreadable",
                number=_masked(number),
                reason="no line_type_intelligence in the answer",
            )
            return None
        twilio_type = intelligence.get("type")
        if not isinstance(twilio_type, str):
            # Twilio names why in error_code, e.g. 60601 for Canadian numbers without access.
            log.warning(
                "twilio_lookup_no_line_type",
                number=_masked(number),
                error_code=intelligence.get("error_code"),
            )
            return None
        line_type = TWILIO_LINE_TYPES.get(twilio_type)
        if line_type is None:
            log.warning("twilio_lookup_unknown_type", type=twilio_type)
            line_type = "unknown"
        carrier = intelligence.get("carrier_name")
        return Verification(
            self.name, line_type, carrier if isinstance(carrier, str) and carrier else None
        )

    def _refused(self, response: httpx.Response) -> ProviderUnavailable:
        reason = f"credentials refused (HTTP {response.status_code})"
        if not self._refusal_logged:
            self._refusal_logged = True
            log.error(
                "twilio_lookup_refused",
                status=response.status_code,
                hint="check DIALSCORE_TWILIO_ACCOUNT_SID and DIALSCORE_TWILIO_AUTH_TOKEN",
                **_twilio_error(response),
            )
        return ProviderUnavailable(self.name, reason)


def _twilio_error(response: httpx.Response) -> dict[str, Any]:
    """Twilio's error code and message from an error answer, for the log."""
    try:
        body = response.json()
    except ValueError:
        return {}
    if not isinstance(body, dict):
        return {}
    return {"code": body.get("code"), "message": body.get("message")}


def _first_unavailable(group: BaseExceptionGroup[ProviderUnavailable]) -> ProviderUnavailable:
    for failure in group.exceptions:
        if isinstance(failure, ProviderUnavailable):
            return failure
        return _first_unavailable(failure)
    raise AssertionError("an exception group is never empty")
