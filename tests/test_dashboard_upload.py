"""Uploading a contact list over HTTP, on both databases: the file read and mapped, the cost
shown before anything is charged, one app job started with the file's columns and rows kept,
the rejected rows downloadable with their reasons, and nobody else's upload readable."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import AsyncIterator
from datetime import timedelta
from decimal import Decimal

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select, update

from dialscore.accounts import service as accounts
from dialscore.config import Settings
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.models import Contact, Job, Upload
from dialscore.worker.housekeeping import Housekeeping
from tests.conftest import SECRET
from tests.support import Tenant, add_user, make_tenant, settle, write_kept_contacts
from tests.web_forms import sign_in_user

MAX_ROWS = 6
MAX_BYTES = 4000

MESSY = (
    "\ufeff First Name ;LAST;Mobile;Company;Work Phone;Notes\r\n"
    "Ada;Lovelace;+1 415 555 2671;Engines Ltd;;vip\r\n"
    "Bob;Stone;4.15555E+10;Stone Co;;\r\n"
    "Cy;Ng;33612345678;Ng plc;4155552672;from the fair\r\n"
    "Dee;;4155552673;Dee Inc;;\r\n"
)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"upload_max_rows": MAX_ROWS, "upload_max_bytes": MAX_BYTES})


async def sign_in(api: httpx.AsyncClient, db: Database, user_id: str) -> str:
    """Signs the user in on ``api``; answers the session's CSRF token."""
    return await sign_in_user(api, db, user_id)


async def send(
    api: httpx.AsyncClient, token: str, text: str | bytes, name: str = "leads.csv"
) -> httpx.Response:
    data = text.encode() if isinstance(text, str) else text
    return await api.post(
        "/app/upload", data={"csrf_token": token}, files={"contacts": (name, data, "text/csv")}
    )


def selected(page: str) -> dict[str, str]:
    """Each column's label and the option selected for it."""
    found = re.findall(
        r'<label for="(column-\d+)">([^<]*)</label>\s*<select[^>]*>(.*?)</select>', page, re.S
    )
    return {
        label.strip(): re.search(r'value="([^"]+)" selected', options).group(1)  # type: ignore[union-attr]
        for _, label, options in found
    }


def hidden(page: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert found is not None, name
    return found.group(1)


@pytest.fixture
async def other(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client


async def test_an_upload_starts_one_app_job_with_its_columns_and_rows(
    api: httpx.AsyncClient, db: Database, tenant: Tenant, app: FastAPI
) -> None:
    token = await sign_in(api, db, tenant.user_id)
    sent = await send(api, token, MESSY)
    assert sent.status_code == 303
    mapping_url = sent.headers["location"]
    upload_id = mapping_url.split("/")[3]

    mapping = await api.get(mapping_url)
    assert "semicolon separated" in mapping.text
    assert selected(mapping.text) == {
        "First Name": "firstName",
        "LAST": "lastName",
        # Each phone column is a phone of the type its name tells.
        "Mobile": "phone:mobile",
        "Company": "companyAccount",
        "Work Phone": "phone:direct",
        "Notes": "extra",
    }
    # Beside each choice, what the column holds.
    assert '<span class="sample">Lovelace</span>' in mapping.text

    chosen = {f"column-{i}": v for i, v in enumerate(selected(mapping.text).values())}
    mapped = await api.post(mapping_url, data={"csrf_token": token, **chosen})
    assert mapped.status_code == 303
    action = await api.get(mapped.headers["location"])
    assert action.status_code == 200
    # Ada (one phone) and Cy (two): three phones at 0.05 credits; Bob's number lost digits,
    # Dee has no last name.
    assert re.search(r'id="contacts-found">2<', action.text)
    assert re.search(r'id="phones-found">3<', action.text)
    assert re.search(r'id="cost">0.15 credits', action.text)
    assert re.search(r'id="balance">1,000 credits', action.text)
    assert "scientific notation" in action.text and "lost its leading +" in action.text
    assert 'value="enrichment"' in action.text and 'value="core"' not in action.text
    async with db.unit_of_work() as session:
        assert await accounts.current_balance(session, tenant.client_id) == Decimal(1000)

    started = await api.post(
        f"/app/upload/{upload_id}/start",
        data={
            "csrf_token": token,
            "kind": "scoring",
            "scoring_type": "lightning",
            "quote": hidden(action.text, "quote"),
        },
    )
    assert started.status_code == 303
    assert started.headers["location"] == f"/app/upload/{upload_id}/started"
    result = await api.get(started.headers["location"])
    job_id = re.search(r'href="/app/jobs/([0-9a-f-]{36})"', result.text).group(1)  # type: ignore[union-attr]
    assert "Download rejected rows (CSV)" in result.text
    assert "<td>Dee</td>" in result.text and "<td>No last name</td>" in result.text

    await write_kept_contacts(db)
    async with db.unit_of_work() as session:
        job = await session.get(Job, job_id)
        assert job is not None
        # Every row of the file counts in the total, Bob's damaged one too.
        assert (job.source, job.name, job.total_count, job.accepted_count) == (
            "app",
            "leads.csv",
            4,
            2,
        )
        assert job.upload_columns == [
            "First Name",
            "LAST",
            "Mobile",
            "Company",
            "Work Phone",
            "Notes",
        ]
        rows = (
            await session.scalars(
                select(Contact).where(Contact.job_id == job_id).order_by(Contact.ordinal)
            )
        ).all()
        assert [c.source_row for c in rows] == [
            ["Ada", "Lovelace", "+1 415 555 2671", "Engines Ltd", "", "vip"],
            ["Cy", "Ng", "33612345678", "Ng plc", "4155552672", "from the fair"],
        ]
        assert rows[0].unmapped_fields == {"Notes": "vip"}
        assert await accounts.current_balance(session, tenant.client_id) == Decimal("999.85")

    listed = await api.get(f"/api/public/v2/jobs/{job_id}", headers=tenant.headers)
    assert listed.json()["data"]["jobSource"] == "app"

    download = await api.get(f"/app/upload/{upload_id}/rejected.csv")
    assert download.headers["content-type"].startswith("text/csv")
    assert "leads-rejected.csv" in download.headers["content-disposition"]
    # As the file came: a BOM and semicolons.
    assert download.content.startswith(b"\xef\xbb\xbfFirst Name;")
    table = list(csv.reader(io.StringIO(download.content.decode("utf-8-sig")), delimiter=";"))
    assert table[0] == [*job.upload_columns, "dialscore Rejected Reason"]
    assert [r[0] for r in table[1:]] == ["Bob", "Dee"]
    assert "scientific notation" in table[1][-1]
    assert table[2][-1] == "No last name"
    # The file is gone once its job started; its steps answer 404, its result stays.
    assert (await api.get(mapping_url)).status_code == 404

    # The rejected rows stay with the job: its page lists the person, the number and why ...
    page = await api.get(f"/app/jobs/{job_id}")
    assert "Rejected rows (2)" in page.text
    listed_rows = re.findall(
        r'<td data-label="Row">(\d+)</td><td data-label="Name">([^<]*)</td>'
        r'<td data-label="Number">([^<]*)</td><td data-label="Reason">([^<]*)</td>',
        page.text,
    )
    assert [(row, name, number) for row, name, number, _ in listed_rows] == [
        ("3", "Bob Stone", "4.15555E+10"),
        ("5", "Dee", "4155552673"),
    ]
    assert listed_rows[1][3] == "No last name"
    # ... its own download gives them at any time, as they were, with the reason ...
    kept = await api.get(f"/app/jobs/{job_id}/rejected.csv")
    assert kept.status_code == 200 and "rejected.csv" in kept.headers["content-disposition"]
    kept_rows = list(csv.reader(io.StringIO(kept.content.decode("utf-8-sig"))))
    assert kept_rows[0] == [*job.upload_columns, "dialscore Rejected Reason"]
    assert [r[:3] for r in kept_rows[1:]] == [
        ["Bob", "Stone", "4.15555E+10"],
        ["Dee", "", "4155552673"],
    ]
    # ... and the results hold every row of the file in its order, the rejected ones saying why.
    await settle(app)
    results = list(
        csv.DictReader(
            io.StringIO(
                (await api.get(f"/app/jobs/{job_id}/results.csv")).content.decode("utf-8-sig")
            )
        )
    )
    assert [r["First Name"] for r in results] == ["Ada", "Bob", "Cy", "Dee"]
    reasons = [r["dialscore Rejected Reason"] for r in results]
    assert reasons[0] == reasons[2] == "" and reasons[3] == "No last name"
    assert "scientific notation" in reasons[1]
    assert results[1]["dialscore Lead Status"] == "" and results[0]["dialscore Lead Status"]
    assert results[2]["dialscore Phone 1"] == "+33612345678"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "Choose a CSV file to upload."),
        (b"\n\n", "The file is empty."),
        ("Name;Phone\nJos\xe9;1\n".encode("latin-1"), "CSV UTF-8"),
        (b"a,b\n" + b"1,2\n" * (MAX_ROWS + 1), f"more than {MAX_ROWS} rows"),
        (b"a,b\n" + b"x" * MAX_BYTES, "larger than"),
        # Beyond what the body limit lets through for /app/: refused while it arrives.
        (b"a,b\n" + b"x" * (MAX_BYTES + 1024 * 1024), "larger than"),
        (b"Phone,phone\n1,2\n", "more than one column"),
        (b"First,,Last\n1,2,3\n", "Column 2 of the header row has no name"),
    ],
)
async def test_an_unusable_file_is_explained_beside_the_field(
    api: httpx.AsyncClient, db: Database, tenant: Tenant, data: bytes, message: str
) -> None:
    token = await sign_in(api, db, tenant.user_id)
    answer = await send(api, token, data, name="x.csv" if data else "")
    assert answer.status_code == 400
    error = re.search(r'<p id="contacts-error"[^>]*>([^<]*)</p>', answer.text)
    assert error is not None and message in error.group(1).replace("&#34;", '"')
    assert 'aria-describedby="contacts-error"' in answer.text


async def test_a_field_chosen_twice_is_shown_beside_the_second_column(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    token = await sign_in(api, db, tenant.user_id)
    url = (await send(api, token, "Company,Account\nAcme,Acme Inc\n")).headers["location"]
    answer = await api.post(
        url,
        data={"csrf_token": token, "column-0": "companyAccount", "column-1": "companyAccount"},
    )
    assert answer.status_code == 400
    assert (
        "\u201cCompany\u201d is already chosen for the column \u201cCompany\u201d." in answer.text
    )
    # The choices made are kept.
    assert selected(answer.text) == {"Company": "companyAccount", "Account": "companyAccount"}


async def test_a_changed_choice_shows_its_cost_before_charging(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    token = await sign_in(api, db, tenant.user_id)
    url = (await send(api, token, "First,Last,Phone,Company\nA,B,4155552671,C\n")).headers[
        "location"
    ]
    upload_id = url.split("/")[3]
    await api.post(
        url,
        data={
            "csrf_token": token,
            **{
                f"column-{i}": f
                for i, f in enumerate(["firstName", "lastName", "phone:unknown", "companyAccount"])
            },
        },
    )
    shown = await api.get(f"/app/upload/{upload_id}/action")
    answer = await api.post(
        f"/app/upload/{upload_id}/start",
        data={
            "csrf_token": token,
            "kind": "enrichment",
            "scoring_type": "lightning",
            "quote": hidden(shown.text, "quote"),
        },
    )
    assert answer.status_code == 200
    assert "Nothing was charged" in answer.text and "Enrich (Lightning)" in answer.text
    async with db.unit_of_work() as session:
        assert (await session.scalars(select(Job))).first() is None
    shown = await api.post(
        f"/app/upload/{upload_id}/start",
        data={
            "csrf_token": token,
            "kind": "enrichment",
            "scoring_type": "lightning",
            "quote": hidden(answer.text, "quote"),
            "show": "1",
        },
    )
    assert "Enrich (Lightning)" in shown.text and "Nothing was charged" not in shown.text
    async with db.unit_of_work() as session:
        assert (await session.scalars(select(Job))).first() is None
    refused = await api.post(f"/app/upload/{upload_id}/start", data={"kind": "scoring"})
    assert refused.status_code == 403
    # A new mapping is priced afresh, not from what was worked out for the old one.
    assert re.search(r'id="phones-found">1<', shown.text)
    remapped = {"column-0": "firstName", "column-1": "lastName", "column-2": "ignore"}
    await api.post(url, data={"csrf_token": token, **remapped, "column-3": "companyAccount"})
    again = await api.get(f"/app/upload/{upload_id}/action?kind=enrichment")
    assert re.search(r'id="phones-found">0<', again.text)
    assert re.search(r'id="contacts-found">1<', again.text)


async def test_another_users_upload_is_not_found(
    api: httpx.AsyncClient, other: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    token = await sign_in(api, db, tenant.user_id)
    url = (await send(api, token, "First,Last,Phone\nA,B,4155552671\n")).headers["location"]
    upload_id = url.split("/")[3]
    member = await add_user(db, SECRET, tenant, "member@acme.example")
    other_token = await sign_in(other, db, member.user_id)
    for path in ("map", "action", "started", "rejected.csv"):
        assert (await other.get(f"/app/upload/{upload_id}/{path}")).status_code == 404
    posted = await other.post(
        f"/app/upload/{upload_id}/map", data={"csrf_token": other_token, "column-0": "firstName"}
    )
    assert posted.status_code == 404
    assert (await other.get("/app/upload/..%2F..%2Fsecret_key/map")).status_code == 404
    assert (await api.get(url)).status_code == 200


async def test_starting_twice_makes_one_job_and_old_uploads_are_removed(
    api: httpx.AsyncClient, db: Database, tenant: Tenant, settings: Settings
) -> None:
    token = await sign_in(api, db, tenant.user_id)
    text = "First,Last,Phone\nAda,Lee,4155552671\n"
    url = (await send(api, token, text, name="<i>fair.csv")).headers["location"]
    upload_id = url.split("/")[3]
    mapping = await api.get(url)
    assert "&lt;i&gt;fair.csv" in mapping.text and "<i>fair" not in mapping.text
    chosen = {"column-0": "firstName", "column-1": "lastName", "column-2": "phone:unknown"}
    action = await api.get(
        (await api.post(url, data={"csrf_token": token, **chosen})).headers["location"]
    )
    start = {"csrf_token": token, "kind": "scoring", "scoring_type": "lightning"}
    start["quote"] = hidden(action.text, "quote")
    first = await api.post(f"/app/upload/{upload_id}/start", data=start)
    assert re.fullmatch(r"/app/jobs/[0-9a-f-]{36}", first.headers["location"])
    again = await api.post(f"/app/upload/{upload_id}/start", data=start)
    assert again.headers["location"] == f"/app/upload/{upload_id}/started"
    async with db.unit_of_work() as session:
        assert len((await session.scalars(select(Job))).all()) == 1

    async with db.read() as session:
        kept = (await session.execute(select(Upload.state, Upload.file, Upload.meta))).one()
    # The job keeps each contact's row: the file is not kept twice.
    assert kept.state == "started" and kept.file is None and kept.meta["job_id"]

    older = (await send(api, token, text)).headers["location"].split("/")[3]
    newer = (await send(api, token, text)).headers["location"].split("/")[3]
    day_ago = utcnow() - timedelta(hours=25)
    async with db.unit_of_work() as session:
        await session.execute(update(Upload).where(Upload.id != newer).values(updated_at=day_ago))
    assert (await api.get(f"/app/upload/{older}/map")).status_code == 404
    assert (await api.get(f"/app/upload/{upload_id}/started")).status_code == 404
    forgotten = await Housekeeping(db, settings).forget_expired()
    assert forgotten["uploads"] == 2
    async with db.read() as session:
        assert list(await session.scalars(select(Upload.id))) == [newer]
    assert (await api.get(f"/app/upload/{newer}/map")).status_code == 200
    # Nothing of an upload is kept on the instance's disk.
    assert not (settings.data_dir / "uploads").exists()


async def test_a_balance_too_low_is_explained_and_the_upload_kept(
    api: httpx.AsyncClient, db: Database
) -> None:
    poor = await make_tenant(db, SECRET, credits=0, name="Poor")
    token = await sign_in(api, db, poor.user_id)
    url = (await send(api, token, "First,Last,Phone\nAda,Lee,4155552671\n")).headers["location"]
    upload_id = url.split("/")[3]
    chosen = {"column-0": "firstName", "column-1": "lastName", "column-2": "phone:unknown"}
    action = await api.get(
        (await api.post(url, data={"csrf_token": token, **chosen})).headers["location"]
    )
    assert "The balance does not cover this job." in action.text
    start = {"csrf_token": token, "kind": "scoring", "scoring_type": "lightning"}
    answer = await api.post(
        f"/app/upload/{upload_id}/start", data={**start, "quote": hidden(action.text, "quote")}
    )
    assert answer.status_code == 400
    error = re.search(r'<p id="start-error"[^>]*>([^<]*)</p>', answer.text)
    assert error is not None and "insufficient credits" in error.group(1)
    async with db.unit_of_work() as session:
        assert (await session.scalars(select(Job))).first() is None
    assert (await api.get(url)).status_code == 200
