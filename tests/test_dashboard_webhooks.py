"""The webhooks pages over HTTP, on both databases: errors next to their fields with what was
typed kept, another user's subscription not found, and forms refused without their token."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import httpx

from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.models import WebhookAttempt, WebhookSubscription
from dialscore.webhooks import repository as webhooks_repo
from dialscore.webhooks import service as webhooks
from tests.conftest import SECRET
from tests.support import Tenant, add_user
from tests.web_forms import ONCE, once_token, sign_in_user
from tests.web_session import hidden_fields


def field_value(page: str, field_id: str) -> str:
    found = re.search(rf'<input id="{field_id}"[^>]*?value="([^"]*)"', page, re.S)
    assert found is not None, f"no field {field_id}"
    return html.unescape(found.group(1))


async def test_a_blank_name_is_shown_beside_the_field_and_the_url_kept(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    token = await sign_in_user(api, db, tenant.user_id)
    sent = {"csrf_token": token, "name": "  ", "url": "https://hooks.example/<x>", "events": []}
    answer = await api.post("/app/webhooks", data=sent)
    assert answer.status_code == 400
    assert 'id="name-error"' in answer.text and "Give the webhook a name" in answer.text
    assert field_value(answer.text, "webhook-url") == "https://hooks.example/<x>"
    assert "<x>" not in answer.text  # escaped, not markup
    assert "Choose at least one event." in answer.text
    listed = await api.get("/app/webhooks")
    assert "No webhooks yet." in listed.text


async def test_a_refused_url_is_explained_and_the_input_kept(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    token = await sign_in_user(api, db, tenant.user_id)
    for url in ("not a url", "https://127.0.0.1/hook"):
        sent = {"csrf_token": token, "name": "CRM", "url": url, "events": ["job.completed"]}
        answer = await api.post("/app/webhooks", data=sent)
        assert answer.status_code == 400, url
        error = re.search(r'<span class="field-error" id="url-error">([^<]+)</span>', answer.text)
        assert error is not None and "cannot receive webhooks" in error.group(1), url
        assert field_value(answer.text, "webhook-name") == "CRM"
        assert field_value(answer.text, "webhook-url") == url
        checked = re.findall(r'value="(job\.[a-z.]+)"\s*checked', answer.text)
        assert checked == ["job.completed"]
    listed = await api.get("/api/public/v2/webhooks", headers=tenant.headers)
    assert listed.json()["data"]["webhooks"] == []


async def test_the_create_form_takes_a_rate_of_its_own(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    """The create form asks for deliveries per second as the edit form does (P141): a bad one
    is explained beside its field with what was typed kept; a good one is the webhook's."""
    token = await sign_in_user(api, db, tenant.user_id)
    sent = {
        "csrf_token": token,
        "name": "CRM",
        "url": "https://93.184.215.14/hook",
        "events": ["job.completed"],
    }
    for typed in ("fast", "0", "5000"):
        refused = await api.post("/app/webhooks", data={**sent, "rate": typed})
        assert refused.status_code == 400, typed
        error = re.search(r'<span class="field-error" id="rate-error">([^<]+)</span>', refused.text)
        assert error is not None and "from 0.1 to 1000" in error.group(1), typed
        assert field_value(refused.text, "webhook-rate") == typed
    listed = await api.get("/api/public/v2/webhooks", headers=tenant.headers)
    assert listed.json()["data"]["webhooks"] == []

    made = await api.post("/app/webhooks", data={**sent, "rate": " 2.5 "})
    assert made.status_code == 200, made.text
    listed = await api.get("/api/public/v2/webhooks", headers=tenant.headers)
    assert [w["rateLimit"] for w in listed.json()["data"]["webhooks"]] == [2.5]


async def test_create_shows_the_secret_once_then_lifecycle(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    token = await sign_in_user(api, db, tenant.user_id)
    # A public address that needs no name lookup.
    sent = {
        "csrf_token": token,
        "name": "CRM",
        "url": "https://93.184.215.14/hook",
        "events": ["job.contact.scored", "job.completed"],
    }
    answer = await api.post("/app/webhooks", data=sent)
    assert answer.status_code == 200, answer.text
    secret = field_value(answer.text, "webhook-secret")
    assert answer.headers["cache-control"] == "no-store"
    assert secret.startswith("whsec_")
    assert 'data-copy="webhook-secret"' in answer.text
    listed = await api.get("/api/public/v2/webhooks", headers=tenant.headers)
    (made,) = listed.json()["data"]["webhooks"]
    assert made["name"] == "CRM" and made["status"] == "active"
    again = await api.get("/app/webhooks")
    assert secret not in again.text and "CRM" in again.text

    off = await api.post(f"/app/webhooks/{made['id']}/inactive", data={"csrf_token": token})
    assert off.status_code == 303
    listed = await api.get("/api/public/v2/webhooks", headers=tenant.headers)
    assert listed.json()["data"]["webhooks"][0]["status"] == "inactive"

    on = await api.post(f"/app/webhooks/{made['id']}/active", data={"csrf_token": token})
    assert on.status_code == 303
    listed = await api.get("/api/public/v2/webhooks", headers=tenant.headers)
    assert listed.json()["data"]["webhooks"][0]["status"] == "active"
    page = await api.get(on.headers["location"])
    assert "The webhook is active" in page.text

    log = await api.get(f"/app/webhooks/{made['id']}")
    assert log.status_code == 200 and "No deliveries yet." in log.text
    confirm = await api.get(f"/app/webhooks/{made['id']}/delete")
    assert "cannot be undone" in confirm.text
    gone = await api.post(f"/app/webhooks/{made['id']}/delete", data={"csrf_token": token})
    assert gone.status_code == 303
    listed = await api.get("/api/public/v2/webhooks", headers=tenant.headers)
    assert listed.json()["data"]["webhooks"] == []


async def test_the_create_form_sent_again_creates_nothing_more(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    """A reload of the page that showed the secret sends the form again, with its token."""
    token = await sign_in_user(api, db, tenant.user_id)
    sent = {
        "csrf_token": token,
        "once": await once_token(api, "/app/webhooks"),
        "name": "CRM",
        "url": "https://93.184.215.14/hook",
        "events": ["job.completed"],
    }
    first = await api.post("/app/webhooks", data=sent)
    assert first.status_code == 200 and field_value(first.text, "webhook-secret")
    again = await api.post("/app/webhooks", data=sent)
    assert again.status_code == 200, again.text
    assert "This form was already sent: the webhook “CRM” was created then" in again.text
    assert 'id="webhook-secret"' not in again.text
    listed = await api.get("/api/public/v2/webhooks", headers=tenant.headers)
    assert [w["name"] for w in listed.json()["data"]["webhooks"]] == ["CRM"]
    # The answer's own form carries a new token: it creates another.
    fresh = ONCE.search(again.text)
    assert fresh is not None and fresh[1] != sent["once"]
    another = await api.post("/app/webhooks", data={**sent, "once": fresh[1], "name": "ERP"})
    assert field_value(another.text, "webhook-secret")
    listed = await api.get("/api/public/v2/webhooks", headers=tenant.headers)
    assert sorted(w["name"] for w in listed.json()["data"]["webhooks"]) == ["CRM", "ERP"]


async def test_another_users_webhook_is_not_found(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    other = await add_user(db, SECRET, tenant, "other@acme.example")
    made = await api.post(
        "/api/public/v2/webhooks",
        headers=other.headers,
        json={
            "name": "Theirs",
            "url": "https://93.184.215.14/hook",
            "eventTypes": ["job.completed"],
        },
    )
    assert made.status_code == 201, made.text
    theirs = made.json()["data"]["id"]
    token = await sign_in_user(api, db, tenant.user_id)
    for path in (f"/app/webhooks/{theirs}", f"/app/webhooks/{theirs}/delete", "/app/webhooks/x"):
        assert (await api.get(path)).status_code == 404, path
    retry = "deliveries/00000000-0000-4000-8000-000000000000/retry"
    for action in ("inactive", "active", "delete", "test", retry, "rotate-secret", "edit"):
        answer = await api.post(f"/app/webhooks/{theirs}/{action}", data={"csrf_token": token})
        assert answer.status_code == 404, action
    listed = await api.get("/api/public/v2/webhooks", headers=other.headers)
    assert listed.json()["data"]["webhooks"][0]["status"] == "active"
    assert "Theirs" not in (await api.get("/app/webhooks")).text


async def secrets_of(db: Database, webhook_id: str) -> tuple[str, str | None]:
    """A subscription's secret and previous secret, opened."""
    async with db.read() as session:
        row = await session.get(WebhookSubscription, webhook_id)
    assert row is not None
    box = webhooks.secret_box(SECRET)
    previous = row.previous_secret_ciphertext
    return box.open(row.secret_ciphertext), box.open(previous) if previous else None


async def test_rotate_shows_the_new_secret_once_and_a_reload_rotates_nothing(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    made = await api.post(
        "/api/public/v2/webhooks",
        headers=tenant.headers,
        json={"name": "CRM", "url": "https://93.184.215.14/hook", "eventTypes": ["job.completed"]},
    )
    webhook = made.json()["data"]
    action = f"/app/webhooks/{webhook['id']}/rotate-secret"
    await sign_in_user(api, db, tenant.user_id)
    page = await api.get(f"/app/webhooks/{webhook['id']}")
    assert "Rotate secret" in page.text and "Secret replaced" not in page.text
    sent = hidden_fields(page.text, action)
    assert set(sent) == {"csrf_token", "once"}

    answer = await api.post(action, data=sent)
    assert answer.status_code == 200, answer.text
    assert answer.headers["cache-control"] == "no-store"
    secret = field_value(answer.text, "webhook-secret")
    assert secret.startswith("whsec_") and secret != webhook["secret"]
    assert 'data-copy="webhook-secret"' in answer.text
    assert "X-Service-Signature uses it from now on; until" in answer.text
    assert await secrets_of(db, webhook["id"]) == (secret, webhook["secret"])

    # Sent again (a reload of the answer): nothing replaced, no secret shown.
    again = await api.post(action, data=sent)
    assert again.status_code == 200, again.text
    assert "This form was already sent: the secret of the webhook “CRM” was replaced" in again.text
    assert 'id="webhook-secret"' not in again.text and secret not in again.text
    assert await secrets_of(db, webhook["id"]) == (secret, webhook["secret"])

    shown = await api.get(f"/app/webhooks/{webhook['id']}")
    assert secret not in shown.text
    assert "Secret replaced" in shown.text and "the previous secret also signs" in shown.text
    # A fresh token rotates again: the secret just shown becomes the previous one.
    newer = await api.post(action, data=hidden_fields(shown.text, action))
    newest = field_value(newer.text, "webhook-secret")
    assert await secrets_of(db, webhook["id"]) == (newest, secret)
    # A form without its session token is refused.
    refused = await api.post(action, data={"once": "fresh"})
    assert refused.status_code == 403
    assert await secrets_of(db, webhook["id"]) == (newest, secret)


async def test_forms_without_their_token_are_refused(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    await sign_in_user(api, db, tenant.user_id)
    sent = {"name": "CRM", "url": "https://93.184.215.14/hook", "events": ["job.completed"]}
    answer = await api.post("/app/webhooks", data=sent)
    assert answer.status_code == 403
    wrong = await api.post("/app/webhooks", data={**sent, "csrf_token": "not-the-token"})
    assert wrong.status_code == 403
    listed = await api.get("/api/public/v2/webhooks", headers=tenant.headers)
    assert listed.json()["data"]["webhooks"] == []


async def test_the_delivery_log_pages_deliveries_with_their_attempts(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    made = await api.post(
        "/api/public/v2/webhooks",
        headers=tenant.headers,
        json={"name": "CRM", "url": "https://93.184.215.14/hook", "eventTypes": ["job.completed"]},
    )
    subscription = made.json()["data"]["id"]
    now = utcnow()
    rows = []
    for age in range(23):
        row = webhooks.delivery_row(
            subscription_id=subscription,
            user_id=tenant.user_id,
            event_type="job.completed",
            payload={"age": age},
            job_id=None,
            now=now - timedelta(minutes=age),
        )
        row["state"] = "failed"
        rows.append(row)
    # The newest waits for its next attempt, an hour away, after a failed one.
    newest = rows[0]
    newest.update(state="pending", attempts=1, available_at=now + timedelta(hours=1))
    async with db.unit_of_work() as session:
        await webhooks_repo.insert_deliveries(session, rows)
        session.add(
            WebhookAttempt(
                delivery_id=newest["id"],
                number=1,
                status_code=503,
                duration_ms=137,
                error="HTTP 503 <from the receiver>",
                attempted_at=now,
            )
        )
    await sign_in_user(api, db, tenant.user_id)
    first = await api.get(f"/app/webhooks/{subscription}")
    assert first.status_code == 200
    shown = re.findall(r'<h3 id="delivery-([0-9a-f-]+)">', first.text)
    assert shown == [r["id"] for r in rows[:20]]  # newest first, 20 a page
    cells = re.sub(r"<td [^>]*>", "<td>", first.text)
    assert "<td>503</td><td>137 ms</td><td>HTTP 503 &lt;from the receiver&gt;</td>" in cells
    next_attempt = (now + timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S")
    assert f"<dt>Next attempt</dt><dd>{next_attempt} UTC</dd>" in first.text
    assert "Page 1 of 2" in first.text and 'rel="next"' in first.text
    second = await api.get(f"/app/webhooks/{subscription}?page=2")
    assert re.findall(r'<h3 id="delivery-([0-9a-f-]+)">', second.text) == [
        r["id"] for r in rows[20:]
    ]
    assert 'rel="prev"' in second.text and 'rel="next"' not in second.text


# -- editing (P140, P141) -------------------------------------------------------------------------


async def test_edit_changes_the_webhook_in_place_and_a_resend_changes_nothing(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    made = await api.post(
        "/api/public/v2/webhooks",
        headers=tenant.headers,
        json={"name": "CRM", "url": "https://93.184.215.14/hook", "eventTypes": ["job.completed"]},
    )
    webhook = made.json()["data"]
    page_path = f"/app/webhooks/{webhook['id']}"
    action = f"{page_path}/edit"
    await sign_in_user(api, db, tenant.user_id)
    page = await api.get(page_path)
    assert field_value(page.text, "edit-name") == "CRM"
    assert field_value(page.text, "edit-url") == "https://93.184.215.14/hook"
    assert field_value(page.text, "edit-rate") == ""
    assert "your account's rate" in page.text
    hidden = hidden_fields(page.text, action)
    assert set(hidden) == {"csrf_token", "once"}
    sent = {
        **hidden,
        "name": "CRM (EU)",
        "url": "https://93.184.215.15/in",
        "events": ["job.contact.scored", "job.completed"],
        "rate": "2.5",
    }
    answer = await api.post(action, data=sent)
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == f"{page_path}?done=edited"
    shown = await api.get(answer.headers["location"])
    assert "The webhook was changed." in shown.text
    assert field_value(shown.text, "edit-rate") == "2.5"
    assert "at most 2.5 per second" in shown.text
    listed = await api.get("/api/public/v2/webhooks", headers=tenant.headers)
    (changed,) = listed.json()["data"]["webhooks"]
    assert changed == {
        **{k: v for k, v in webhook.items() if k != "secret"},
        "name": "CRM (EU)",
        "url": "https://93.184.215.15/in",
        "eventTypes": ["job.contact.scored", "job.completed"],
        "triggers": ["job.contact.scored", "job.completed"],
        "rateLimit": 2.5,
    }

    # Changed through the API meanwhile: the same form sent again changes nothing.
    await api.patch(
        f"/api/public/v2/webhooks/{webhook['id']}", json={"name": "API"}, headers=tenant.headers
    )
    again = await api.post(action, data=sent)
    assert again.headers["location"] == f"{page_path}?done=edited-again"
    listed = await api.get("/api/public/v2/webhooks", headers=tenant.headers)
    assert listed.json()["data"]["webhooks"][0]["name"] == "API"

    # An empty rate removes it.
    fresh = hidden_fields((await api.get(page_path)).text, action)
    cleared = await api.post(action, data={**sent, **fresh, "rate": ""})
    assert cleared.status_code == 303, cleared.text
    listed = await api.get("/api/public/v2/webhooks", headers=tenant.headers)
    assert listed.json()["data"]["webhooks"][0]["rateLimit"] is None


async def test_edit_errors_are_shown_beside_their_fields_with_what_was_typed(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    made = await api.post(
        "/api/public/v2/webhooks",
        headers=tenant.headers,
        json={"name": "CRM", "url": "https://93.184.215.14/hook", "eventTypes": ["job.completed"]},
    )
    webhook = made.json()["data"]
    action = f"/app/webhooks/{webhook['id']}/edit"
    token = await sign_in_user(api, db, tenant.user_id)
    base = {"csrf_token": token, "name": "CRM", "url": "https://93.184.215.14/hook"}
    cases = [
        ({"name": "  ", "events": ["job.completed"]}, "edit-name-error", "Give the webhook a name"),
        ({"events": []}, "edit-events-error", "Choose at least one event."),
        (
            {"url": "https://127.0.0.1/hook", "events": ["job.completed"]},
            "edit-url-error",
            "cannot receive webhooks",
        ),
        ({"rate": "0", "events": ["job.completed"]}, "edit-rate-error", "from 0.1 to 1000"),
        ({"rate": "fast", "events": ["job.completed"]}, "edit-rate-error", "from 0.1 to 1000"),
    ]
    for fields, error_id, says in cases:
        answer = await api.post(action, data={**base, **fields})
        assert answer.status_code == 400, (fields, answer.text)
        error = re.search(rf'<span class="field-error" id="{error_id}">([^<]+)</span>', answer.text)
        assert error is not None and says in error.group(1), fields
        for name in ("name", "url", "rate"):
            if name in fields:
                assert field_value(answer.text, f"edit-{name}") == fields[name], fields
    listed = await api.get("/api/public/v2/webhooks", headers=tenant.headers)
    assert listed.json()["data"]["webhooks"] == [
        {k: v for k, v in webhook.items() if k != "secret"}
    ]


# -- how the endpoint answers -----------------------------------------------------------------


def health_facts(page: str) -> dict[str, str]:
    """The facts of the page's "How the endpoint answers" section, by label, tags removed."""
    section = re.search(
        r'<section class="card" aria-labelledby="health-heading">(.*?)</section>', page, re.S
    )
    assert section is not None
    found = re.findall(r"<dt>([^<]+)</dt><dd>(.*?)</dd>", section.group(1), re.S)
    return {label: html.unescape(re.sub(r"<[^>]+>", "", value)) for label, value in found}


async def test_the_webhook_page_shows_how_the_endpoint_answers(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    made = await api.post(
        "/api/public/v2/webhooks",
        headers=tenant.headers,
        json={"name": "CRM", "url": "https://93.184.215.14/hook", "eventTypes": ["job.completed"]},
    )
    subscription = made.json()["data"]["id"]
    await sign_in_user(api, db, tenant.user_id)
    empty = await api.get(f"/app/webhooks/{subscription}")
    assert "Nothing was sent to this webhook yet." in empty.text
    assert "data-reload-every" not in empty.text

    now = utcnow()
    rows = []
    for n in range(3):
        row = webhooks.delivery_row(
            subscription_id=subscription,
            user_id=tenant.user_id,
            event_type="job.completed",
            payload={"n": n},
            job_id=None,
            now=now - timedelta(hours=1),
        )
        row["state"] = "delivered"
        rows.append(row)
    old, recent, last = rows
    old["state"] = "failed"
    # (delivery, status code, duration, error, when): two days ago a failure and a slow
    # success, both out of the last 24 hours; in them three successes and two failures.
    attempts = [
        (old, 500, 9000, "receiver answered 500", now - timedelta(days=2)),
        (old, 200, 8000, None, now - timedelta(days=2, minutes=-1)),
        (recent, 200, 80, None, now - timedelta(hours=3)),
        (recent, 200, 85, None, now - timedelta(hours=2)),
        (recent, None, 1240, "timed out after 10 s", now - timedelta(hours=1, minutes=30)),
        (last, 503, 90, "receiver answered 503", now - timedelta(minutes=20)),
        (last, 204, 100, None, now - timedelta(minutes=10)),
    ]
    async with db.unit_of_work() as session:
        await webhooks_repo.insert_deliveries(session, rows)
        for number, (delivery, status, duration, error, when) in enumerate(attempts, 1):
            session.add(
                WebhookAttempt(
                    delivery_id=delivery["id"],
                    number=number,
                    status_code=status,
                    duration_ms=duration,
                    error=error,
                    attempted_at=when,
                )
            )
    page = await api.get(f"/app/webhooks/{subscription}")
    assert page.status_code == 200
    facts = health_facts(page.text)

    def at(when: timedelta) -> str:
        return (now - when).strftime("%Y-%m-%d %H:%M:%S") + " UTC"

    assert facts == {
        "Last 24 hours": "3 delivered, 2 failed",
        # The median of 80, 85, 90, 100 and 1240 ms, and the slowest.
        "Answer time": "90 ms typically, 1.2 s at the slowest (last 24 hours)",
        "Last delivered": at(timedelta(minutes=10)),
        "Last failed": at(timedelta(minutes=20)) + ": receiver answered 503",
        "Waiting to be sent": "none",
    }
    assert "data-reload-every" not in page.text

    # A delivery waiting for its next attempt: counted, and the page reloads itself.
    waiting = webhooks.delivery_row(
        subscription_id=subscription,
        user_id=tenant.user_id,
        event_type="job.completed",
        payload={"n": 3},
        job_id=None,
        now=now,
    )
    async with db.unit_of_work() as session:
        await webhooks_repo.insert_deliveries(session, [waiting])
    page = await api.get(f"/app/webhooks/{subscription}")
    assert health_facts(page.text)["Waiting to be sent"] == "1 delivery"
    assert 'data-reload-every="10"' in page.text
    assert '<meta http-equiv="refresh"' not in page.text


async def test_answer_times_read_as_people_write_them() -> None:
    from dialscore.dashboard.webhook_health import duration_words

    assert [duration_words(ms) for ms in (0, 85, 87.5, 999, 1000, 1240, 12_960)] == [
        "0 ms",
        "85 ms",
        "88 ms",
        "999 ms",
        "1 s",
        "1.2 s",
        "13 s",
    ]
