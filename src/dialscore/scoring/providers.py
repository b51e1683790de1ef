"""Verification providers for core scoring: what they promise, and which ones are configured."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from dialscore.config import Settings
from dialscore.kit.paced_http import Pacing, ProviderUnavailable
from dialscore.scoring.evidence import VERIFIED_LINE_TYPES, Verification
from dialscore.scoring.reassigned import ReassignedNumbers
from dialscore.scoring.twilio import TwilioLookup

# Our vocabulary of line types; every provider maps its own onto these.
LINE_TYPES = frozenset(VERIFIED_LINE_TYPES)
__all__ = ["LINE_TYPES", "ProviderUnavailable", "Verification", "VerificationProvider"]


class VerificationProvider(Protocol):
    name: str

    async def verify(self, numbers: Sequence[str]) -> dict[str, Verification]:
        """Verifications keyed by the E.164 numbers given; numbers not verified are absent.

        Never raises for one number (such failures are logged and the number left out);
        raises ProviderUnavailable when the service cannot answer at all."""
        ...

    async def close(self) -> None: ...


def check_provider_settings(settings: Settings) -> None:
    """Refuses a half-configured provider (an operator's mistake) with ValueError, so that
    the service does not start rather than silently score core as lightning."""
    sid, token = settings.twilio_account_sid, settings.twilio_auth_token
    if bool(sid) != bool(token):
        missing = "DIALSCORE_TWILIO_AUTH_TOKEN" if sid else "DIALSCORE_TWILIO_ACCOUNT_SID"
        raise ValueError(f"Twilio Lookup is half configured: set {missing} too, or neither")
    username, key = settings.rnd_username, settings.rnd_api_key
    if bool(username) != bool(key):
        missing = "DIALSCORE_RND_API_KEY" if username else "DIALSCORE_RND_USERNAME"
        raise ValueError(
            f"the Reassigned Numbers Database is half configured: set {missing} too, or neither"
        )


def providers_from_settings(settings: Settings) -> list[VerificationProvider]:
    """The configured providers, in the order they are consulted; empty when none is."""
    check_provider_settings(settings)
    providers: list[VerificationProvider] = []
    sid, token = settings.twilio_account_sid, settings.twilio_auth_token
    if sid and token:
        providers.append(
            TwilioLookup(
                sid,
                token,
                base_url=settings.twilio_base_url,
                pacing=Pacing(
                    max_in_flight=settings.twilio_max_in_flight,
                    rate_per_second=settings.twilio_rate_per_second,
                    timeout=settings.twilio_timeout,
                ),
            )
        )
    return providers


def reassigned_numbers_from_settings(settings: Settings) -> ReassignedNumbers | None:
    """The FCC Reassigned Numbers Database query when it is configured (P191), else None."""
    check_provider_settings(settings)
    username, key = settings.rnd_username, settings.rnd_api_key
    if not (username and key):
        return None
    return ReassignedNumbers(
        username,
        key,
        base_url=settings.rnd_base_url,
        pacing=Pacing(
            max_in_flight=settings.rnd_max_in_flight,
            rate_per_second=settings.rnd_rate_per_second,
            timeout=settings.rnd_timeout,
        ),
    )
