"""GET /account/enrichment-report on both databases (P205): enrichment jobs, their ledger rows,
the tallies of their sources, contacts with the numbers found and calls to them written
directly, and every figure read back per source; the period, an erased job, other clients'
data, the order of the rows, the refusals and the document."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest
from sqlalchemy import event, update

from dialscore.accuracy import sources_endpoints, sources_service
from dialscore.accuracy.service import malformed
from dialscore.config import Settings
from dialscore.jobs.refunds import OWN_KEY_REASON, REFUND_REASON
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.models import CallOutcome, Client, Contact, CreditLedgerEntry, EnrichmentTally, Job
from dialscore.scoring.numbers import ENRICHED_TYPE
from tests.conftest import SECRET
from tests.support import V2, Tenant, amount, assert_error, make_tenant
from tests.test_api_document import document

REPORT = f"{V2}/account/enrichment-report"
PRICE = Decimal("0.05")
# A price with four decimals, so that an amount worked out with floats would show.
ODD_PRICE = Decimal("0.0333")
OWN = "+14155552671"  # a number the contact came with: never counted
# Numbers enrichment found.
N1, N2, N3, N4, N5 = (f"+1212555010{i}" for i in range(1, 6))


def stamp(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


@dataclass
class Seeded:
    now: datetime
    first: datetime  # the first job's creation
    second: datetime  # the second's
    erased: datetime  # the erased job's
    old: datetime  # a job 40 days before now


def _job(tenant: Tenant, created: datetime, accepted: int, unfound: int, kind: str) -> Job:
    return Job(
        id=str(uuid.uuid4()),
        client_id=tenant.client_id,
        user_id=tenant.user_id,
        job_type=kind,
        scoring_type="lightning",
        name="leads",
        source="api",
        status="Finalized",
        total_count=accepted,
        accepted_count=accepted,
        processed_count=accepted,
        enrichment_rejected_count=unfound,
        created_at=created,
        updated_at=created,
    )


def _ledger(tenant: Tenant, job_id: str, delta: Decimal, reason: str) -> CreditLedgerEntry:
    return CreditLedgerEntry(
        client_id=tenant.client_id,
        user_id=tenant.user_id,
        job_id=job_id,
        delta=delta,
        balance_after=Decimal(100),
        reason=reason,
        created_at=utcnow(),
    )


def _tally(
    tenant: Tenant, job_id: str, created: datetime, source: str, counts: tuple[int, int, int], *,
    own_key: bool = False,
) -> EnrichmentTally:  # fmt: skip
    tried, hits, named = counts
    return EnrichmentTally(
        job_id=job_id,
        source=source,
        own_key=own_key,
        client_id=tenant.client_id,
        job_created_at=created,
        tried=tried,
        hits=hits,
        named=named,
    )


def _contact(
    job: Job, ordinal: int, source: str | None, scored: datetime, *found: str, own_key: bool = False
) -> Contact:
    phones = [{"number": OWN, "type": "mobile", "status": "p1"}]
    phones += [
        {"number": number, "type": f"{ENRICHED_TYPE} {i}", "status": "p2"}
        for i, number in enumerate(found, 1)
    ]
    return Contact(
        id=str(uuid.uuid4()),
        job_id=job.id,
        client_id=job.client_id,
        user_id=job.user_id,
        ordinal=ordinal,
        state="scored" if source else "rejected",
        fields={},
        unmapped_fields={},
        phones=phones,
        lead_status="P2",
        enrichment_source=source,
        enrichment_own_key=own_key,
        created_at=scored,
        updated_at=scored,
        scored_at=scored,
    )


def _call(tenant: Tenant, number: str, outcome: str, at: datetime) -> CallOutcome:
    return CallOutcome(
        client_id=tenant.client_id,
        user_id=tenant.user_id,
        number=number,
        outcome=outcome,
        called_at=at,
        created_at=at,
    )


async def seed(db: Database, tenant: Tenant, *, now: datetime | None = None) -> Seeded:
    """Two enrichment jobs of the last days, an erased one, one 40 days old and a scoring
    job, with the ledger rows, tallies, contacts and calls the report reads."""
    now = now or utcnow()
    at = Seeded(
        now,
        now - timedelta(days=2),
        now - timedelta(days=1),
        now - timedelta(days=3),
        now - timedelta(days=40),
    )
    # 10 contacts at 0.05: history 3, directory 1, People Data Labs with the client's own key
    # 2, Apollo 1, none 3. Refunded: 3 not found, 2 own key.
    first = _job(tenant, at.first, 10, 3, "enrich_and_score")
    # 4 contacts at 0.0333: history 1, Apollo 2, none 1.
    second = _job(tenant, at.second, 4, 1, "enrichment")
    old = _job(tenant, at.old, 100, 0, "enrichment")
    scoring = _job(tenant, at.second, 7, 0, "lightning_scoring")
    erased = str(uuid.uuid4())  # its tallies and ledger rows stay, nothing else
    t1 = at.first + timedelta(minutes=1)
    t2 = at.second + timedelta(minutes=1)
    rows: list[Any] = [first, second, old, scoring]
    rows += [
        _ledger(tenant, first.id, -10 * PRICE, "enrichment submission"),
        _ledger(tenant, first.id, 3 * PRICE, REFUND_REASON),
        _ledger(tenant, first.id, 2 * PRICE, OWN_KEY_REASON),
        _ledger(tenant, second.id, -4 * ODD_PRICE, "enrichment submission"),
        _ledger(tenant, second.id, ODD_PRICE, REFUND_REASON),
        _ledger(tenant, old.id, -100 * PRICE, "enrichment submission"),
        _ledger(tenant, scoring.id, -7 * PRICE, "scoring submission"),
        _ledger(tenant, erased, -5 * PRICE, "enrichment submission"),
    ]
    rows += [
        _tally(tenant, first.id, at.first, "history", (10, 3, 3)),
        _tally(tenant, first.id, at.first, "directory", (7, 1, 1)),
        _tally(tenant, first.id, at.first, "pdl", (6, 2, 2), own_key=True),
        _tally(tenant, first.id, at.first, "apollo", (4, 1, 1)),
        _tally(tenant, second.id, at.second, "history", (4, 1, 1)),
        _tally(tenant, second.id, at.second, "directory", (3, 0, 0)),
        _tally(tenant, second.id, at.second, "apollo", (3, 2, 2)),
        _tally(tenant, erased, at.erased, "history", (5, 5, 5)),
        _tally(tenant, old.id, at.old, "history", (100, 100, 100)),
    ]
    rows += [
        _contact(first, 0, "history", t1, N1),
        _contact(first, 1, "history", t1, N2),
        _contact(first, 2, "pdl", t1, N3, N4, own_key=True),
        _contact(first, 3, "apollo", t1, N5),
        _contact(first, 4, None, t1),
        # The second job's Apollo contact carries N1 too, scored later.
        _contact(second, 0, "apollo", t2, N1),
    ]
    rows += [
        _call(tenant, N1, "connected", t1 - timedelta(hours=1)),  # before: nowhere
        _call(tenant, N1, "connected", t1 + timedelta(hours=1)),  # history
        _call(tenant, N1, "no_answer", t2 + timedelta(hours=1)),  # Apollo's since t2
        _call(tenant, N2, "voicemail", t1 + timedelta(hours=1)),
        _call(tenant, N3, "voicemail", t1 + timedelta(hours=2)),
        _call(tenant, N5, "busy", t1 + timedelta(hours=1)),
        _call(tenant, N5, "right_party", t1 + timedelta(hours=3)),
        _call(tenant, OWN, "connected", t1 + timedelta(hours=1)),  # not found by enrichment
    ]
    async with db.unit_of_work() as session:
        session.add_all(rows[:4])
        await session.flush()
        session.add_all(rows[4:])
    return at


async def seed_other_client(db: Database, at: Seeded) -> Tenant:
    """Another client with a job of the same days, and calls to the same numbers."""
    other = await make_tenant(db, SECRET, name="Other")
    job = _job(other, at.first, 3, 0, "enrich_and_score")
    scored = at.first + timedelta(minutes=1)
    async with db.unit_of_work() as session:
        session.add(job)
        await session.flush()
        session.add_all(
            [
                _ledger(other, job.id, -3 * PRICE, "enrichment submission"),
                _tally(other, job.id, at.first, "history", (3, 2, 2)),
                _tally(other, job.id, at.first, "pdl", (1, 1, 1)),
                _contact(job, 0, "history", scored, N1, N2),
                _contact(job, 1, "pdl", scored, N3),
                _call(other, N1, "connected", scored + timedelta(hours=1)),
                _call(other, N3, "connected", scored + timedelta(hours=1)),
            ]
        )
    return other


async def read(api: httpx.AsyncClient, tenant: Tenant, **params: str) -> dict[str, Any]:
    response = await api.get(REPORT, params=params, headers=tenant.headers)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


def by_source(data: dict[str, Any]) -> dict[tuple[str, bool], dict[str, Any]]:
    return {(row["source"], row["ownKey"]): row for row in data["sources"]}


# -- the figures ---------------------------------------------------------------------------------


async def test_every_figure_per_source_with_the_unfound_and_the_totals(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    await seed(db, tenant)
    data = await read(api, tenant)
    assert data["enrichmentOrder"] == ["history", "directory", "pdl", "apollo"]
    # In the order sources are tried, People Data Labs with the client's own key in its place.
    assert [(r["source"], r["ownKey"]) for r in data["sources"]] == [
        ("history", False),
        ("directory", False),
        ("pdl", True),
        ("apollo", False),
    ]
    rows = by_source(data)
    history = rows[("history", False)]
    # The erased job's tally counts; its credits and contacts are gone.
    assert (history["tried"], history["hits"], history["named"]) == (19, 9, 9)
    assert history["hitRate"] == round(9 / 19, 4)
    assert amount(history["creditsCharged"]) == 3 * PRICE + ODD_PRICE
    assert history["creditsRefunded"] == 0
    # N1 and N2; N1's call before the scoring counts nowhere, the one after Apollo's later
    # contact was scored counts for Apollo.
    assert (history["numbers"], history["calls"], history["connects"]) == (2, 2, 1)
    assert history["connectRate"] == 0.5

    directory = rows[("directory", False)]
    assert (directory["tried"], directory["hits"], directory["named"]) == (10, 1, 1)
    assert directory["hitRate"] == 0.1
    assert amount(directory["creditsCharged"]) == PRICE
    assert (directory["numbers"], directory["calls"], directory["connects"]) == (0, 0, 0)
    assert directory["connectRate"] is None

    pdl = rows[("pdl", True)]
    assert (pdl["tried"], pdl["hits"], pdl["named"], pdl["hitRate"]) == (6, 2, 2, 0.3333)
    # Found with the client's own key: refunded in full.
    assert amount(pdl["creditsCharged"]) == amount(pdl["creditsRefunded"]) == 2 * PRICE
    assert (pdl["numbers"], pdl["calls"], pdl["connects"], pdl["connectRate"]) == (2, 1, 0, 0.0)

    apollo = rows[("apollo", False)]
    assert (apollo["tried"], apollo["hits"], apollo["named"]) == (7, 3, 3)
    assert amount(apollo["creditsCharged"]) == PRICE + 2 * ODD_PRICE
    assert apollo["creditsRefunded"] == 0
    assert (apollo["numbers"], apollo["calls"], apollo["connects"]) == (2, 3, 1)
    assert apollo["connectRate"] == 0.3333

    assert data["unfound"]["contacts"] == 4
    assert amount(data["unfound"]["creditsRefunded"]) == 3 * PRICE + ODD_PRICE
    totals = data["totals"]
    assert (totals["jobs"], totals["contacts"]) == (2, 14)
    assert amount(totals["creditsCharged"]) == 10 * PRICE + 4 * ODD_PRICE
    assert amount(totals["creditsRefunded"]) == 5 * PRICE + ODD_PRICE
    # What the sources were charged and the unfound contacts' charge make up the jobs'.
    charged = sum(amount(r["creditsCharged"]) for r in data["sources"])
    assert charged + 3 * PRICE + ODD_PRICE == amount(totals["creditsCharged"])


async def test_other_clients_jobs_tallies_and_calls_are_never_counted(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    at = await seed(db, tenant)
    other = await seed_other_client(db, at)
    rows = by_source(await read(api, tenant))
    assert (rows[("history", False)]["tried"], rows[("history", False)]["calls"]) == (19, 2)
    assert ("pdl", False) not in rows
    assert (rows[("pdl", True)]["tried"], rows[("pdl", True)]["connects"]) == (6, 0)
    theirs = await read(api, other)
    assert [(r["source"], r["tried"], r["calls"], r["connects"]) for r in theirs["sources"]] == [
        ("history", 3, 1, 1),
        ("pdl", 1, 1, 1),
    ]
    assert (theirs["totals"]["jobs"], theirs["totals"]["contacts"]) == (1, 3)
    assert amount(theirs["totals"]["creditsCharged"]) == 3 * PRICE


async def test_the_period_is_one_of_jobs_created(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    at = await seed(db, tenant)
    # Up to before the second job: the first and the erased one.
    data = await read(api, tenant, until=stamp(at.second))
    assert data["until"] == stamp(at.second)
    assert data["since"] == stamp(at.second - timedelta(days=30))
    rows = by_source(data)
    assert rows[("history", False)]["tried"] == 15
    assert ("apollo", False) in rows and rows[("apollo", False)]["tried"] == 4
    # Apollo's contact of the second job is not of the period: N1's later call counts for
    # the history contact, the last scored before it.
    assert (rows[("apollo", False)]["numbers"], rows[("apollo", False)]["calls"]) == (1, 2)
    assert rows[("history", False)]["calls"] == 3
    assert (data["totals"]["jobs"], data["totals"]["contacts"]) == (1, 10)
    # From 41 days ago: the old job too.
    data = await read(api, tenant, since=stamp(at.now - timedelta(days=41)))
    assert by_source(data)[("history", False)]["tried"] == 119
    assert (data["totals"]["jobs"], data["totals"]["contacts"]) == (3, 114)
    # since is included, until is not.
    data = await read(api, tenant, since=stamp(at.second), until=stamp(at.now))
    assert data["totals"]["jobs"] == 1
    assert [r["source"] for r in data["sources"]] == ["history", "directory", "apollo"]
    data = await read(api, tenant, since="2020-01-01", until="2020-12-31")
    assert data["since"] == "2020-01-01T00:00:00Z" and data["until"] == "2020-12-31T00:00:00Z"
    assert data["sources"] == []
    assert data["unfound"] == {"contacts": 0, "creditsRefunded": 0}
    assert data["totals"] == {"jobs": 0, "contacts": 0, "creditsCharged": 0, "creditsRefunded": 0}


async def test_the_period_defaults_to_the_30_days_before_the_services_clock(
    api: httpx.AsyncClient, db: Database, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = await seed(db, tenant)
    later = at.now + timedelta(days=27, hours=12)
    monkeypatch.setattr(sources_endpoints, "utcnow", lambda: later)
    data = await read(api, tenant)
    assert (data["since"], data["until"]) == (stamp(later - timedelta(days=30)), stamp(later))
    # The erased job (3 days before now) fell out; the first job (2 days) is still in.
    assert by_source(data)[("history", False)]["tried"] == 14
    assert data["totals"]["jobs"] == 2


async def test_rows_follow_the_clients_order_then_the_sources_no_longer_tried(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    at = await seed(db, tenant)
    async with db.unit_of_work() as session:
        await session.execute(
            update(Client)
            .where(Client.id == tenant.client_id)
            .values(enrichment_order=["apollo", "pdl"])
        )
        job = _job(tenant, at.second, 2, 0, "enrichment")
        session.add(job)
        await session.flush()
        session.add_all(
            [
                _tally(tenant, job.id, at.second, "zoominfo", (2, 1, 1)),
                _tally(tenant, job.id, at.second, "pdl", (1, 1, 1)),
            ]
        )
    data = await read(api, tenant)
    assert data["enrichmentOrder"] == ["apollo", "pdl", "history", "directory"]
    assert [(r["source"], r["ownKey"]) for r in data["sources"]] == [
        ("apollo", False),
        ("pdl", False),
        ("pdl", True),
        ("history", False),
        ("directory", False),
        ("zoominfo", False),
    ]


# -- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"since": "last week"}, malformed("since")),
        ({"since": "2026-05-01T12:00:00"}, malformed("since")),
        ({"until": "2026-02-30"}, malformed("until")),
        ({"until": "2026-05-01T12:00:00+25:00"}, malformed("until")),
        ({"since": "2026-05-02", "until": "2026-05-01"}, sources_service.SINCE_NOT_BEFORE_UNTIL),
        ({"since": "2026-05-01", "until": "2026-05-01"}, sources_service.SINCE_NOT_BEFORE_UNTIL),
        ({"since": "2025-01-01", "until": "2026-01-03"}, sources_service.PERIOD_TOO_LONG),
        ({"since": "2020-01-01"}, sources_service.PERIOD_TOO_LONG),
    ],
)
async def test_a_period_that_is_no_period_is_400(
    api: httpx.AsyncClient, tenant: Tenant, params: dict[str, str], message: str
) -> None:
    response = await api.get(REPORT, params=params, headers=tenant.headers)
    assert assert_error(response, 400) == message


async def test_366_days_is_the_longest_period(api: httpx.AsyncClient, tenant: Tenant) -> None:
    data = await read(api, tenant, since="2024-01-01", until="2025-01-01")  # a leap year
    assert data["totals"]["jobs"] == 0


async def test_without_a_valid_key_it_is_401_and_without_api_access_403(
    api: httpx.AsyncClient, db: Database
) -> None:
    response = await api.get(REPORT)
    assert_error(response, 401)
    assert response.headers["WWW-Authenticate"] == "Bearer"
    assert_error(await api.get(REPORT, headers={"Authorization": "Bearer not-a-key"}), 401)
    free = await make_tenant(db, SECRET, plan="free", name="Freebie")
    assert "api access" in assert_error(await api.get(REPORT, headers=free.headers), 403).lower()


def test_the_document_describes_the_operation_as_an_extension() -> None:
    operation = document()["paths"][REPORT]["get"]
    assert operation["operationId"] == "get_enrichment_report"
    assert operation["description"].startswith("Extension (P205)")
    assert {p["name"] for p in operation["parameters"]} == {"since", "until"}
    assert {"200", "400", "401", "403", "429"} <= set(operation["responses"])
    example = operation["responses"]["200"]["content"]["application/json"]["example"]
    assert [row["source"] for row in example["data"]["sources"]] == example["data"][
        "enrichmentOrder"
    ]


# -- a handful of statements, whatever the jobs ---------------------------------------------------


@contextmanager
def statements(db: Database) -> Iterator[list[str]]:
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    event.listen(db.engine.sync_engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(db.engine.sync_engine, "before_cursor_execute", record)


async def test_the_report_reads_with_as_many_statements_for_many_jobs_as_for_one(
    database_url: str, settings: Settings
) -> None:
    db = Database(database_url)
    try:
        tenant = await make_tenant(db, SECRET)
        at = await seed(db, tenant)

        async def count() -> int:
            with statements(db) as seen:
                async with db.read() as session:
                    await sources_service.sources_report(
                        session, settings, client_id=tenant.client_id, since=at.old, until=at.now
                    )
            return len([s for s in seen if s.lstrip().upper().startswith("SELECT")])

        few = await count()
        for _ in range(5):
            await seed(db, tenant, now=at.now)
        assert await count() == few <= 7
    finally:
        await db.dispose()
