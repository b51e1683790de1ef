"""Twilio Lookup v2 line type intelligence as a verification provider for core scoring."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import httpx
import structlog

from dialscore.kit.paced_http import PacedClient, Pacing, ProviderUnavailable
from dialscore.phones import masked_number
from dialscore.scoring.evidence import Verification

log = structlog.get_logger(__name__)

DEFAULT_BASE_URL = "https://lookups.twilio.com"
FIELDS = "line_type_intelligence"
DEFAULT_PACING = Pacing(rate_per_second=50.0, timeout=5.0)

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
# Twilio answers 401 and 403 for the account; a 402 or other 4xx is this request's own.
REFUSED = frozenset({401, 403})


class TwilioLookup:
    """``GET /v2/PhoneNumbers/{number}?Fields=line_type_intelligence``, one number a request.

    Requests are paced as ``pacing`` says, across every verify() call on the instance; 429,
    5xx, timeouts and connection errors are retried with backoff. Create and use an instance
    on one event loop."""

    def __init__(
        self,
        account_sid: str,
        auth_token: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        pacing: Pacing = DEFAULT_PACING,
        name: str = "twilio",
    ) -> None:
        self.name = name
        self.pacing = pacing
        self._client = PacedClient(
            name,
            base_url=base_url,
            headers={},
            auth=httpx.BasicAuth(account_sid, auth_token),
            credentials_hint="check DIALSCORE_TWILIO_ACCOUNT_SID and DIALSCORE_TWILIO_AUTH_TOKEN",
            events="twilio_lookup",
            refused=REFUSED,
            describe_error=_twilio_error,
            pacing=pacing,
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
        await self._client.close()

    async def _verify_one(self, number: str) -> Verification | None:
        if not _E164.fullmatch(number):
            log.warning(
                "twilio_lookup_skipped", reason="not an E.164 number", number=masked_number(number)
            )
            return None
        body = await self._client.fetch_json(
            "GET",
            f"/v2/PhoneNumbers/{quote(number, safe='')}",
            events="twilio_lookup",
            subject={"number": masked_number(number)},
            params={"Fields": FIELDS},
        )
        return None if body is None else self._read(number, body)

    def _read(self, number: str, body: dict[str, Any]) -> Verification | None:
        if body.get("valid") is False:
            return Verification(self.name, "unknown", valid=False)
        intelligence = body.get("line_type_intelligence")
        if not isinstance(intelligence, dict):
            log.warning(
                "twilio_lookup_unreadable",
                number=masked_number(number),
                reason="no line_type_intelligence in the answer",
            )
            return None
        twilio_type = intelligence.get("type")
        if not isinstance(twilio_type, str):
            # Twilio names why in error_code, e.g. 60601 for Canadian numbers without access.
            log.warning(
                "twilio_lookup_no_line_type",
                number=masked_number(number),
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
