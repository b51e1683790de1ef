"""The evidence the scoring service gathers from the database (number blocks, do-not-call lists,
company lines, call history, numbers shared within a company), in a bounded number of queries,
on SQLite and PostgreSQL; and the whole path through the API."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import event, func, select

from dialscore.kit.clock import utcnow
from dialscore.kit.db import Base, Database
from dialscore.models import (
    CallOutcome,
    CompanyLine,
    ContactNumber,
    DncImport,
    DncNumber,
    NumberBlock,
)
from dialscore.scoring import repository as scoring_repo
from dialscore.scoring import service
from dialscore.scoring.engine import ContactScore
from dialscore.scoring.evidence import Call, NumberEvidence, Verification
from dialscore.scoring.lines import NO_SCALE, SCALE_BOUNDS, RateScale
from tests.conftest import SECRET
from tests.support import V2, Tenant, contact, make_tenant, settle, submit

US = "+14155552671"
US_SAME_BLOCK = "+14155553000"  # same NPA-NXX, another NPA-NXX-X
US_OTHER = "+12127363100"
US_THIRD = "+13127946000"
US_FOURTH = "+16172531000"
UK_MOBILE = "+447400123456"

NOW = datetime(2025, 6, 15, 12, 0, tzinfo=UTC)


async def insert(db: Database, *rows: Base) -> None:
    async with db.unit_of_work() as session:
        session.add_all(rows)


def item(phones: Sequence[str], **fields: str) -> service.ScoringItem:
    """A contact with the given numbers in its phone slots."""
    slots = ("phone", "phone2", "phone3", "phone4", "phone5")
    values = {"firstName": "Ann", "lastName": "Lee", **fields}
    values.update(dict(zip(slots, phones, strict=False)))
    return service.item(str(uuid.uuid4()), values)


async def evidence_of(
    db: Database, client_id: str, items: Sequence[service.ScoringItem]
) -> list[dict[str, NumberEvidence]]:
    async with db.read() as session:
        return await service.evidence_for(session, client_id, items)


async def scores_of(
    db: Database, client_id: str, items: Sequence[service.ScoringItem], **options: Any
) -> list[ContactScore]:
    async with db.read() as session:
        return await service.score_items(session, client_id, items, now=NOW.timestamp(), **options)


async def index(db: Database, client_id: str, items: Sequence[service.ScoringItem]) -> None:
    async with db.unit_of_work() as session:
        await service.index_numbers(session, service.carried_numbers(client_id, items))


def by_number(score: ContactScore) -> dict[str, dict[str, Any]]:
    return {p["number"]: p for p in score.phones}


def outcome(client_id: str, number: str, what: str, at: datetime, **extra: Any) -> CallOutcome:
    return CallOutcome(
        client_id=client_id,
        user_id=str(uuid.uuid4()),
        number=number,
        outcome=what,
        called_at=at,
        created_at=NOW,
        **extra,
    )


# -- number blocks ----------------------------------------------------------------------------


async def test_npa_nxx_x_block_wins_over_npa_nxx(db: Database, tenant: Tenant) -> None:
    await insert(
        db,
        NumberBlock(prefix="415555", category="landline"),
        NumberBlock(prefix="4155552", category="wireless", carrier="Mobile Co"),
        NumberBlock(prefix="212736", category="voip"),
        NumberBlock(prefix="4474001", category="voip"),  # not a NANP prefix: never looked up
    )
    it = item([US, US_SAME_BLOCK, US_OTHER, US_THIRD, UK_MOBILE])
    (evidence,) = await evidence_of(db, tenant.client_id, [it])
    assert {n: e.block for n, e in evidence.items()} == {
        US: "wireless",
        US_SAME_BLOCK: "landline",
        US_OTHER: "voip",
        US_THIRD: None,
        UK_MOBILE: None,
    }
    (score,) = await scores_of(db, tenant.client_id, [it])
    phones = by_number(score)
    assert [phones[n]["status"] for n in (US, US_SAME_BLOCK, US_OTHER, US_THIRD, UK_MOBILE)] == [
        "p1",
        "p2",
        "p2",
        "p2",
        "p1",
    ]
    assert "number block: wireless" in phones[US]["reasons"]
    assert "number block: landline" in phones[US_SAME_BLOCK]["reasons"]
    assert "mobile line (numbering plan)" in phones[UK_MOBILE]["reasons"]


# -- do-not-call lists ------------------------------------------------------------------------


async def test_dnc_lists_per_number(db: Database, tenant: Tenant) -> None:
    await insert(
        db,
        DncNumber(number=14155552671, list_name="state_ca"),
        DncNumber(number=14155552671, list_name="federal"),
        DncNumber(number=447400123456, list_name="tps"),
        DncNumber(number=12127363101, list_name="federal"),  # a neighbour, not in the batch
    )
    it = item([US, UK_MOBILE, US_OTHER])
    (evidence,) = await evidence_of(db, tenant.client_id, [it])
    assert evidence[US].dnc_lists == ("federal", "state_ca")
    assert evidence[UK_MOBILE].dnc_lists == ("tps",)
    assert evidence[US_OTHER].dnc_lists == ()
    (score,) = await scores_of(db, tenant.client_id, [it])
    phones = by_number(score)
    assert phones[US]["status"] == "na - dnc"  # p2 on a list: D15 has no p2 - dnc
    assert "on do-not-call list federal, state_ca" in phones[US]["reasons"]
    assert phones[UK_MOBILE]["status"] == "p1 - dnc"
    assert phones[US_OTHER]["status"] == "p2"
    assert score.lead_status == "P1"
    assert score.best_phone == {"number": US_OTHER, "status": "p2", "ivrPath": None}


def dnc_import(list_name: str, file_date: date, applied_at: datetime) -> DncImport:
    return DncImport(
        list_name=list_name,
        kind="full",
        file_name=f"{list_name}.txt",
        file_date=file_date,
        file_date_source="option",
        applied_at=applied_at,
        numbers=1,
        added=1,
        removed=0,
    )


async def test_a_listed_number_says_how_old_its_lists_are(db: Database, tenant: Tenant) -> None:
    """Each list a number is on whose imports are recorded says how old its newest file is,
    and warns past the 31 days the rule allows (P188); a list without records says nothing
    of its age, and only a list's newest import counts."""
    today = utcnow().date()
    await insert(
        db,
        DncNumber(number=14155552671, list_name="national"),
        DncNumber(number=14155552671, list_name="state_ca"),
        DncNumber(number=14155552671, list_name="company"),
        # national's newest import is 40 days old: the older one before it does not count.
        dnc_import("national", today - timedelta(days=70), utcnow() - timedelta(days=60)),
        dnc_import("national", today - timedelta(days=40), utcnow() - timedelta(days=39)),
        dnc_import("state_ca", today - timedelta(days=1), utcnow()),
    )
    (score,) = await scores_of(db, tenant.client_id, [item([US])])
    reasons = by_number(score)[US]["reasons"]
    assert "on do-not-call list company, national, state_ca" in reasons
    assert (
        "do-not-call list national: newest file 40 days old, older than the 31 days the rule "
        "allows: import a fresh copy"
    ) in reasons
    assert "do-not-call list state_ca: newest file 1 day old" in reasons
    assert not any(r.startswith("do-not-call list company") for r in reasons)


# -- company lines ----------------------------------------------------------------------------


async def test_company_lines_with_and_without_a_dial_tree(db: Database, tenant: Tenant) -> None:
    await insert(
        db,
        CompanyLine(number=US, company="Acme", ivr_path="1,0"),
        CompanyLine(number=US_OTHER, company="Beta", ivr_path=None),
    )
    it = item([US, US_OTHER, US_THIRD])
    (evidence,) = await evidence_of(db, tenant.client_id, [it])
    assert (evidence[US].company_line, evidence[US].directory_ivr_path) == (True, "1,0")
    assert (evidence[US_OTHER].company_line, evidence[US_OTHER].directory_ivr_path) == (True, None)
    assert (evidence[US_THIRD].company_line, evidence[US_THIRD].directory_ivr_path) == (False, None)
    (score,) = await scores_of(db, tenant.client_id, [it])
    phones = by_number(score)
    assert phones[US]["status"] == "p2 - ivr"
    assert phones[US]["ivrPath"] == "1,0"
    assert phones[US_OTHER]["status"] == "p2 - h"
    assert phones[US_OTHER]["ivrPath"] is None
    assert "a company's main line" in phones[US_OTHER]["reasons"]
    assert phones[US_THIRD]["status"] == "p2"


# -- call history -----------------------------------------------------------------------------


async def test_call_history_is_the_clients_own_oldest_first(db: Database, tenant: Tenant) -> None:
    other_client = str(uuid.uuid4())
    berlin = timezone(timedelta(hours=2))
    t1 = datetime(2025, 6, 1, 14, 0, tzinfo=berlin)  # 12:00 UTC
    t2 = datetime(2025, 6, 3, 9, 30, tzinfo=UTC)
    t3 = datetime(2025, 6, 10, 16, 45, 30, 250_000, tzinfo=UTC)
    await insert(
        db,
        outcome(tenant.client_id, US, "connected", t3),
        outcome(tenant.client_id, US, "no_answer", t1),
        outcome(tenant.client_id, US, "ivr", t2, ivr_path="1,2"),
        outcome(tenant.client_id, US, "busy", t2),  # same time: kept in reporting order
        outcome(other_client, US, "wrong_number", t3 + timedelta(days=1)),
        outcome(other_client, US, "wrong_number", t3 + timedelta(days=2)),
        outcome(other_client, US_OTHER, "disconnected", t1),
        outcome(tenant.client_id, US_OTHER, "gatekeeper", t2),
    )
    it = item([US, US_OTHER, US_THIRD])
    (evidence,) = await evidence_of(db, tenant.client_id, [it])
    assert evidence[US].calls == (
        Call("no_answer", datetime(2025, 6, 1, 12, 0, tzinfo=UTC).timestamp()),
        Call("ivr", t2.timestamp(), "1,2"),
        Call("busy", t2.timestamp()),
        Call("connected", t3.timestamp()),
    )
    assert evidence[US_OTHER].calls == (Call("gatekeeper", t2.timestamp()),)
    assert evidence[US_THIRD].calls == ()
    # The other client's wrong numbers say nothing about this client's contact.
    (score,) = await scores_of(db, tenant.client_id, [it])
    phones = by_number(score)
    assert phones[US]["status"] == "p2 - ivr"
    assert phones[US]["ivrPath"] == "1,2"
    assert "4 reported calls, 1 connected" in " ".join(phones[US]["reasons"])
    # ... and for the other client the number is someone else's.
    (theirs,) = await scores_of(db, other_client, [it])
    assert by_number(theirs)[US]["status"] == "na - auth"


async def test_disconnects_on_two_days_from_the_database(db: Database, tenant: Tenant) -> None:
    await insert(
        db,
        outcome(tenant.client_id, US, "disconnected", datetime(2025, 6, 9, 23, 50, tzinfo=UTC)),
        outcome(tenant.client_id, US, "disconnected", datetime(2025, 6, 10, 0, 10, tzinfo=UTC)),
        # 23:30 and 00:30 in New York are the same UTC day.
        outcome(
            tenant.client_id,
            US_OTHER,
            "disconnected",
            datetime(2025, 6, 9, 20, 30, tzinfo=timezone(timedelta(hours=-4))),
        ),
        outcome(
            tenant.client_id,
            US_OTHER,
            "disconnected",
            datetime(2025, 6, 9, 23, 30, tzinfo=timezone(timedelta(hours=-4))),
        ),
    )
    (score,) = await scores_of(db, tenant.client_id, [item([US, US_OTHER])])
    phones = by_number(score)
    assert phones[US]["status"] == "na"
    assert phones[US_OTHER]["status"] != "na"


# -- shared numbers ---------------------------------------------------------------------------


async def test_two_people_of_one_company_share_a_number(db: Database, tenant: Tenant) -> None:
    ann = item([US, US_OTHER], companyAccount="Acme Inc")
    bob = item([US], firstName="Bob", lastName="Ray", companyAccount="ACME, Inc.")
    await index(db, tenant.client_id, [ann, bob])
    evidence = await evidence_of(db, tenant.client_id, [ann, bob])
    assert evidence[0][US].shared_with == 1
    assert evidence[1][US].shared_with == 1
    assert evidence[0][US_OTHER].shared_with == 0
    scores = await scores_of(db, tenant.client_id, [ann, bob])
    for score in scores:
        shared = by_number(score)[US]
        assert shared["status"] == "p2 - h"
        assert "shared with 1 other person" in shared["reasons"]
    assert by_number(scores[0])[US_OTHER]["status"] == "p2"
    assert scores[0].best_phone is not None
    assert scores[0].best_phone["number"] == US_OTHER


async def test_wrong_numbers_about_one_person_stay_with_that_person(
    db: Database, tenant: Tenant
) -> None:
    # Ann left Acme: two calls for her reached someone else on the main line she shared
    # with Bob. For Bob (and anyone not named), the line still works; for Ann, it is not hers.
    ann = item([US], companyAccount="Acme Inc")
    bob = item([US], firstName="Bob", lastName="Ray", companyAccount="Acme Inc")
    await index(db, tenant.client_id, [ann, bob])
    days = (NOW - timedelta(days=3), NOW - timedelta(days=2))
    await insert(
        db,
        *(
            outcome(tenant.client_id, US, "wrong_number", at, contact_id=ann.contact_id)
            for at in days
        ),
    )
    (calls_for_ann, calls_for_bob) = await evidence_of(db, tenant.client_id, [ann, bob])
    assert [c.person for c in calls_for_ann[US].calls] == ["same", "same"]
    assert [c.person for c in calls_for_bob[US].calls] == ["other", "other"]
    # Ann again, in a later list: the same person by name.
    ann_again = item([US], companyAccount="Acme Inc")
    stranger = item([US], firstName="Cy", lastName="Fox")
    scores = await scores_of(db, tenant.client_id, [ann_again, bob, stranger])
    statuses = [by_number(score)[US]["status"] for score in scores]
    assert statuses[0] == "na - auth"
    assert statuses[1] == "p2 - h"
    assert not statuses[2].startswith("na")


# -- a number reported as the wrong one (D28) --------------------------------------------------

REPORTED = NOW - timedelta(days=3)
REPORTED_ON = "reported a wrong number on 2025-06-12"


async def test_a_wrong_number_for_no_contact_counts_on_a_number_no_one_else_carries(
    db: Database, tenant: Tenant
) -> None:
    # US is Ann's alone (twice: she is in two lists); Bob, of another company, carries
    # US_OTHER too; US_THIRD is Cy's, of no known company.
    ann = item([US, US_OTHER], companyAccount="Acme")
    ann_again = item([US], companyAccount="Acme Inc")
    bob = item([US_OTHER], firstName="Bob", lastName="Ray", companyAccount="Other Co")
    cy = item([US_THIRD], firstName="Cy", lastName="Fox")
    await index(db, tenant.client_id, [ann, ann_again, bob, cy])
    await insert(
        db,
        *(outcome(tenant.client_id, n, "wrong_number", REPORTED) for n in (US, US_OTHER, US_THIRD)),
    )
    (for_ann, for_bob) = await evidence_of(db, tenant.client_id, [ann, bob])
    assert [(e.carried_by_others, e.shared_with) for e in for_ann.values()] == [
        (False, 0),
        (True, 0),
    ]
    assert for_bob[US_OTHER].carried_by_others
    assert [(c.person, c.named) for c in for_ann[US].calls] == [(None, False)]

    scores = await scores_of(db, tenant.client_id, [ann, bob, cy])
    ann_phones = by_number(scores[0])
    assert ann_phones[US]["status"] == "na - auth"
    assert ann_phones[US]["reasons"][0] == REPORTED_ON
    assert ann_phones[US]["connectRate"] is None
    for phone in (ann_phones[US_OTHER], by_number(scores[1])[US_OTHER]):
        assert not phone["status"].startswith("na"), phone
        assert not phone["reasons"][0].startswith("reported a wrong number")
    assert by_number(scores[2])[US_THIRD]["status"] == "na - auth"


async def test_a_wrong_number_for_a_contact_stays_with_that_contact(
    db: Database, tenant: Tenant
) -> None:
    # Ann and Bob carry the same number, US_THIRD is Bob's alone; Ann, Dee and Eve have no
    # name, only a profile.
    ann = item([US], firstName="", lastName="", linkedInUrl="linkedin.com/in/ann")
    bob = item([US, US_THIRD], firstName="Bob", lastName="Ray")
    dee = item([US_OTHER], firstName="", lastName="", linkedInUrl="linkedin.com/in/dee")
    eve = item([US_OTHER], firstName="", lastName="", linkedInUrl="linkedin.com/in/eve")
    # Never indexed: a contact with no number of its own.
    absent = str(uuid.uuid4())
    await index(db, tenant.client_id, [ann, bob, dee, eve])
    await insert(
        db,
        outcome(tenant.client_id, US, "wrong_number", REPORTED, contact_id=ann.contact_id),
        outcome(tenant.client_id, US_OTHER, "wrong_number", REPORTED),
        outcome(tenant.client_id, US_THIRD, "wrong_number", REPORTED, contact_id=absent),
    )
    (for_ann, for_bob, for_dee) = await evidence_of(db, tenant.client_id, [ann, bob, dee])
    # Ann's own report, though her name is not known; for Bob, a contact not known by name,
    # on his shared number and on his own.
    assert [(c.person, c.named) for c in for_ann[US].calls] == [("same", True)]
    assert [(c.person, c.named) for c in for_bob[US].calls] == [(None, True)]
    assert [(c.person, c.named) for c in for_bob[US_THIRD].calls] == [(None, True)]
    assert not for_bob[US_THIRD].carried_by_others
    # Contacts without a name are told apart by their ids.
    assert for_dee[US_OTHER].carried_by_others
    scores = await scores_of(db, tenant.client_id, [ann, bob, dee])
    phones = [by_number(score) for score in scores]
    assert phones[0][US]["status"] == "na - auth"
    assert phones[0][US]["reasons"][0] == REPORTED_ON
    for status in (phones[1][US]["status"], phones[1][US_THIRD]["status"]):
        assert not status.startswith("na"), status
    assert not phones[2][US_OTHER]["status"].startswith("na")


async def test_a_later_connect_for_the_contact_lifts_a_wrong_number(
    db: Database, tenant: Tenant
) -> None:
    ann = item([US, US_OTHER], companyAccount="Acme")
    await index(db, tenant.client_id, [ann])
    await insert(
        db,
        outcome(tenant.client_id, US, "wrong_number", REPORTED, contact_id=ann.contact_id),
        outcome(tenant.client_id, US, "right_party", REPORTED + timedelta(days=1)),
        outcome(tenant.client_id, US_OTHER, "wrong_number", REPORTED - timedelta(days=181)),
    )
    (score,) = await scores_of(db, tenant.client_id, [ann])
    phones = by_number(score)
    for number in (US, US_OTHER):
        assert not phones[number]["status"].startswith("na"), phones[number]
        assert not phones[number]["reasons"][0].startswith("reported a wrong number")


async def test_shared_by_company_domain(db: Database, tenant: Tenant) -> None:
    ann = item([US], email="ann@acme.com")
    bob = item([US], firstName="Bob", website="https://www.acme.com")
    cara = item([US], firstName="Cara", companyAccount="Acme")  # a name, not a domain
    await index(db, tenant.client_id, [ann, bob, cara])
    evidence = await evidence_of(db, tenant.client_id, [ann, bob, cara])
    assert [e[US].shared_with for e in evidence] == [1, 1, 0]


async def test_shared_by_the_company_identity_enrichment_uses(db: Database, tenant: Tenant) -> None:
    """One company however written: "The Acme Company", "Acme.com, Inc.", its LinkedIn page
    given as a page or as the website; a page on a shared host is no company domain."""
    ann = item([US], companyAccount="The Acme Company")
    bob = item([US], firstName="Bob", companyAccount="Acme.com, Inc.")
    cara = item([US], firstName="Cara", companyLinkedInUrl="linkedin.com/company/acme-inc")
    dan = item([US], firstName="Dan", website="https://www.linkedin.com/company/acme-inc/")
    eve = item([US], firstName="Eve", website="https://www.linkedin.com/in/eve")
    fay = item([US], firstName="Fay", website="https://www.linkedin.com/in/fay")
    people = [ann, bob, cara, dan, eve, fay]
    await index(db, tenant.client_id, people)
    evidence = await evidence_of(db, tenant.client_id, people)
    assert [e[US].shared_with for e in evidence] == [1, 1, 1, 1, 0, 0]


async def test_three_people_share_a_number(db: Database, tenant: Tenant) -> None:
    people = [item([US], firstName=name, companyAccount="Acme") for name in ("A", "B", "C")]
    await index(db, tenant.client_id, people)
    (score, *_) = await scores_of(db, tenant.client_id, people)
    assert "shared with 2 other people" in by_number(score)[US]["reasons"]


async def test_the_same_person_twice_does_not_share(db: Database, tenant: Tenant) -> None:
    first = item([US], companyAccount="Acme Inc")
    again = item([US, US_OTHER], firstName=" ann ", lastName="LEE", companyAccount="Acme")
    await index(db, tenant.client_id, [first, again])
    evidence = await evidence_of(db, tenant.client_id, [first, again])
    assert [e[US].shared_with for e in evidence] == [0, 0]
    scores = await scores_of(db, tenant.client_id, [first, again])
    assert [by_number(s)[US]["status"] for s in scores] == ["p2", "p2"]


async def test_people_of_different_companies_do_not_share(db: Database, tenant: Tenant) -> None:
    ann = item([US], companyAccount="Acme")
    bob = item([US], firstName="Bob", companyAccount="Beta")
    cara = item([US], firstName="Cara", email="cara@gmail.com")  # no company at all
    dan = item([US], firstName="Dan", email="dan@gmail.com")
    await index(db, tenant.client_id, [ann, bob, cara, dan])
    evidence = await evidence_of(db, tenant.client_id, [ann, bob, cara, dan])
    assert [e[US].shared_with for e in evidence] == [0, 0, 0, 0]


async def test_people_of_another_client_do_not_share(db: Database, tenant: Tenant) -> None:
    other_client = str(uuid.uuid4())
    ann = item([US], companyAccount="Acme")
    bob = item([US], firstName="Bob", companyAccount="Acme")
    await index(db, tenant.client_id, [ann])
    await index(db, other_client, [bob])
    assert (await evidence_of(db, tenant.client_id, [ann]))[0][US].shared_with == 0
    assert (await evidence_of(db, other_client, [bob]))[0][US].shared_with == 0
    # Within one client the same two people do share.
    await index(db, other_client, [item([US], companyAccount="Acme")])
    assert (await evidence_of(db, other_client, [bob]))[0][US].shared_with == 1


async def _contact_numbers(db: Database) -> list[tuple[Any, ...]]:
    async with db.read() as session:
        rows = await session.execute(
            select(
                ContactNumber.contact_id,
                ContactNumber.number,
                ContactNumber.client_id,
                ContactNumber.company_key,
                ContactNumber.person_key,
            ).order_by(ContactNumber.contact_id, ContactNumber.number)
        )
        return [tuple(row) for row in rows.all()]


async def test_index_numbers_is_idempotent(db: Database, tenant: Tenant) -> None:
    ann = item([US, "+1 (415) 555-2671", "not a number", UK_MOBILE], companyAccount="Acme Ltd")
    bob = item([US], firstName="Bob", companyAccount="Acme")
    await index(db, tenant.client_id, [ann, bob])
    rows = await _contact_numbers(db)
    assert sorted(rows) == sorted(
        [
            (ann.contact_id, UK_MOBILE, tenant.client_id, "name:acme", "ann lee"),
            (ann.contact_id, US, tenant.client_id, "name:acme", "ann lee"),
            (bob.contact_id, US, tenant.client_id, "name:acme", "bob lee"),
        ]
    )
    await index(db, tenant.client_id, [ann, bob])
    await index(db, tenant.client_id, [bob])
    assert await _contact_numbers(db) == rows
    evidence = await evidence_of(db, tenant.client_id, [ann, bob])
    assert [e[US].shared_with for e in evidence] == [1, 1]


async def test_index_numbers_without_valid_numbers_writes_nothing(
    db: Database, tenant: Tenant
) -> None:
    await index(db, tenant.client_id, [item(["nope"]), item([])])
    assert await _contact_numbers(db) == []
    assert await evidence_of(db, tenant.client_id, [item(["nope"]), item([])]) == [{}, {}]


async def test_long_company_names_are_indexed(db: Database, tenant: Tenant) -> None:
    ann = item([US], companyAccount="Acme " + "x" * 300)
    bob = item([US], firstName="Bob", companyAccount="Acme " + "x" * 300 + " Inc")
    await index(db, tenant.client_id, [ann, bob])
    assert [e[US].shared_with for e in await evidence_of(db, tenant.client_id, [ann, bob])] == [
        1,
        1,
    ]


# -- verifications and core scoring -----------------------------------------------------------


class Silent:
    """A configured verification provider; its answers are given to score_items directly."""

    name = "silent"

    async def verify(self, numbers: Sequence[str]) -> dict[str, Verification]:
        return {}


async def test_verification_beats_the_block(db: Database, tenant: Tenant) -> None:
    await insert(db, NumberBlock(prefix="4155552", category="landline"))
    it = item([US, US_OTHER])
    (score,) = await scores_of(
        db,
        tenant.client_id,
        [it],
        core=True,
        verifications={US: Verification("acme", "mobile")},
        verifiers=[Silent()],  # configured: no "no provider" note
    )
    phones = by_number(score)
    assert phones[US]["status"] == "p1"
    assert phones[US]["reasons"][0] == "line type mobile (acme)"
    assert service.NO_PROVIDER_NOTE not in phones[US]["reasons"]
    assert phones[US_OTHER]["status"] == "p2"


async def test_core_scoring_without_a_provider_says_so(db: Database, tenant: Tenant) -> None:
    it = item([US, "nope"])
    (core,) = await scores_of(db, tenant.client_id, [it], core=True)
    assert core.phones[0]["reasons"][-1] == service.NO_PROVIDER_NOTE
    assert service.NO_PROVIDER_NOTE not in core.phones[1]["reasons"]
    (lightning,) = await scores_of(db, tenant.client_id, [it])
    assert service.NO_PROVIDER_NOTE not in lightning.phones[0]["reasons"]


# -- bounded queries --------------------------------------------------------------------------

AREAS = ("212", "312", "415", "617", "646", "718")
QUERY_WORDS = ("SELECT", "INSERT", "UPDATE", "DELETE", "WITH")
# The app's relay polls the outbox on the same engine meanwhile: only these tables count.
SCORING_TABLES = (
    "number_blocks",
    "dnc_numbers",
    "company_lines",
    "call_outcomes",
    "contact_numbers",
)


def batch(count: int) -> list[service.ScoringItem]:
    """``count`` contacts of a few companies with three distinct numbers each."""
    items = []
    for i in range(count):
        numbers = []
        for k in range(3):
            n = 3 * i + k
            numbers.append(f"+1{AREAS[n % 6]}{200 + (n // 6) % 700:03d}{n % 10_000:04d}")
        items.append(item(numbers, firstName=f"P{i}", companyAccount=f"Company {i % 7}"))
    return items


@contextmanager
def counting(db: Database) -> Iterator[list[str]]:
    """The statements run on the scoring tables. The write sessions use an engine derived from
    ``db.engine`` (kit/db.py), whose listeners it shares: one listener sees both."""
    statements: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        text = statement.lstrip()
        if text.upper().startswith(QUERY_WORDS) and any(t in text for t in SCORING_TABLES):
            statements.append(statement)

    event.listen(db.engine.sync_engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(db.engine.sync_engine, "before_cursor_execute", record)


async def test_the_counter_sees_reads_and_writes(db: Database) -> None:
    with counting(db) as statements:
        async with db.unit_of_work() as session:
            await session.scalar(select(func.count()).select_from(NumberBlock))
        async with db.read() as session:
            await session.scalar(select(func.count()).select_from(DncNumber))
    assert len(statements) == 2


@pytest.mark.parametrize("count", [10, 1000])
async def test_a_batch_takes_as_many_queries_whatever_its_size(
    db: Database, tenant: Tenant, count: int
) -> None:
    items = batch(count)
    numbers = {p.e164 for it in items for p in it.phones}
    assert None not in numbers
    assert len(numbers) == 3 * count
    first = items[0].phones[0].e164
    assert first is not None
    await insert(
        db,
        NumberBlock(prefix=first[2:8], category="wireless"),
        DncNumber(number=int(first[1:]), list_name="federal"),
    )

    with counting(db) as statements:
        await index(db, tenant.client_id, items)
    assert len(statements) == 1  # one statement, many rows

    # One lookup of each kind (blocks, lists, company lines, calls, carriers), all of the
    # batch's numbers given to it at once.
    with counting(db) as statements:
        evidence = await evidence_of(db, tenant.client_id, items)
    assert len(evidence) == count
    assert len(statements) == 5

    with counting(db) as statements:
        scores = await scores_of(db, tenant.client_id, items)
    assert len(statements) == 5
    assert len(scores) == count
    assert scores[0].phones[0]["status"] == "p1 - dnc"
    # Seven companies, each person with their own numbers: nothing is shared.
    assert all(e.shared_with == 0 for ev in evidence for e in ev.values())


# -- end to end through the API ----------------------------------------------------------------


async def test_evidence_reaches_the_api(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    await insert(
        db,
        NumberBlock(prefix="4155552", category="wireless"),
        NumberBlock(prefix="312794", category="wireless"),
        DncNumber(number=12127363100, list_name="federal"),
        DncNumber(number=13127946000, list_name="state_il"),
    )
    contacts = [
        contact("Ann", "Lee", US, phone2=US_OTHER),
        contact("Bob", "Ray", US_THIRD),
        contact("Cara", "Diaz", US_FOURTH, companyAccount="Acme Inc"),
        contact("Dan", "Fox", US_FOURTH, companyAccount="ACME, Inc."),
    ]
    response = await submit(api, tenant, contacts)
    assert response.status_code == 200, response.text
    job_id = response.json()["data"]["jobId"]
    await settle(app)
    body = (await api.get(f"{V2}/jobs/{job_id}/contacts", headers=tenant.headers)).json()
    ann, bob, cara, dan = body["data"]["contacts"]

    assert [(p["number"], p["status"]) for p in ann["phones"]] == [
        (US, "p1"),
        (US_OTHER, "na - dnc"),
    ]
    assert ann["phones"][0]["reasons"][0] == "number block: wireless"
    assert "on do-not-call list federal" in ann["phones"][1]["reasons"]
    assert (ann["phoneStatus"], ann["phone2Status"]) == ("p1", "na - dnc")
    assert ann["leadStatus"] == "P1"
    assert ann["bestPhone"] == {"number": US, "status": "p1", "ivrPath": None}

    (bob_phone,) = bob["phones"]
    assert bob_phone["status"] == "p1 - dnc"
    assert bob_phone["reasons"][0] == "number block: wireless"
    assert "on do-not-call list state_il" in bob_phone["reasons"]
    assert bob["leadStatus"] == "P1"
    assert bob["bestPhone"] is None

    for shared in (cara, dan):
        (phone,) = shared["phones"]
        assert phone["status"] == "p2 - h"
        assert "shared with 1 other person" in phone["reasons"]
        assert shared["leadStatus"] == "P2"
        assert shared["bestPhone"] == {"number": US_FOURTH, "status": "p2 - h", "ivrPath": None}


async def test_a_number_reported_as_the_wrong_one_through_the_api_is_na_auth(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    await insert(db, NumberBlock(prefix="4155552", category="wireless"))
    contacts = [contact("Ann", "Lee", US, phone2=UK_MOBILE), contact("Bob", "Ray", US_FOURTH)]
    response = await submit(api, tenant, contacts)
    assert response.status_code == 200, response.text
    job_id = response.json()["data"]["jobId"]
    await settle(app)
    body = (await api.get(f"{V2}/jobs/{job_id}/contacts", headers=tenant.headers)).json()
    ann, bob = body["data"]["contacts"]
    assert [p["status"] for p in ann["phones"]] == ["p1", "p1"]
    assert not bob["phones"][0]["status"].startswith("na")

    # A rep heard that US is no longer Ann's; and, for no contact, that Bob's number (his
    # alone) is someone else's. Then the job is scored again.
    at = (utcnow() - timedelta(days=10)).replace(hour=9, minute=0, second=0, microsecond=0)
    calls = [
        {"number": US, "outcome": "wrong_number", "contactId": ann["id"]},
        {"number": US_FOURTH, "outcome": "wrong_number"},
    ]
    calls = [{**call, "calledAt": at.isoformat()} for call in calls]
    reported = await api.post(f"{V2}/calls", json={"calls": calls}, headers=tenant.headers)
    assert reported.status_code == 200, reported.text
    assert reported.json()["data"]["acceptedRecordCount"] == 2
    rescored = await api.post(f"{V2}/jobs/{job_id}/rescore", headers=tenant.headers)
    assert rescored.status_code == 200, rescored.text
    await settle(app)
    again = rescored.json()["data"]["jobId"]
    body = (await api.get(f"{V2}/jobs/{again}/contacts", headers=tenant.headers)).json()
    ann, bob = body["data"]["contacts"]

    reason = f"reported a wrong number on {at.date().isoformat()}"
    wrong, mobile = ann["phones"]
    assert (wrong["number"], wrong["status"], wrong["connectRate"]) == (US, "na - auth", None)
    assert wrong["reasons"][0] == reason
    assert ann["phoneStatus"] == "na - auth"
    assert mobile["status"] == "p1"
    assert ann["leadStatus"] == "P1"
    assert ann["bestPhone"] == {"number": UK_MOBILE, "status": "p1", "ivrPath": None}
    (bobs,) = bob["phones"]
    assert (bobs["status"], bobs["reasons"][0]) == ("na - auth", reason)
    assert bob["leadStatus"] == "Needs Attention"
    assert bob["bestPhone"] is None


# -- the client's rate scale (P90) ---------------------------------------------------------------

UK_MOBILES = [f"+4474001{n:05d}" for n in range(60)]


def missed_calls(client_id: str, now: datetime, outcome_of: str = "no_answer") -> list[CallOutcome]:
    """Three calls to each of 60 mobiles in the month before ``now``, all ``outcome_of``."""
    return [
        outcome(client_id, number, outcome_of, now - timedelta(days=day))
        for number in UK_MOBILES
        for day in (30, 20, 10)
    ]


async def scale_of(db: Database, client_id: str, now: datetime = NOW) -> RateScale:
    async with db.read() as session:
        return await service.rate_scale(session, client_id, now=now.timestamp())


async def test_rate_scale_learns_from_the_clients_own_recent_calls(
    db: Database, tenant: Tenant
) -> None:
    other_client = str(uuid.uuid4())
    missed = missed_calls(tenant.client_id, NOW)
    answered = missed_calls(other_client, NOW, "connected")
    old = [outcome(str(uuid.uuid4()), UK_MOBILE, "no_answer", NOW - timedelta(days=400))]
    await insert(db, *missed, *answered, *old)
    low, high = SCALE_BOUNDS
    missing = await scale_of(db, tenant.client_id)
    assert low <= missing.mobile < 0.7
    # The calls were to mobiles: other lines keep their rates (P212).
    assert missing.other == 1.0
    assert await scale_of(db, other_client) == RateScale(mobile=high)
    # No calls, or only calls over a year old: nothing to learn from.
    assert await scale_of(db, str(uuid.uuid4())) == NO_SCALE
    assert await scale_of(db, old[0].client_id) == NO_SCALE
    # A year after the last of them, the calls no longer count.
    assert await scale_of(db, tenant.client_id, NOW + timedelta(days=366)) == NO_SCALE


async def test_recently_called_are_the_latest_numbers_first(db: Database, tenant: Tenant) -> None:
    await insert(
        db,
        outcome(tenant.client_id, US, "no_answer", NOW - timedelta(days=3)),
        outcome(tenant.client_id, US_OTHER, "no_answer", NOW - timedelta(days=5)),
        outcome(tenant.client_id, US_OTHER, "connected", NOW - timedelta(days=1)),
        outcome(tenant.client_id, US_THIRD, "busy", NOW - timedelta(days=400)),
    )
    since = NOW - timedelta(days=365)
    async with db.read() as session:
        found = await scoring_repo.recently_called(session, tenant.client_id, since=since, limit=5)
        first = await scoring_repo.recently_called(session, tenant.client_id, since=since, limit=1)
    assert found == [US_OTHER, US]
    assert first == [US_OTHER]


async def test_a_job_scores_with_the_clients_rate_scale(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    await insert(db, *missed_calls(tenant.client_id, datetime.now(UTC)))
    without_calls = await make_tenant(db, SECRET, name="Globex")

    async def scored_phone(owner: Tenant) -> dict[str, Any]:
        response = await submit(api, owner, [contact("Ann", "Lee", UK_MOBILE)])
        assert response.status_code == 200, response.text
        await settle(app)
        job_id = response.json()["data"]["jobId"]
        body = (await api.get(f"{V2}/jobs/{job_id}/contacts", headers=owner.headers)).json()
        (phone,) = body["data"]["contacts"][0]["phones"]
        return dict(phone)

    phone = await scored_phone(tenant)
    assert phone["status"] == "p2"
    assert "from this client's calls" in phone["reasons"][-1]
    assert phone["connectRate"] < 0.2
    # The same fresh mobile for a client without calls: the line type's rate.
    plain = await scored_phone(without_calls)
    assert plain["status"] == "p1"
    assert "client's calls" not in plain["reasons"][-1]


async def test_a_process_measures_a_clients_scale_again_only_when_it_is_old(
    db: Database, tenant: Tenant
) -> None:
    clock = [0.0]
    scales = service.RateScales(max_age=600.0, clock=lambda: clock[0])

    async def measured() -> RateScale:
        async with db.read() as session:
            return await scales.of(session, tenant.client_id, now=NOW.timestamp())

    assert await measured() == NO_SCALE
    await insert(db, *missed_calls(tenant.client_id, NOW))
    clock[0] = 599.0
    assert await measured() == NO_SCALE  # kept
    clock[0] = 600.0
    assert (await measured()).mobile < 0.7  # measured again
