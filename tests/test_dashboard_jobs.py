"""The jobs pages over HTTP, on both databases: the list filtered by source, a job's page and
its progress, another user's job not found, the results CSV against the API's answer, and
deleting a job after a confirmation."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import update

from dialscore.dashboard.csvout import API_FIELDS, phone_column_names
from dialscore.dashboard.words import words
from dialscore.jobs import service
from dialscore.kit.db import Database
from dialscore.models import Contact, Job
from tests.conftest import SECRET
from tests.support import V2, Tenant, add_user, contact, settle, submit
from tests.web_forms import ONCE, sign_in_user


async def new_job(api: httpx.AsyncClient, tenant: Tenant, contacts: list[Any], **body: Any) -> str:
    answer = await submit(api, tenant, contacts, **body)
    assert answer.status_code in (200, 201), answer.text
    job_id: str = answer.json()["data"]["jobId"]
    return job_id


def job_links(page: str) -> list[str]:
    return re.findall(r'<a href="/app/jobs/([0-9a-f-]{36})">', page)


def read_csv(answer: httpx.Response) -> list[dict[str, str]]:
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(answer.content.decode("utf-8-sig"))))
    header = rows[0]
    assert len(set(header)) == len(header), header
    return [dict(zip(header, row, strict=True)) for row in rows[1:]]


MIXED = [
    contact("Ann", "Lee", "+14155552671", phone2="(415) 555-0100", companyAccount="Acme"),
    contact("Bo", "Ng", "+14155550101", email="bo@example.com", title="CFO"),
    contact("Cy", "Ro", "not a number", phone2="+442079460958", phone3="+14155550102"),
]


async def test_the_list_is_filtered_by_source_newest_first(
    api: httpx.AsyncClient, db: Database, tenant: Tenant, app: FastAPI
) -> None:
    first = await new_job(api, tenant, [contact()], name="first from api")
    second = await new_job(api, tenant, [contact("Bo")], name="second from app")
    third = await new_job(api, tenant, [contact("Cy")], name="third from api")
    async with db.unit_of_work() as session:
        await session.execute(update(Job).where(Job.id == second).values(source="app"))
    await settle(app)
    await sign_in_user(api, db, tenant.user_id)

    every = await api.get("/app/jobs")
    assert every.status_code == 200
    assert job_links(every.text) == [third, second, first]
    assert "3 jobs" in every.text
    assert "data-progress-url" not in every.text  # finished: nothing to follow
    assert (await api.get("/app/jobs", params={"source": "app"})).text.count("/app/jobs/") >= 1
    assert job_links((await api.get("/app/jobs", params={"source": "app"})).text) == [second]
    assert job_links((await api.get("/app/jobs?source=api")).text) == [third, first]
    # A link that is not one of the three shows every job rather than an error.
    assert job_links((await api.get("/app/jobs?source=fax&page=x")).text) == [third, second, first]


async def test_the_list_is_paginated(
    api: httpx.AsyncClient, db: Database, tenant: Tenant, app: FastAPI
) -> None:
    made = [await new_job(api, tenant, [contact(f"P{i}")]) for i in range(27)]
    await settle(app)
    await sign_in_user(api, db, tenant.user_id)
    first = await api.get("/app/jobs")
    assert job_links(first.text) == made[::-1][:25]
    assert "Page 1 of 2" in first.text and "Next page" in first.text
    second = await api.get("/app/jobs?source=all&page=2")
    assert job_links(second.text) == made[::-1][25:]
    assert "Previous page" in second.text


async def test_a_running_job_shows_live_progress_and_no_download(
    api: httpx.AsyncClient, db: Database, tenant: Tenant, app: FastAPI
) -> None:
    job_id = await new_job(api, tenant, MIXED)
    await settle(app)
    await sign_in_user(api, db, tenant.user_id)
    progress = await api.get(f"/app/jobs/{job_id}/progress")
    assert progress.json() == {
        "status": "Finalized",
        "label": "Finished",
        "processed": 3,
        "total": 3,
        "finished": True,
    }

    async with db.unit_of_work() as session:
        await session.execute(
            update(Job).where(Job.id == job_id).values(status="Processing", processed_count=1)
        )
    progress = await api.get(f"/app/jobs/{job_id}/progress")
    assert progress.json() == {
        "status": "Processing",
        "label": "Running",
        "processed": 1,
        "total": 3,
        "finished": False,
    }
    listed = await api.get("/app/jobs")
    assert f'data-progress-url="/app/jobs/{job_id}/progress"' in listed.text
    page = await api.get(f"/app/jobs/{job_id}")
    assert f'data-progress-url="/app/jobs/{job_id}/progress"' in page.text
    assert "Download results (CSV)" not in page.text
    refused = await api.get(f"/app/jobs/{job_id}/results.csv")
    assert refused.status_code == 409 and "once it has finished" in refused.text
    async with db.unit_of_work() as session:
        await session.execute(
            update(Job).where(Job.id == job_id).values(status="Finalized", processed_count=3)
        )


async def test_another_users_job_is_not_found(
    api: httpx.AsyncClient, db: Database, tenant: Tenant, app: FastAPI
) -> None:
    other = await add_user(db, SECRET, tenant, "other@acme.example")
    theirs = await new_job(api, other, [contact()])
    mine = await new_job(api, tenant, [contact()])
    await settle(app)
    await sign_in_user(api, db, tenant.user_id)
    assert job_links((await api.get("/app/jobs")).text) == [mine]
    for path in (f"/app/jobs/{theirs}", f"/app/jobs/{theirs}/results.csv", "/app/jobs/nope"):
        answer = await api.get(path)
        assert answer.status_code == 404, path
        assert "Not found" in answer.text
    progress = await api.get(f"/app/jobs/{theirs}/progress")
    assert progress.status_code == 404 and progress.json() == {"error": "job not found"}
    assert (await api.get(f"/app/jobs/{mine}")).status_code == 200


async def test_signed_out_the_pages_send_to_sign_in(api: httpx.AsyncClient, tenant: Tenant) -> None:
    for path in ("/app/jobs", "/app/jobs/x/progress", "/app/jobs/x/results.csv"):
        answer = await api.get(path)
        assert answer.status_code == 303 and "/app/sign-in?next=" in answer.headers["location"]


async def test_the_job_page_shows_the_summary_and_contacts_as_text(
    api: httpx.AsyncClient, db: Database, tenant: Tenant, app: FastAPI
) -> None:
    people = [*MIXED, contact("<script>alert(1)</script>", "Evil", "+14155550103")]
    people += [contact(f"F{i}", "Many", f"+1415555{1000 + i}") for i in range(50)]
    job_id = await new_job(api, tenant, people)
    await settle(app)
    await sign_in_user(api, db, tenant.user_id)
    answered = await api.get(f"{V2}/jobs/{job_id}/contacts", headers=tenant.headers)
    api_contacts = answered.json()["data"]["contacts"]

    page = await api.get(f"/app/jobs/{job_id}")
    assert page.status_code == 200
    assert "<script>alert(1)</script>" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert f'href="/app/jobs/{job_id}/results.csv"' in page.text
    assert "Download results (CSV)" in page.text
    assert "Contacts by lead status" in page.text and "Phones by status" in page.text
    leads: dict[str, int] = {}
    for c in api_contacts:
        leads[c["leadStatus"]] = leads.get(c["leadStatus"], 0) + 1
    chart = page.text.split("Contacts by lead status")[1].split("</figure>")[0]
    # Each status in words, with the code the API uses beside it.
    for status, count in leads.items():
        label = re.escape(html_text(words().lead_status(status)))
        coded = rf"{label} <span class=\"code\">— {re.escape(status)}</span>"
        assert re.search(
            rf"<span>{coded}</span><div class=\"bar\"[^>]*></div><span>{count}</span>", chart
        )
    phones: dict[str, int] = {}
    for c in api_contacts:
        for p in c["phones"]:
            phones[p["status"]] = phones.get(p["status"], 0) + 1
    chart = page.text.split("Phones by status")[1].split("</figure>")[0]
    bars = re.findall(
        r"<span>([^<]+) <span class=\"code\">— ([^<]+)</span></span>"
        r"<div class=\"bar\"[^>]*></div><span>(\d+)</span>",
        chart,
    )
    assert {status: int(count) for _, status, count in bars} == phones
    assert all(label == html_text(words().phone_status(status)) for label, status, _ in bars)
    ann = api_contacts[0]
    assert ann["bestPhone"] is not None
    assert "Best phone" in page.text and ann["phones"][0]["reasons"]
    assert html_text(ann["phones"][0]["reasons"][0]) in page.text
    assert "Page 1 of 2" in page.text and "F45" in page.text and "F46" not in page.text
    second = await api.get(f"/app/jobs/{job_id}?page=2")
    assert "F46" in second.text and "Ann" not in second.text


SUMMARY = [
    "dialscore Lead Status",
    "dialscore Best Phone",
    "dialscore Best Phone Status",
    "dialscore Rejected Reason",
]
PARTS = ("", " Status", " Type", " Country", " Reasons")


def html_text(value: str) -> str:
    import html

    return html.escape(value, quote=True)


async def test_the_results_csv_equals_the_api_answer(
    api: httpx.AsyncClient, db: Database, tenant: Tenant, app: FastAPI
) -> None:
    job_id = await new_job(api, tenant, [*MIXED, contact("=1+2", "@Sum", "+14155550104")])
    await settle(app)
    await sign_in_user(api, db, tenant.user_id)
    answered = await api.get(f"{V2}/jobs/{job_id}/contacts", headers=tenant.headers)
    expected = answered.json()["data"]["contacts"]
    answer = await api.get(f"/app/jobs/{job_id}/results.csv")
    assert "attachment" in answer.headers["content-disposition"]
    rows = read_csv(answer)
    header = list(rows[0])
    assert header == [*API_FIELDS, *SUMMARY, *phone_column_names(3)]
    assert len(rows) == len(expected) == 4
    for row, want in zip(rows, expected, strict=True):
        for name in ("firstName", "lastName", "email", "title", "companyAccount"):
            value = want[name] or ""
            assert row[name] in (value, "'" + value), name
        for index, phone in enumerate(want["phones"], start=1):
            got = tuple(row[f"dialscore Phone {index}{part}"] for part in PARTS)
            assert got == (
                *(phone[k] or "" for k in ("number", "status", "type", "country")),
                "; ".join(phone["reasons"]),
            )
            assert phone["status"] is not None
        best = want["bestPhone"] or {}
        assert (row["dialscore Best Phone"], row["dialscore Best Phone Status"]) == (
            best.get("number", ""),
            best.get("status", ""),
        )
        assert row["dialscore Lead Status"] == want["leadStatus"]
    assert (rows[3]["firstName"], rows[3]["lastName"]) == ("'=1+2", "'@Sum")
    assert rows[0]["dialscore Phone 1"] == "+14155552671"  # a number keeps its plus sign


async def test_an_uploaded_jobs_csv_keeps_the_files_columns(
    api: httpx.AsyncClient, db: Database, tenant: Tenant, app: FastAPI
) -> None:
    job_id = await new_job(api, tenant, MIXED[:2])
    await settle(app)
    columns = ["First Name", "Mobile", "Notes;extra"]
    cells = [["Ann", "4155552671", 'says "hi", often'], ["Bo", "+1 415 555 0101", ""]]
    async with db.unit_of_work() as session:
        await session.execute(update(Job).where(Job.id == job_id).values(upload_columns=columns))
        for ordinal, row in enumerate(cells, start=1):
            await session.execute(
                update(Contact)
                .where(Contact.job_id == job_id, Contact.ordinal == ordinal)
                .values(source_row=row)
            )
    await sign_in_user(api, db, tenant.user_id)
    rows = read_csv(await api.get(f"/app/jobs/{job_id}/results.csv"))
    expected = (await api.get(f"{V2}/jobs/{job_id}/contacts", headers=tenant.headers)).json()
    header = list(rows[0])
    assert header == [*columns, *SUMMARY, *phone_column_names(2)]
    for line, sent, want in zip(rows, cells, expected["data"]["contacts"], strict=True):
        assert [line[c] for c in columns] == sent
        assert line["dialscore Phone 1 Status"] == want["phones"][0]["status"]
        assert line["dialscore Lead Status"] == want["leadStatus"]


async def test_an_uploaded_files_results_keep_its_columns_and_cells(
    api: httpx.AsyncClient, db: Database, tenant: Tenant, app: FastAPI
) -> None:
    await sign_in_user(api, db, tenant.user_id)
    page = await api.get("/app/upload")
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
    text = (
        "First Name,Last Name,Mobile,Work Phone,Notes\r\n"
        'Ann,Lee,+1 415 555 2671,(212) 555-0100,"=HYPERLINK(""x"")"\r\n'
        "Bo,Ng,4155550101,,plain\r\n"
    )
    sent = await api.post(
        "/app/upload",
        data={"csrf_token": token},
        files={"contacts": ("leads.csv", text.encode(), "text/csv")},
    )
    assert sent.status_code == 303, sent.text
    mapping_url = sent.headers["location"]
    mapping = await api.get(mapping_url)
    choices = re.findall(r'<select[^>]*name="(column-\d+)"[^>]*>(.*?)</select>', mapping.text, re.S)
    chosen = {
        name: re.search(r'value="([^"]+)" selected', options).group(1)  # type: ignore[union-attr]
        for name, options in choices
    }
    assert len(chosen) == 5
    mapped = await api.post(mapping_url, data={"csrf_token": token, **chosen})
    assert mapped.status_code == 303, mapped.text
    action = await api.get(mapped.headers["location"])
    quote = re.search(r'name="quote" value="([^"]*)"', action.text).group(1)  # type: ignore[union-attr]
    started = await api.post(
        mapped.headers["location"].rsplit("/", 1)[0] + "/start",
        data={"csrf_token": token, "kind": "scoring", "scoring_type": "lightning", "quote": quote},
    )
    assert started.status_code == 303, started.text
    # Started, the upload leads to its job (or to its rejected rows, which link the job).
    result = await api.get(started.headers["location"], follow_redirects=True)
    job_id = re.search(r"/app/jobs/([0-9a-f-]{36})", f"{result.url} {result.text}").group(1)  # type: ignore[union-attr]
    await settle(app)

    rows = read_csv(await api.get(f"/app/jobs/{job_id}/results.csv"))
    expected = (await api.get(f"{V2}/jobs/{job_id}/contacts", headers=tenant.headers)).json()
    columns = ["First Name", "Last Name", "Mobile", "Work Phone", "Notes"]
    assert list(rows[0]) == [*columns, *SUMMARY, *phone_column_names(2)]
    assert [[r[c] for c in columns] for r in rows] == [
        ["Ann", "Lee", "+1 415 555 2671", "(212) 555-0100", '\'=HYPERLINK("x")'],
        ["Bo", "Ng", "4155550101", "", "plain"],
    ]
    for row, want in zip(rows, expected["data"]["contacts"], strict=True):
        numbers = [(p["number"], p["status"], p["type"]) for p in want["phones"]]
        got = [tuple(row[f"dialscore Phone 1{part}"] for part in PARTS[:3])]
        if row["dialscore Phone 2"]:
            got.append(tuple(row[f"dialscore Phone 2{part}"] for part in PARTS[:3]))
        assert got == numbers
        assert row["dialscore Lead Status"] == want["leadStatus"]
    listed = await api.get("/app/jobs?source=app")
    assert job_links(listed.text) == [job_id] and "leads.csv" in listed.text


async def test_results_are_read_in_batches_by_ordinal(
    api: httpx.AsyncClient, db: Database, tenant: Tenant, app: FastAPI
) -> None:
    job_id = await new_job(
        api, tenant, [contact(f"B{i}", phone=f"+1415555{2000 + i}") for i in range(7)]
    )
    await settle(app)
    async with db.read() as session:
        job = await session.get(Job, job_id)
    assert job is not None
    batches = [batch async for batch in service.result_batches(db.read, job, batch=3)]
    assert [len(b) for b in batches] == [3, 3, 1]
    assert [r.ordinal for b in batches for r in b] == list(range(1, 8))
    assert [r.fields["firstName"] for b in batches for r in b] == [f"B{i}" for i in range(7)]
    assert all(r.source_row is None for b in batches for r in b)


async def test_a_job_is_deleted_after_a_confirmation_and_then_not_found(
    api: httpx.AsyncClient, db: Database, tenant: Tenant, app: FastAPI
) -> None:
    doomed = await new_job(api, tenant, [contact(), contact("Bo", "Ng", "+14155550101")])
    kept = await new_job(api, tenant, [contact("Cy")])
    other = await add_user(db, SECRET, tenant, "other@acme.example")
    theirs = await new_job(api, other, [contact()])
    await settle(app)
    token = await sign_in_user(api, db, tenant.user_id)

    # The job page offers it; the page it leads to asks first, saying what goes.
    page = await api.get(f"/app/jobs/{doomed}")
    assert f'href="/app/jobs/{doomed}/delete"' in page.text
    assert words().deleting.label in page.text
    confirm = await api.get(f"/app/jobs/{doomed}/delete")
    assert confirm.status_code == 200
    assert "Delete the job" in confirm.text and "cannot be undone" in confirm.text
    assert f'action="/app/jobs/{doomed}/delete"' in confirm.text
    once = ONCE.search(confirm.text)
    assert once is not None

    # Without the session's token nothing happens.
    refused = await api.post(f"/app/jobs/{doomed}/delete", data={"once": once[1]})
    assert refused.status_code == 403
    assert (await api.get(f"/app/jobs/{doomed}")).status_code == 200

    sent = {"csrf_token": token, "once": once[1]}
    deleted = await api.post(f"/app/jobs/{doomed}/delete", data=sent)
    assert deleted.status_code == 303
    assert deleted.headers["location"] == "/app/jobs?done=deleted"
    listed = await api.get(deleted.headers["location"])
    assert words().deleting_done in listed.text
    assert job_links(listed.text) == [kept]
    for path in (f"/app/jobs/{doomed}", f"/app/jobs/{doomed}/results.csv"):
        assert (await api.get(path)).status_code == 404, path
    assert (await api.get(f"/app/jobs/{doomed}/delete")).status_code == 404
    assert (await api.get(f"{V2}/jobs/{doomed}", headers=tenant.headers)).status_code == 404

    # The same form again (a second click, the back button) says it was done; another form
    # for a job that is gone, or for someone else's, finds nothing.
    again = await api.post(f"/app/jobs/{doomed}/delete", data=sent)
    assert again.status_code == 303
    assert again.headers["location"] == "/app/jobs?done=deleted-again"
    assert words().deleting_again in (await api.get(again.headers["location"])).text
    fresh = {"csrf_token": token, "once": "another-token"}
    assert (await api.post(f"/app/jobs/{doomed}/delete", data=fresh)).status_code == 404
    assert (await api.get(f"/app/jobs/{theirs}/delete")).status_code == 404
    assert (await api.post(f"/app/jobs/{theirs}/delete", data=fresh)).status_code == 404
    assert (await api.get(f"{V2}/jobs/{theirs}", headers=other.headers)).status_code == 200
    assert (await api.get(f"/app/jobs/{kept}")).status_code == 200
