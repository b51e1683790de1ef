"""Enrichment jobs end to end: the directory and the client's history find new numbers for the
right person, never for a namesake at another company; nothing found means Not Enriched."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI

from dialscore.enrichment.repository import add_directory_people
from dialscore.identity.keys import Person
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from tests.conftest import SECRET
from tests.support import V2, Tenant, make_tenant, settle, submit

OWN = "+14155550234"
FOUND_MOBILE = "+12125557188"
FOUND_DIRECT = "+16175552142"


async def add_person(db: Database, record_id: str, phones: list[dict[str, Any]], **kw: str) -> None:
    async with db.unit_of_work() as session:
        await add_directory_people(session, [(record_id, Person(**kw), phones)], utcnow())


async def enrich(
    app: FastAPI, api: httpx.AsyncClient, tenant: Tenant, contacts: list[dict[str, Any]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    response = await submit(api, tenant, contacts, kind="enrich")
    assert response.status_code == 200, response.text
    job_id = response.json()["data"]["jobId"]
    await settle(app)
    job = (await api.get(f"{V2}/jobs/{job_id}", headers=tenant.headers)).json()["data"]
    listed = await api.get(f"{V2}/jobs/{job_id}/contacts", headers=tenant.headers)
    return job, listed.json()["data"]["contacts"]


async def score_first(
    app: FastAPI, api: httpx.AsyncClient, tenant: Tenant, contact: dict[str, Any]
) -> None:
    """Scores one contact, so that it is in the client's history."""
    scored = await submit(api, tenant, [contact])
    assert scored.status_code == 200, scored.text
    await settle(app)


async def test_directory_match_appends_new_numbers(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    await add_person(
        db,
        "dir-ann",
        [{"number": FOUND_MOBILE, "type": "mobile"}, {"number": OWN, "type": "direct"}],
        first_name="Ann",
        last_name="Lee",
        company="Acme Inc.",
        email="ann.lee@acme.com",
    )
    job, contacts = await enrich(
        app,
        api,
        tenant,
        [{"firstName": "Ann", "lastName": "Lee", "companyAccount": "ACME", "phone": OWN}],
    )
    assert job["status"] == "Finalized"
    (contact,) = contacts
    assert contact["enrichmentContactId"] == "dir-ann"
    # The contact's own number is not added twice (D19).
    assert [(p["number"], p["type"], p["position"]) for p in contact["phones"]] == [
        (OWN, "other", 1),
        (FOUND_MOBILE, "Service Enriched Phone 1", 2),
    ][: len(contact["phones"])]
    assert len(contact["phones"]) == 2
    assert all(p["status"] for p in contact["phones"])
    # The directory's type of the number is its hint for scoring, and again when rescored.
    assert "given as mobile; line type not confirmed" in contact["phones"][1]["reasons"]
    rescored = await api.post(f"{V2}/jobs/{job['id']}/rescore", json={}, headers=tenant.headers)
    assert rescored.status_code == 200, rescored.text
    await settle(app)
    again = await api.get(
        f"{V2}/jobs/{rescored.json()['data']['jobId']}/contacts", headers=tenant.headers
    )
    (contact,) = again.json()["data"]["contacts"]
    assert contact["phones"][1]["type"] == "Service Enriched Phone 1"
    assert "given as mobile; line type not confirmed" in contact["phones"][1]["reasons"]


async def test_a_namesake_at_another_company_is_never_matched(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    await add_person(
        db,
        "dir-other-ann",
        [{"number": FOUND_MOBILE, "type": "mobile"}],
        first_name="Ann",
        last_name="Lee",
        company="Globex Corporation",
    )
    job, contacts = await enrich(
        app, api, tenant, [{"firstName": "Ann", "lastName": "Lee", "companyAccount": "Acme"}]
    )
    assert job["status"] == "Not Enriched"
    (contact,) = contacts
    assert contact["enrichmentContactId"] is None
    assert FOUND_MOBILE not in [p["number"] for p in contact["phones"]]


async def test_a_last_name_alone_at_the_company_matches_nobody(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    """A contact with a last name and a company website but no first name is accepted (D6)
    and compared with the same-named people of that domain: none is it."""
    await add_person(
        db,
        "dir-ann-lee",
        [{"number": FOUND_MOBILE, "type": "mobile"}],
        first_name="Ann",
        last_name="Lee",
        company="Acme",
        website="https://acme.com",
    )
    job, contacts = await enrich(
        app,
        api,
        tenant,
        [{"lastName": "Lee", "companyAccount": "Acme", "website": "acme.com"}],
    )
    assert job["status"] == "Not Enriched"
    (contact,) = contacts
    assert contact["enrichmentContactId"] is None


async def test_history_finds_the_same_person_among_the_clients_contacts(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    await score_first(
        app,
        api,
        tenant,
        {"firstName": "Robert", "lastName": "Núñez", "companyAccount": "Initech LLC",
         "phone": FOUND_DIRECT},
    )  # fmt: skip
    job, contacts = await enrich(
        app,
        api,
        tenant,
        [{"firstName": "Bob", "lastName": "Nunez", "companyAccount": "Initech"}],
    )
    assert job["status"] == "Finalized", contacts
    (contact,) = contacts
    assert contact["enrichmentContactId"].startswith("contact:")
    assert [p["number"] for p in contact["phones"]] == [FOUND_DIRECT]

    # Another client's contacts are never a source.
    other = await make_tenant(db, SECRET, name="Other", credits=100)
    job, contacts = await enrich(
        app, api, other, [{"firstName": "Bob", "lastName": "Nunez", "companyAccount": "Initech"}]
    )
    assert job["status"] == "Not Enriched"


async def test_a_typo_in_the_last_name_is_found_by_company_and_initial(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    await add_person(
        db,
        "dir-katherine",
        [{"number": FOUND_MOBILE, "type": "mobile"}],
        first_name="Katherine",
        last_name="Hernandez",
        company="Umbrella Health",
        website="umbrellahealth.com",
    )
    job, contacts = await enrich(
        app,
        api,
        tenant,
        [
            {
                "firstName": "Katherine",
                "lastName": "Hernadez",
                "companyAccount": "UMBRELLA HEALTH",
                "website": "www.umbrellahealth.com",
            }
        ],
    )
    assert job["status"] == "Finalized", contacts
    assert contacts[0]["enrichmentContactId"] == "dir-katherine"


async def test_a_name_several_companies_bear_reads_as_the_largest(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    """Two companies named Summit: a contact at "Summit" with no website is read as the one
    most of the directory's Summit people work at, so the other's Ann Lee is no match."""
    async with db.unit_of_work() as session:
        await add_directory_people(
            session,
            [
                *(
                    (f"dir-summit-{n}", Person(f"P{n}", f"Staff{n}", company="Summit",
                                               website="summit.com"), [])
                    for n in range(3)
                ),
                ("dir-ann-minor", Person("Ann", "Lee", email="ann@summitgroup.io",
                                         company="Summit Inc."),
                 [{"number": FOUND_MOBILE, "type": "mobile"}]),
                ("dir-bo-major", Person("Bo", "Kim", company="Summit LLC", website="summit.com"),
                 [{"number": FOUND_DIRECT, "type": "direct"}]),
            ],
            utcnow(),
        )  # fmt: skip
    job, contacts = await enrich(
        app,
        api,
        tenant,
        [
            {"firstName": "Ann", "lastName": "Lee", "companyAccount": "Summit"},
            {"firstName": "Bo", "lastName": "Kim", "companyAccount": "Summit"},
        ],
    )
    found = sorted(((c["firstName"], c["enrichmentContactId"]) for c in contacts), key=repr)
    assert found == [("Ann", None), ("Bo", "dir-bo-major")]
    assert job["status"] == "Finalized"
    # Named with its own domain, the smaller Summit's Ann Lee is found.
    job, contacts = await enrich(
        app,
        api,
        tenant,
        [{"firstName": "Ann", "lastName": "Lee", "companyAccount": "Summit",
          "website": "summitgroup.io"}],
    )  # fmt: skip
    assert contacts[0]["enrichmentContactId"] == "dir-ann-minor"
    assert job["status"] == "Finalized"


async def test_a_company_known_by_its_page_alone_is_the_company_its_records_show(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    """A numeric company page says nothing of the company's name: the directory's records
    with that page do (here a colleague's), so Ann Lee of Acme is found, and the Ann Lee of
    Globex, whose page is another, is not."""
    page = "https://www.linkedin.com/company/{}/"
    async with db.unit_of_work() as session:
        await add_directory_people(
            session,
            [
                ("dir-bo", Person("Bo", "Kim", company="Acme Inc.", website="acme.com",
                                  company_linkedin_url=page.format(10007)), []),
                ("dir-ann", Person("Ann", "Lee", company="Acme", email="ann.lee@acme.com"),
                 [{"number": FOUND_MOBILE, "type": "mobile"}]),
                ("dir-globex-ann", Person("Ann", "Lee", company="Globex",
                                          company_linkedin_url=page.format(20011)),
                 [{"number": FOUND_DIRECT, "type": "direct"}]),
            ],
            utcnow(),
        )  # fmt: skip
    job, contacts = await enrich(
        app,
        api,
        tenant,
        [
            {"firstName": "Ann", "lastName": "Lee",
             "companyLinkedInUrl": "linkedin.com/company/10007"},
            {"firstName": "Ann", "lastName": "Lee",
             "companyLinkedInUrl": "https://uk.linkedin.com/company/30013"},
        ],
    )  # fmt: skip
    found = {c["companyLinkedInUrl"]: c["enrichmentContactId"] for c in contacts}
    assert found == {
        "linkedin.com/company/10007": "dir-ann",
        "https://uk.linkedin.com/company/30013": None,
    }
    assert job["status"] == "Finalized"


async def test_a_batch_matches_each_contact_to_its_own_record(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    count = 60
    async with db.unit_of_work() as session:
        await add_directory_people(
            session,
            [
                (
                    f"dir-{n}",
                    Person(f"First{n}", f"Last{n}", email=f"person{n}@initech.com",
                           company="Initech"),
                    [{"number": f"+1212555{2000 + n:04d}", "type": "mobile"}],
                )
                for n in range(count)
            ],
            utcnow(),
        )  # fmt: skip
    contacts_in = []
    for n in range(count):
        # By email, by name and company, and by name and website (the name written another
        # way) in turn.
        contact: dict[str, Any] = {"firstName": f"First{n}", "lastName": f"Last{n}"}
        if n % 3 == 0:
            contact["email"] = f"Person{n}+crm@Initech.com"
            contact["companyAccount"] = "Initech"
        elif n % 3 == 1:
            contact["companyAccount"] = "INITECH, Inc."
        else:
            contact["companyAccount"] = "Initech Software Group"
            contact["website"] = "https://initech.com/about"
        contacts_in.append(contact)
    job, contacts = await enrich(app, api, tenant, contacts_in)
    assert job["status"] == "Finalized"
    assert len(contacts) == count
    for contact in contacts:
        n = int(contact["firstName"].removeprefix("First"))
        assert contact["enrichmentContactId"] == f"dir-{n}"
        assert [p["number"] for p in contact["phones"]] == [f"+1212555{2000 + n:04d}"]


async def test_history_finds_an_address_written_another_way(
    app: FastAPI, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    await score_first(
        app,
        api,
        tenant,
        {"firstName": "Dana", "lastName": "Scully", "email": "dana.scully@gmail.com",
         "phone": FOUND_DIRECT},
    )  # fmt: skip
    job, contacts = await enrich(
        app,
        api,
        tenant,
        [{"firstName": "Dana", "lastName": "Scully", "email": "DanaScully+work@googlemail.com",
          "companyAccount": "FBI"}],
    )  # fmt: skip
    assert job["status"] == "Finalized", contacts
    assert [p["number"] for p in contacts[0]["phones"]] == [FOUND_DIRECT]
