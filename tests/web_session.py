"""Signing in to a running service's web app over HTTP, as a browser without JavaScript does:
read the sign-in form, send it back with its hidden fields, follow the answer."""

from __future__ import annotations

from html.parser import HTMLParser

import httpx


class _FormFields(HTMLParser):
    """The hidden fields of the page's first form that posts to ``action``."""

    def __init__(self, action: str) -> None:
        super().__init__()
        self.action = action
        self.fields: dict[str, str] = {}
        self.found = False
        self._inside = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "form" and not self.found and values.get("action") == self.action:
            self.found = self._inside = True
        elif tag == "input" and self._inside and values.get("type") == "hidden":
            self.fields[values.get("name", "")] = values.get("value", "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._inside = False


def hidden_fields(page: str, action: str) -> dict[str, str]:
    parser = _FormFields(action)
    parser.feed(page)
    assert parser.found, f"no form posting to {action} on the page:\n{page}"
    return parser.fields


def sign_in(client: httpx.Client, email: str, password: str) -> httpx.Response:
    """Signs ``client`` in through ``/app/sign-in``; the page the answer leads to."""
    form = client.get("/app/sign-in")
    assert form.status_code == 200, form.text
    fields = {**hidden_fields(form.text, "/app/sign-in"), "email": email, "password": password}
    answer = client.post("/app/sign-in", data=fields)
    assert answer.status_code == 303, answer.text
    page = client.get(answer.headers["location"])
    assert page.status_code == 200, page.text
    return page
