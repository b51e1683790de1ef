"""People Data Labs Person Enrichment API (v5) as an enrichment source."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
import structlog

from dialscore.enrichment.providers import provider_enrichment
from dialscore.enrichment.waterfall import Enrichment, EnrichmentRequest
from dialscore.kit.clock import utcnow
from dialscore.kit.paced_http import PacedClient, Pacing, retry_after_header
from dialscore.phones import DEFAULT_COUNTRY

log = structlog.get_logger(__name__)

DEFAULT_BASE_URL = "https://api.peopledatalabs.com"
ENRICH_PATH = "/v5/person/enrich"
# PDL answers 404 (and charges nothing) for a match without numbers.
REQUIRED = "phone_numbers"
DEFAULT_PACING = Pacing(rate_per_second=10.0, timeout=10.0)
# What to check when PDL refuses the operator's key.
CREDENTIALS_HINT = "check DIALSCORE_PDL_API_KEY and the account's credits"


def pdl_params(fields: Mapping[str, Any]) -> dict[str, str] | None:
    """The contact as PDL's query parameters; None when it cannot make a match.

    PDL's documented minimum: a profile, an email, or a first and last name with a company
    (a company's name, website or social URL)."""
    params = {
        "profile": _text(fields.get("linkedInUrl")),
        "email": _text(fields.get("email")),
        "first_name": _text(fields.get("firstName")),
        "last_name": _text(fields.get("lastName")),
        "company": _text(fields.get("companyAccount"))
        or _text(fields.get("website"))
        or _text(fields.get("companyLinkedInUrl")),
    }
    present = {name: value for name, value in params.items() if value}
    named = "first_name" in present and "last_name" in present and "company" in present
    if not ("profile" in present or "email" in present or named):
        return None
    return present


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def pdl_retry_hint(response: httpx.Response) -> float | None:
    """Seconds to wait after a 429: ``Retry-After`` when given, else PDL's documented
    ``x-ratelimit-reset`` (the time its fixed window resets) when it reads as a time."""
    wait = retry_after_header(response)
    if wait is not None:
        return wait
    return seconds_until_reset(response.headers.get("x-ratelimit-reset"), utcnow())


def seconds_until_reset(value: str | None, now: datetime) -> float | None:
    """A reset time in seconds from ``now``: epoch seconds (or milliseconds), a count of
    seconds, ISO 8601 or an HTTP date. None for anything else (PDL does not say which)."""
    if not value:
        return None
    value = value.strip()
    try:
        number = float(value)
    except ValueError:
        number = None
    if number is not None:
        if not math.isfinite(number):
            return None
        if number >= 1e12:
            number /= 1000
        return max(0.0, number - now.timestamp() if number >= 1e9 else number)
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - now).total_seconds())


class PeopleDataLabs:
    """``GET /v5/person/enrich`` with the contact's identity; the match's phone numbers.

    ``mobile_phone`` is hinted mobile; the other ``phone_numbers`` carry no hint. Confidence is
    PDL's likelihood (1-10) over 10."""

    name = "pdl"

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        min_likelihood: int = 6,
        default_region: str = DEFAULT_COUNTRY,
        pacing: Pacing = DEFAULT_PACING,
        credentials_hint: str = CREDENTIALS_HINT,
    ) -> None:
        if not 1 <= min_likelihood <= 10:
            raise ValueError("min_likelihood must be between 1 and 10")
        self._min_likelihood = min_likelihood
        self.pacing = pacing
        self._region = default_region
        self._hidden_logged = False
        self._client = PacedClient(
            self.name,
            base_url=base_url,
            headers={"X-Api-Key": api_key},
            credentials_hint=credentials_hint,
            pacing=pacing,
            retry_hint=pdl_retry_hint,
        )

    async def close(self) -> None:
        await self._client.close()

    async def find(self, request: EnrichmentRequest) -> Enrichment | None:
        params = pdl_params(request.fields)
        if params is None:
            log.debug("pdl_enrich_skipped", contact_id=request.contact_id, reason="too little")
            return None
        params["min_likelihood"] = str(self._min_likelihood)
        params["required"] = REQUIRED
        body = await self._client.fetch_json(
            "GET",
            ENRICH_PATH,
            events="pdl_enrich",
            subject={"contact_id": request.contact_id},
            params=params,
        )
        if body is None:
            return None
        contact_id = request.contact_id
        data = body.get("data")
        if not isinstance(data, dict):
            log.warning("pdl_enrich_unreadable", reason="no data", contact_id=contact_id)
            return None
        mobile = data.get("mobile_phone")
        others = data.get("phone_numbers")
        if mobile is True or others is True:
            self._log_hidden()
        numbers: list[tuple[object, str | None]] = [(mobile, "mobile")]
        if isinstance(others, list):
            numbers.extend((number, None) for number in others)
        return provider_enrichment(
            self.name,
            contact_id=contact_id,
            numbers=numbers,
            region=self._region,
            record=data.get("id"),
            confidence=self._confidence(body.get("likelihood")),
        )

    def _confidence(self, likelihood: Any) -> float:
        if isinstance(likelihood, bool) or not isinstance(likelihood, int | float):
            likelihood = self._min_likelihood
        return min(max(float(likelihood) / 10, 0.0), 1.0)

    def _log_hidden(self) -> None:
        if not self._hidden_logged:
            # Free plans answer true/false instead of contact fields; no number ever comes.
            self._hidden_logged = True
            log.error(
                "pdl_enrich_numbers_hidden",
                hint="the PDL plan does not include contact fields (phone numbers come as true)",
            )
