"""Settings read from DIALSCORE_* environment variables and a .env file."""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from datetime import timedelta
from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="DIALSCORE_", env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

    data_dir: Path = Path("./var")
    database_url: str = ""
    redis_url: str | None = None
    # Prefix of every Redis key and queue, so deployments can share one Redis.
    redis_namespace: str = "dialscore"
    secret_key: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    # /metrics on a port of its own (and not on the API's); for 'dialscore worker', the only
    # way its counts are served unless PROMETHEUS_MULTIPROC_DIR shares them (P85, P86).
    metrics_port: int | None = Field(default=None, ge=1, le=65535)
    # Where that port listens; DIALSCORE_HOST when unset.
    metrics_host: str | None = None

    log_format: Literal["console", "json"] = "console"
    log_level: str = "INFO"

    worker_threads: int = Field(default=4, ge=1)
    # The longest an idle worker waits before it looks in the broker (Redis) again, and an
    # idle worker thread before it checks for shutdown: a message published then waits at
    # most this long to be taken.
    worker_poll_ms: int = Field(default=40, ge=10)
    # How long an outbox message may go without word from the worker holding it before it is
    # published again: a message waiting in the broker, or a task whose worker died. A running
    # task renews it every third of this.
    outbox_lease_seconds: float = Field(default=10.0, gt=0)
    # A task that raised is published again after this wait, doubled after each failure
    # up to outbox_retry_max_seconds.
    outbox_retry_seconds: float = Field(default=1.0, ge=0)
    outbox_retry_max_seconds: float = Field(default=120.0, gt=0)
    # Publications of one message that may fail (the task raised, or its worker stopped
    # before finishing) before the message is set aside for 'dialscore admin failed-work'.
    outbox_max_attempts: int = Field(default=10, ge=1)
    relay_poll_seconds: float = Field(default=0.5, gt=0)
    job_batch_size: int = Field(default=250, ge=1)
    # A worker's hold on a job it processes, renewed every third of it while the job runs:
    # a job whose worker died is taken over this long after its last renewal.
    job_lease_seconds: float = Field(default=10.0, gt=0)
    # On SIGTERM, how long work in flight (jobs, webhook deliveries; with serve, requests
    # first) may take to finish before the rest is stopped and handed back to other workers.
    shutdown_grace_seconds: float = Field(default=10.0, ge=0)

    # Webhooks (D20-D24).
    webhook_allow_private: bool = False
    webhook_retry_schedule: str | None = None
    # Each retry's wait varies by up to this fraction either way, so that deliveries that
    # failed together do not all come back at once; 0 keeps the schedule's times exactly.
    webhook_retry_jitter: float = Field(default=0.1, ge=0, lt=1)
    webhook_timeout: float = Field(default=10.0, gt=0)
    webhook_max_in_flight: int = Field(default=50, ge=1)
    webhook_per_endpoint: int = Field(default=8, ge=1)
    # A worker's hold on the deliveries it sends, renewed every third of it while they are in
    # flight: those of a worker that died are sent again this long after its last renewal.
    webhook_lease_seconds: float = Field(default=10.0, gt=0)
    webhook_poll_seconds: float = Field(default=0.5, gt=0)
    # Days the body of a finished delivery (delivered, or its retries run out) is kept after
    # it finished; then housekeeping removes it, and the delivery log keeps its times and
    # outcomes (P130).
    webhook_retention_days: int = Field(default=30, ge=1)
    # Seconds every attempt to a subscription may fail, counted from the first failure after
    # its last success (or its creation, or its reactivation), before it is turned off
    # (inactive, with when and why) until its owner activates it again (P160).
    webhook_disable_after_seconds: float = Field(default=432000, gt=0)

    # Request rate limits (D25, D26): counted in memory, or in Redis when redis_url is set.
    rate_limit_enabled: bool = True
    # When Redis cannot be reached: "fail-open" serves requests (and sends webhooks) under
    # this process's own counters; "fail-closed" answers 503 (and holds webhooks back until
    # Redis answers). Either way the outage is logged once, and its end once.
    rate_limit_failure_mode: Literal["fail-open", "fail-closed"] = "fail-open"
    rate_limit_redis_timeout: float = Field(default=0.25, gt=0)

    # Enrichment: the sources in the order they are tried; a source
    # that is not configured (a provider without its key) is skipped.
    enrichment_sources: str = "history,directory,pdl,apollo"
    # Keep asking the next sources after one found numbers, and add all new numbers.
    enrichment_collect_all: bool = False
    # Below this match confidence, a candidate is not the same person.
    enrichment_min_confidence: float = Field(default=0.9, gt=0, le=1)

    # Core scoring: Twilio Lookup v2 (line type intelligence).
    # Both credentials set: the provider is on; neither: core scoring equals lightning.
    twilio_account_sid: str | None = None
    twilio_auth_token: str | None = None
    twilio_base_url: str = "https://lookups.twilio.com"
    twilio_max_in_flight: int = Field(default=10, ge=1)
    twilio_rate_per_second: float = Field(default=50.0, gt=0)
    twilio_timeout: float = Field(default=5.0, gt=0)

    # The FCC Reassigned Numbers Database (P190, P191): contacts with a consentDate have their
    # US numbers checked. Both credentials set: on; neither: off.
    rnd_username: str | None = None
    rnd_api_key: str | None = None
    rnd_base_url: str = "https://api.reassigned.us"
    rnd_max_in_flight: int = Field(default=5, ge=1)
    rnd_rate_per_second: float = Field(default=10.0, gt=0)
    rnd_timeout: float = Field(default=10.0, gt=0)

    # Enrichment providers (People Data Labs, Apollo).
    # A provider is on when its API key is set; without one the waterfall skips it.
    pdl_api_key: str | None = None
    pdl_base_url: str = "https://api.peopledatalabs.com"
    # PDL's likelihood (1-10) a match must reach; below it PDL answers no match.
    pdl_min_likelihood: int = Field(default=6, ge=1, le=10)
    pdl_rate_per_second: float = Field(default=10.0, gt=0)
    pdl_timeout: float = Field(default=10.0, gt=0)
    apollo_api_key: str | None = None
    apollo_base_url: str = "https://api.apollo.io"
    # Apollo also limits calls per hour and per day by plan; set this to fit the plan.
    apollo_rate_per_second: float = Field(default=1.0, gt=0)
    apollo_timeout: float = Field(default=10.0, gt=0)
    # Requests each provider may have in flight at once.
    enrichment_max_in_flight: int = Field(default=10, ge=1)

    # An operator's calling-time rules file over (or, with mode = "replace", instead of) the
    # packaged one (docs/compliance.md, P170); a file that is refused stops the start (P177).
    compliance_rules: str | None = None

    max_body_bytes: int = 10 * 1024 * 1024

    # The web app (/app): sessions end after this long without a page, or this long after
    # signing in, whichever comes first.
    session_idle_minutes: float = Field(default=120, gt=0)
    session_lifetime_hours: float = Field(default=12, gt=0)
    # Failed sign-ins for one email within the lock time: after the first number each answer
    # is slowed down, after the second the email is refused until the lock time has passed
    # (an address gets five times as many).
    signin_failures_before_delay: int = Field(default=3, ge=1)
    signin_failures_before_lock: int = Field(default=10, ge=1)
    signin_lock_minutes: float = Field(default=15, gt=0)
    upload_max_bytes: int = Field(default=20 * 1024 * 1024, ge=1)
    upload_max_rows: int = Field(default=50_000, ge=1)
    idempotency_ttl_hours: int = 24
    # How often each worker deletes expired sessions, password links, failed sign-ins,
    # idempotency answers and uploads, and the bodies of deliveries past their retention.
    housekeeping_minutes: float = Field(default=60, gt=0)

    @cached_property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'dialscore.db').as_posix()}"

    @property
    def is_sqlite(self) -> bool:
        return self.resolved_database_url.startswith("sqlite")

    @property
    def idempotency_ttl(self) -> timedelta:
        """How long the first answer to an idempotency key (or a form's one-time token) is
        kept."""
        return timedelta(hours=self.idempotency_ttl_hours)

    @property
    def webhook_retention(self) -> timedelta:
        """How long a finished delivery keeps its body."""
        return timedelta(days=self.webhook_retention_days)

    @property
    def webhook_disable_after(self) -> timedelta:
        """How long every attempt to a subscription may fail before it is turned off."""
        return timedelta(seconds=self.webhook_disable_after_seconds)

    @cached_property
    def resolved_secret_key(self) -> str:
        """The signing key; generated once and kept under data_dir when not configured."""
        if self.secret_key:
            return self.secret_key
        path = self.data_dir / "secret_key"
        if path.exists():
            return path.read_text().strip()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # Write a complete private file, then publish it with link(), which fails if another
        # process published first; nobody can read a half-written or world-readable key.
        fd, temp = tempfile.mkstemp(dir=self.data_dir, prefix=".secret_key.")
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_urlsafe(48))
            with contextlib.suppress(FileExistsError):
                os.link(temp, path)
        finally:
            os.unlink(temp)
        return path.read_text().strip()


def get_settings() -> Settings:
    return Settings()
