"""The call outcomes page over HTTP, on both databases: a CSV file of call results goes to the
service of POST /calls, good rows are stored and each bad one is listed with its reason."""

from __future__ import annotations

import html
import re

import httpx

from dialscore.calls import service
from dialscore.kit.db import Database
from tests.support import Tenant
from tests.web_forms import csrf_token, once_token, sign_in_user

ANN = "+14155552671"
BOB = "+14155550123"


async def upload(
    api: httpx.AsyncClient,
    token: str | None,
    content: bytes,
    filename: str = "calls.csv",
    *,
    once: str | None = None,
) -> httpx.Response:
    data = {"csrf_token": token} if token is not None else {}
    if once is not None:
        data["once"] = once
    return await api.post("/app/calls", data=data, files={"file": (filename, content, "text/csv")})


async def calls_to(api: httpx.AsyncClient, tenant: Tenant, number: str) -> list[dict[str, str]]:
    answer = await api.get(
        "/api/public/v2/calls", params={"number": number, "limit": 1000}, headers=tenant.headers
    )
    assert answer.status_code == 200, answer.text
    calls: list[dict[str, str]] = answer.json()["data"]["calls"]
    return calls


def rejected_rows(page: str) -> list[list[str]]:
    table = re.search(r"<caption>Rejected rows.*?<tbody>(.*?)</tbody>", page, re.S)
    assert table is not None, "no rejected rows listed"
    return [
        [html.unescape(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", table.group(1), re.S)
    ]


async def test_one_bad_row_is_listed_and_the_others_stored(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    token = await sign_in_user(api, db, tenant.user_id)
    await csrf_token(api, "/app/calls")
    # As a spreadsheet exports it: a BOM, semicolons, headers as people write them, a blank row.
    content = (
        "\ufeffPhone;Result;Called At;Notes\r\n"
        f"{ANN};Connected;2026-11-20T14:03:00+01:00;first\r\n"
        ";;;\r\n"
        f"{BOB};maybe <b>;2026-11-20 15:04;second\r\n"
        f"{BOB};voicemail;;third\r\n"
    ).encode()
    answer = await upload(api, token, content)
    assert answer.status_code == 200, answer.text
    assert "2 of 3 calls accepted, 1 rejected." in answer.text
    assert rejected_rows(answer.text) == [
        ["4", BOB, "maybe <b>", "2026-11-20 15:04", service.OUTCOME_UNKNOWN]
    ]
    assert "<b>" not in answer.text
    (ann,) = await calls_to(api, tenant, ANN)
    assert (ann["outcome"], ann["calledAt"]) == ("connected", "2026-11-20T13:03:00Z")
    (bob,) = await calls_to(api, tenant, BOB)
    assert bob["outcome"] == "voicemail"


async def test_a_file_sent_again_from_the_same_form_is_recorded_once(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    token = await sign_in_user(api, db, tenant.user_id)
    once = await once_token(api, "/app/calls")
    content = f"number,outcome\n{ANN},connected\n{BOB},busy\n12,busy\n".encode()
    first = await upload(api, token, content, "monday.csv", once=once)
    assert "2 of 3 calls accepted, 1 rejected." in first.text
    again = await upload(api, token, content, "monday.csv", once=once)
    assert again.status_code == 200, again.text
    assert (
        "“monday.csv” was already sent from this form: 2 of 3 calls were accepted then. "
        "Nothing was recorded again." in again.text
    )
    assert len(await calls_to(api, tenant, ANN)) == 1
    # The same file sent from a new page is new calls, as the person asked.
    await upload(api, token, content, "monday.csv", once=await once_token(api, "/app/calls"))
    assert len(await calls_to(api, tenant, ANN)) == 2


async def test_tabs_and_times_without_a_zone(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    token = await sign_in_user(api, db, tenant.user_id)
    content = f"Number\tOutcome\tTime\n{ANN}\tbusy\t2026-11-20 09:30:00\n".encode()
    answer = await upload(api, token, content)
    assert "1 of 1 call accepted." in answer.text
    (ann,) = await calls_to(api, tenant, ANN)
    assert (ann["outcome"], ann["calledAt"]) == ("busy", "2026-11-20T09:30:00Z")


async def test_more_rows_than_one_request_takes_go_in_chunks(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    token = await sign_in_user(api, db, tenant.user_id)
    rows = [f"{ANN},no_answer,2026-11-20T10:00:00Z"] * 1500 + ["12,no_answer,"]
    content = ("number,outcome,time\n" + "\n".join(rows) + "\n").encode()
    answer = await upload(api, token, content)
    assert "1500 of 1501 calls accepted, 1 rejected." in answer.text
    assert rejected_rows(answer.text) == [["1502", "12", "no_answer", "", service.NUMBER_INVALID]]
    assert len(await calls_to(api, tenant, ANN)) == 1000  # a page of the API's largest size


async def test_a_file_that_cannot_be_read_is_explained(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    token = await sign_in_user(api, db, tenant.user_id)
    answer = await upload(api, token, b"Name,Company\nAnn,Acme\n", "people.csv")
    assert answer.status_code == 400
    error = re.search(r'<span class="field-error" id="calls-error">([^<]+)</span>', answer.text)
    assert error is not None
    assert "needs a column for the number called" in error.group(1)
    assert "people.csv" in error.group(1)
    latin = await upload(api, token, "number,outcome\n+1415555267\xe9,busy\n".encode("latin-1"))
    assert latin.status_code == 400 and "not UTF-8" in latin.text


async def test_an_upload_without_the_token_is_refused(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    await sign_in_user(api, db, tenant.user_id)
    answer = await upload(api, None, f"number,outcome\n{ANN},busy\n".encode())
    assert answer.status_code == 403
    assert await calls_to(api, tenant, ANN) == []
