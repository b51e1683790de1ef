"""Apollo People Enrichment (``/api/v1/people/match``) as an enrichment source."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import structlog

from dialscore.enrichment.providers import provider_enrichment
from dialscore.enrichment.waterfall import Enrichment, EnrichmentRequest
from dialscore.kit.paced_http import PacedClient, Pacing
from dialscore.phones import DEFAULT_COUNTRY

log = structlog.get_logger(__name__)

DEFAULT_BASE_URL = "https://api.apollo.io"
MATCH_PATH = "/api/v1/people/match"
DEFAULT_PACING = Pacing(rate_per_second=1.0, timeout=10.0)
# What to check when Apollo refuses the operator's key.
CREDENTIALS_HINT = (
    "check DIALSCORE_APOLLO_API_KEY, its access to people/match and the account's credits"
)

# Apollo's phone number types, in our vocabulary; any other type is "other".
APOLLO_PHONE_TYPES: dict[str, str] = {
    "mobile": "mobile",
    "work_direct": "direct",
    "work": "direct",
    "work_hq": "hq",
}


def apollo_body(fields: Mapping[str, Any]) -> dict[str, str] | None:
    """The contact as Apollo's match parameters; None when it cannot make a match.

    Apollo matches on an email or a LinkedIn URL alone; a name needs its company (name or
    domain), or Apollo answers 200 without a person and may still count the call."""
    body = {
        "first_name": _text(fields.get("firstName")),
        "last_name": _text(fields.get("lastName")),
        "organization_name": _text(fields.get("companyAccount")),
        "domain": domain_of(_text(fields.get("website"))),
        "email": _text(fields.get("email")),
        "linkedin_url": _text(fields.get("linkedInUrl")),
    }
    present = {name: value for name, value in body.items() if value}
    named = (
        "first_name" in present
        and "last_name" in present
        and ("organization_name" in present or "domain" in present)
    )
    if not ("email" in present or "linkedin_url" in present or named):
        return None
    return present


def domain_of(website: str) -> str:
    """``https://www.acme.com/about`` → ``acme.com``; Apollo wants the bare domain."""
    if not website:
        return ""
    try:
        host = urlsplit(website if "//" in website else f"//{website}").hostname or ""
    except ValueError:
        return ""
    return host.removeprefix("www.")


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _phone_type(entry: Mapping[str, Any]) -> str | None:
    apollo_type = entry.get("type") or entry.get("type_cd")
    if not isinstance(apollo_type, str) or not apollo_type:
        return None
    return APOLLO_PHONE_TYPES.get(apollo_type, "other")


class ApolloPeopleMatch:
    """``POST /api/v1/people/match`` with the contact's identity; the person's phone numbers.

    Apollo sends newly revealed numbers only to a webhook (``reveal_phone_number`` requires a
    ``webhook_url``, delivered minutes later), so this source does not ask for a reveal: it
    reads the numbers the synchronous answer carries, those already available to the team."""

    name = "apollo"

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        default_region: str = DEFAULT_COUNTRY,
        pacing: Pacing = DEFAULT_PACING,
        credentials_hint: str = CREDENTIALS_HINT,
    ) -> None:
        self._region = default_region
        self.pacing = pacing
        self._client = PacedClient(
            self.name,
            base_url=base_url,
            headers={"X-Api-Key": api_key, "Cache-Control": "no-cache"},
            credentials_hint=credentials_hint,
            pacing=pacing,
        )

    async def close(self) -> None:
        await self._client.close()

    async def find(self, request: EnrichmentRequest) -> Enrichment | None:
        body = apollo_body(request.fields)
        if body is None:
            log.debug("apollo_match_skipped", contact_id=request.contact_id, reason="too little")
            return None
        answer = await self._client.fetch_json(
            "POST",
            MATCH_PATH,
            events="apollo_match",
            subject={"contact_id": request.contact_id},
            json=body,
        )
        if answer is None:
            return None
        contact_id = request.contact_id
        person = answer.get("person")
        if not isinstance(person, dict):
            log.debug("apollo_match_none", contact_id=contact_id)
            return None
        entries = person.get("phone_numbers")
        numbers: list[tuple[object, str | None]] = []
        if isinstance(entries, list):
            for entry in entries:
                if isinstance(entry, dict):
                    raw = entry.get("sanitized_number") or entry.get("raw_number")
                    numbers.append((raw, _phone_type(entry)))
        return provider_enrichment(
            self.name,
            contact_id=contact_id,
            numbers=numbers,
            region=self._region,
            record=person.get("id"),
        )
