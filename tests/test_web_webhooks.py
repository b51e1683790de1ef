"""Webhooks in a real browser: one created on the page receives a signed test event at a real
receiver on 127.0.0.1, shows the attempt in its delivery log, is delivered again on request,
and is deleted after a confirmation."""

from __future__ import annotations

import base64
import hashlib
import hmac
import threading
import time

from playwright.sync_api import Page, expect

from tests.browser import Team, sign_in
from tests.fakes import Answer, Received, Receiver


def test_a_webhook_made_in_the_browser_gets_a_signed_test_event(page: Page, team: Team) -> None:
    arrivals = [threading.Event(), threading.Event()]

    def answer(request: Received, index: int) -> Answer:
        arrivals[min(index, 1)].set()
        return Answer(200)

    with Receiver(answer) as receiver:
        sign_in(page, team.admin_email)
        page.get_by_role("navigation", name="Main").get_by_role("link", name="Webhooks").click()
        page.get_by_label("Name").fill("Browser hook")
        page.get_by_label("URL").fill(receiver.url)
        expect(page.get_by_role("checkbox", checked=True)).to_have_count(2)
        page.get_by_role("button", name="Create webhook").click()

        secret_field = page.get_by_role("textbox", name="Signing secret")
        expect(secret_field).to_have_attribute("readonly", "")
        secret = secret_field.input_value()
        assert secret.startswith("whsec_")
        expect(page.get_by_role("button", name="Copy")).to_be_visible()

        page.get_by_role("link", name="Browser hook").click()
        expect(page.get_by_role("heading", name="Webhook “Browser hook”")).to_be_visible()
        page.get_by_role("button", name="Send test event").click()
        expect(page.get_by_role("status")).to_contain_text("A test event is on its way")
        assert arrivals[0].wait(15), "the receiver got nothing"

        received = receiver.received[0]
        assert received.json()["eventType"] == "webhook.test"
        expected = base64.b64encode(
            hmac.new(secret.encode(), received.body, hashlib.sha256).digest()
        ).decode()
        assert received.headers["x-service-signature"] == expected

        # The attempt is recorded once the receiver has answered: reload until it shows.
        deadline = time.monotonic() + 10
        attempt = page.get_by_role("cell", name="200", exact=True)
        page.reload()
        while attempt.count() == 0 and time.monotonic() < deadline:
            page.reload()
        expect(attempt).to_be_visible()
        expect(page.get_by_text("delivered", exact=True)).to_be_visible()

        page.get_by_role("button", name="Redeliver").click()
        expect(page.get_by_role("status")).to_contain_text("being sent again")
        assert arrivals[1].wait(15), "the redelivery did not arrive"
        again = receiver.received[1]
        assert again.body == received.body  # the same envelope, id and all
        assert again.headers["x-service-signature"] == expected

    page.get_by_role("link", name="Delete").click()
    expect(page.get_by_role("heading", name="Delete webhook “Browser hook”?")).to_be_visible()
    page.get_by_role("button", name="Delete webhook").click()
    expect(page.get_by_role("status")).to_have_text("The webhook was deleted.")
    expect(page.get_by_role("link", name="Browser hook")).to_have_count(0)
    expect(page.get_by_text("No webhooks yet.")).to_be_visible()
