"""The score accuracy page over HTTP, on both databases: the figures of the score report for
calls reported after the scoring, put in words per level, drawn and tabled per band, the
period chosen, and a plain sentence when there are too few calls (P112)."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from dialscore.dashboard import accuracy
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from tests.support import V2, Tenant
from tests.test_scoring_report import (
    FICTIONAL,
    FIXED,
    MOBILE,
    PERSONAL,
    entries,
    report_calls,
    score,
    stamp,
    tier,
)
from tests.web_forms import sign_in_user

PAGE = "/app/accuracy"


def text_of(fragment: str) -> str:
    """What a person reads of an HTML fragment: no tags, entities decoded, spaces plain, an
    en dash between a range's ends as a hyphen."""
    plain = html.unescape(re.sub(r"<[^>]+>", "", fragment))
    plain = plain.replace("\u00a0", " ").replace("\u2013", "-")
    return re.sub(r"\s+", " ", plain).strip()


def verdicts(page: str) -> dict[str, str]:
    listed = re.search(r'<ul class="verdicts">(.*?)</ul>', page, re.S)
    assert listed is not None, "no verdicts"
    return {
        code: text_of(body)
        for code, body in re.findall(r'<li data-tier="(\w+)">(.*?)</li>', listed.group(1), re.S)
    }


def rows(page: str, attribute: str) -> dict[str, dict[str, str]]:
    """Each table row carrying ``attribute`` (data-tier, data-band): its figures by name."""
    found = {}
    for key, body in re.findall(rf'<tr {attribute}="(\w+)">(.*?)</tr>', page, re.S):
        cells = re.findall(r'data-figure="(\w+)">(.*?)</td>', body, re.S)
        found[key] = {name: text_of(value) for name, value in cells}
    return found


async def api_report(api: httpx.AsyncClient, tenant: Tenant, since: str) -> dict[str, Any]:
    response = await api.get(
        f"{V2}/account/scoring-report", params={"since": since}, headers=tenant.headers
    )
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


async def test_the_page_puts_the_reports_figures_in_words_and_a_chart(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    job_id = await score(app, api, tenant, MOBILE, FIXED, PERSONAL, FICTIONAL)
    phones = await entries(api, tenant, job_id)
    tiers = {number: tier(phones[number]["status"]) for number in (MOBILE, FIXED, PERSONAL)}
    assert tiers == {MOBILE: "p1", FIXED: "p2", PERSONAL: "p3"}, tiers
    scored = utcnow()
    after = stamp(scored + timedelta(seconds=30))
    calls = [{"number": MOBILE, "outcome": "connected", "calledAt": after}] * 9
    calls += [{"number": MOBILE, "outcome": "voicemail", "calledAt": after}] * 21
    # 100 unanswered calls to a p2 number: below its 4-20 % beyond chance.
    calls += [{"number": FIXED, "outcome": "no_answer", "calledAt": after}] * 100
    calls += [{"number": PERSONAL, "outcome": "busy", "calledAt": after}] * 5
    await report_calls(api, tenant, calls)
    await sign_in_user(api, db, tenant.user_id)

    answer = await api.get(PAGE)
    assert answer.status_code == 200, answer.text
    page = answer.text
    assert '<a href="/app/accuracy">Score accuracy</a>' in page
    assert "connectRate" not in page
    summary = re.search(r"<p data-summary>(.*?)</p>", page, re.S)
    assert summary is not None
    assert text_of(summary.group(1)) == (
        "135 calls to your scored numbers, 9 of which reached the person (6.7 %)."
    )

    said = verdicts(page)
    assert said["p1"] == (
        "High — p1 numbers reached the person on 30 % of 30 calls, within its promise of 20 % "
        "or more."
    )
    assert said["p2"].startswith(
        "Medium — p2 numbers reached the person on 0 % of 100 calls, below its promise of 4-20 %: "
        "calls to these numbers connect less often than their scores say, more than chance "
        "explains (95 % range 0-3.7 %)."
    )
    assert said["p3"] == (
        "Low — p3 numbers: 5 calls so far, too few to judge (20 or more are needed)."
    )
    assert said["na"] == "No calls to Not reachable — na numbers yet in this period."

    # The tables show the API's figures for the same calls.
    report = await api_report(api, tenant, stamp(scored - timedelta(days=90)))
    levels = rows(page, "data-tier")
    for figures in report["tiers"]:
        shown = levels[figures["tier"]]
        assert shown["calls"] == str(figures["calls"])
        assert shown["connects"] == str(figures["connects"])
        assert shown["phones"] == str(figures["phones"])
    assert levels["p1"]["observed"] == "30 %"
    assert levels["p1"]["range"] == "16.7-47.9 %"
    assert levels["p2"]["observed"] == "0 %"
    assert levels["na"]["observed"] == levels["na"]["range"] == "—"
    bands = rows(page, "data-band")
    assert list(bands) == [str(i) for i in range(10)]
    for index, figures in enumerate(report["buckets"]):
        assert bands[str(index)]["calls"] == str(figures["calls"])
        assert bands[str(index)]["connects"] == str(figures["connects"])

    # The chart: named and described, a point for each band with calls, the diagonal.
    chart = re.search(r"<svg[^>]*>(.*?)</svg>", page, re.S)
    assert chart is not None
    assert 'role="img" aria-labelledby="chart-title chart-desc"' in page
    assert '<title id="chart-title">' in chart.group(1)
    assert '<desc id="chart-desc">' in chart.group(1)
    assert 'class="diagonal"' in chart.group(1)
    called = [b for b in report["buckets"] if b["calls"]]
    assert chart.group(1).count("<circle") == len(called) >= 2


async def test_too_few_calls_are_said_plainly_with_the_way_to_report_more(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    await score(app, api, tenant, MOBILE)
    after = stamp(utcnow() + timedelta(seconds=30))
    await report_calls(api, tenant, [{"number": MOBILE, "outcome": "connected", "calledAt": after}])
    await sign_in_user(api, db, tenant.user_id)
    page = (await api.get(PAGE)).text
    sentence = re.search(r"<p data-too-few>(.*?)</p>", page, re.S)
    assert sentence is not None
    assert text_of(sentence.group(1)).startswith(
        "There are too few calls to say anything yet: 1 call to your scored numbers in this "
        "period, and at least 20 are needed."
    )
    assert '<a href="/app/calls">Call outcomes</a>' in sentence.group(1)
    assert "<svg" in page  # the one band with a call is still drawn


async def test_the_period_is_chosen_from_a_plain_form(
    app: FastAPI,
    api: httpx.AsyncClient,
    db: Database,
    tenant: Tenant,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await score(app, api, tenant, MOBILE)
    called = utcnow() + timedelta(seconds=30)
    await report_calls(
        api, tenant, [{"number": MOBILE, "outcome": "connected", "calledAt": stamp(called)}]
    )
    await sign_in_user(api, db, tenant.user_id)
    # Sixty days on, the call is in the last 90 days and not in the last 30.
    later = called + timedelta(days=60)
    monkeypatch.setattr(accuracy, "utcnow", lambda: later)
    for days, counted, selected in (("30", 0, "30"), ("90", 1, "90"), ("365", 1, "365")):
        page = (await api.get(PAGE, params={"days": days})).text
        assert f'<option value="{selected}" selected>' in page
        assert rows(page, "data-tier")["p1"]["calls"] == str(counted), days
    # A period the form does not offer shows the default one rather than an error.
    for days in ("7", "ninety", ""):
        answer = await api.get(PAGE, params={"days": days})
        assert answer.status_code == 200
        assert '<option value="90" selected>' in answer.text


async def test_signed_out_it_asks_to_sign_in(api: httpx.AsyncClient) -> None:
    answer = await api.get(PAGE, params={"days": "30"})
    assert answer.status_code == 303
    assert answer.headers["location"].startswith("/app/sign-in?next=/app/accuracy")
