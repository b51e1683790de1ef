"""What signing in produces and the rules it follows."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from dialscore.accounts.schemas import Principal
from dialscore.config import Settings

MIN_PASSWORD_LENGTH = 10
MAX_PASSWORD_LENGTH = 1024


@dataclass(frozen=True)
class Policy:
    """How long sessions last and how failed sign-ins are slowed down, then refused."""

    idle: timedelta = timedelta(hours=2)
    lifetime: timedelta = timedelta(hours=12)
    # Failures within ``window`` after which each further answer waits a little longer.
    failures_before_delay: int = 3
    max_delay_seconds: float = 5.0
    # Failures within ``window`` after which sign-ins for that email are refused for ``lock``;
    # an address, which many people may share, gets ``address_factor`` times as many.
    failures_before_lock: int = 10
    address_factor: int = 5
    window: timedelta = timedelta(minutes=15)
    lock: timedelta = timedelta(minutes=15)
    password_link_lifetime: timedelta = timedelta(hours=24)


def policy(settings: Settings) -> Policy:
    """The policy the settings make."""
    return Policy(
        idle=timedelta(minutes=settings.session_idle_minutes),
        lifetime=timedelta(hours=settings.session_lifetime_hours),
        failures_before_delay=settings.signin_failures_before_delay,
        failures_before_lock=settings.signin_failures_before_lock,
        window=timedelta(minutes=settings.signin_lock_minutes),
        lock=timedelta(minutes=settings.signin_lock_minutes),
    )


@dataclass(frozen=True)
class WebUser:
    """A signed-in person: who they act as in the services, and their session's CSRF token."""

    principal: Principal
    email: str
    session_id: str
    csrf_token: str
    last_seen_at: datetime

    @property
    def is_admin(self) -> bool:
        return self.principal.role == "admin"


@dataclass(frozen=True)
class SignedIn:
    """A new session; ``token`` goes in the cookie and is never stored."""

    token: str
    expires_at: datetime


@dataclass(frozen=True)
class Refusal:
    """Why a sign-in was not accepted, in words for the person, and how long to wait first."""

    message: str
    delay_seconds: float = 0.0
