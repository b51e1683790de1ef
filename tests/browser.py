"""What the browser tests of the web app share: the live service with a signed-up team, and
signing in. The browser is Debian's Chromium, driven by Playwright."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from playwright.sync_api import Page, expect

from dialscore.accounts import service as accounts
from dialscore.kit.db import Database
from dialscore.signin import service as signin
from tests.conftest import SECRET
from tests.live import LiveService
from tests.support import ROOMY_TIERS, Tenant, make_tenant

CHROMIUM = "/usr/bin/chromium"
PASSWORD = "correct horse battery"


@dataclass(frozen=True)
class Team:
    """A client on the business plan: an admin (with an API key) and a member, both with
    ``PASSWORD``."""

    live: LiveService
    admin: Tenant
    admin_email: str
    member_email: str

    @property
    def base_url(self) -> str:
        return self.live.base_url


async def _sign_up(url: str, name: str) -> tuple[Tenant, str, str]:
    db = Database(url)
    try:
        admin = await make_tenant(db, SECRET, plan="business", credits=100_000, name=name)
        async with db.unit_of_work() as session:
            await accounts.set_overrides(session, client_id=admin.client_id, values=ROOMY_TIERS)
            admin_user = await signin.set_password(
                session, user_id=admin.user_id, password=PASSWORD
            )
            member = await accounts.create_user(
                session,
                client_id=admin.client_id,
                email=f"member@{name.lower()}.example",
                role="member",
            )
            await signin.set_password(session, user_id=member.id, password=PASSWORD)
            return admin, admin_user.email, member.email
    finally:
        await db.dispose()


def start_team(data_dir: Path, name: str = "Acme") -> tuple[LiveService, Team]:
    """The service with its worker, allowed to deliver webhooks to 127.0.0.1, and a team."""
    live = LiveService(
        data_dir,
        run_worker=True,
        webhook_allow_private=True,
        relay_poll_seconds=0.05,
        worker_poll_ms=50,
    )
    admin, admin_email, member_email = asyncio.run(
        _sign_up(live.settings.resolved_database_url, name)
    )
    return live, Team(live, admin, admin_email, member_email)


def sign_in(page: Page, email: str, password: str = PASSWORD) -> None:
    page.goto("/app/sign-in")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
