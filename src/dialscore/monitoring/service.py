"""What /metrics shows: the counts of this process (or, in multiprocess mode, of every process
of the machine) and gauges read from the database at scrape time, so that they are the same
whichever process answers."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import datetime

import structlog
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector
from sqlalchemy import Engine, create_engine
from sqlalchemy.pool import NullPool

from dialscore import __version__
from dialscore.config import Settings
from dialscore.jobs.tasks import TASKS
from dialscore.kit import metrics
from dialscore.kit.clock import utcnow
from dialscore.kit.db import configure_sqlite, sync_url
from dialscore.monitoring import repository as repo

log = structlog.get_logger(__name__)


def _age(oldest: datetime | None, now: datetime) -> float:
    return max(0.0, (now - oldest).total_seconds()) if oldest is not None else 0.0


class DatabaseCollector(Collector):
    """Gauges read from the database when /metrics is scraped: jobs not yet finished, the
    outbox, pending webhook deliveries. A database that cannot be read gives
    ``dialscore_database_up 0`` and none of them, rather than a failed scrape."""

    def __init__(self, database_url: str, *, clock: Callable[[], datetime] = utcnow) -> None:
        self._url = database_url
        self._clock = clock
        self._engine: Engine | None = None
        self._lock = threading.Lock()

    @property
    def engine(self) -> Engine:
        # No pool: a scrape comes every few seconds at most, and a pooled connection would
        # outlive the test or process that made it.
        with self._lock:
            if self._engine is None:
                engine = create_engine(sync_url(self._url), poolclass=NullPool)
                if engine.dialect.name == "sqlite":
                    configure_sqlite(engine)
                self._engine = engine
            return self._engine

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "dialscore_database_up", "1 when /metrics could read the database, else 0"
        )
        now = self._clock()
        try:
            with self.engine.connect() as connection:
                jobs = repo.unfinished_jobs(connection)
                outbox = repo.outbox(connection)
                deliveries = repo.deliveries(connection, now=now)
        except Exception as exc:
            log.warning("metrics could not read the database", error=str(exc))
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from _job_gauges(jobs, now)
        yield from _outbox_gauges(outbox, now)
        yield from _delivery_gauges(deliveries, now)


def _job_gauges(jobs: dict[str, repo.Backlog], now: datetime) -> Iterator[Metric]:
    count = GaugeMetricFamily(
        "dialscore_jobs", "Jobs not yet finished, by state (Init, Processing)", labels=["state"]
    )
    for state, backlog in sorted(jobs.items()):
        count.add_metric([state], backlog.count)
    yield count
    oldest = min((b.oldest for b in jobs.values() if b.oldest is not None), default=None)
    yield GaugeMetricFamily(
        "dialscore_oldest_unfinished_job_age_seconds",
        "Age of the oldest job not yet finished (0 when there is none)",
        value=_age(oldest, now),
    )


def _outbox_gauges(outbox: dict[tuple[str, bool], repo.Backlog], now: datetime) -> Iterator[Metric]:
    queued = GaugeMetricFamily(
        "dialscore_outbox_depth", "Outbox messages waiting to be done, by actor", labels=["actor"]
    )
    aside = GaugeMetricFamily(
        "dialscore_outbox_set_aside",
        "Outbox messages set aside after failing too often (dialscore admin failed-work)",
        labels=["actor"],
    )
    actors = sorted({actor for actor, _ in outbox} | set(TASKS))
    for actor in actors:
        queued.add_metric([actor], outbox.get((actor, False), repo.Backlog(0, None)).count)
        aside.add_metric([actor], outbox.get((actor, True), repo.Backlog(0, None)).count)
    yield queued
    yield aside
    oldest = min(
        (b.oldest for (_, set_aside), b in outbox.items() if not set_aside and b.oldest),
        default=None,
    )
    yield GaugeMetricFamily(
        "dialscore_outbox_oldest_message_age_seconds",
        "Age of the oldest outbox message waiting to be done (0 when there is none)",
        value=_age(oldest, now),
    )


def _delivery_gauges(deliveries: repo.Deliveries, now: datetime) -> Iterator[Metric]:
    yield GaugeMetricFamily(
        "dialscore_webhook_deliveries_pending",
        "Webhook deliveries and callbacks not yet delivered nor failed, to active subscriptions",
        value=deliveries.pending.count,
    )
    yield GaugeMetricFamily(
        "dialscore_webhook_deliveries_due",
        "Pending deliveries whose next attempt is due now (not waiting for a retry time)",
        value=deliveries.due,
    )
    yield GaugeMetricFamily(
        "dialscore_webhook_deliveries_held",
        "Pending deliveries held for an inactive subscription (sent once it is active)",
        value=deliveries.held,
    )
    yield GaugeMetricFamily(
        "dialscore_webhook_oldest_pending_delivery_age_seconds",
        "Time since the event of the oldest pending delivery was made (0 when there is none)",
        value=_age(deliveries.pending.oldest, now),
    )


class BuildInfo(Collector):
    def collect(self) -> Iterator[Metric]:
        info = InfoMetricFamily("dialscore_build", "The running dialscore version")
        info.add_metric([], {"version": __version__})
        yield info


class Exposition:
    """The text of one scrape: counts, build and database gauges, in one registry that the
    API's route and the separate metrics port both render."""

    def __init__(self, settings: Settings, *, clock: Callable[[], datetime] = utcnow) -> None:
        self.database = DatabaseCollector(settings.resolved_database_url, clock=clock)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(metrics.process_counts())
        self.registry.register(BuildInfo())
        self.registry.register(self.database)

    def render(self, accept: str | None) -> tuple[bytes, str]:
        """The scrape's text in the format the ``Accept`` header asks for (Prometheus text,
        or OpenMetrics), and its content type; reads the database, so call it off the event
        loop."""
        encode, content_type = choose_encoder(accept or "")
        return encode(self.registry), content_type
