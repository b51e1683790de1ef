"""The account page of the web app: plan, features, credits and their ledger, request-rate
tiers with what is left now, the webhook delivery rate, and the version 1 callback secret."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from dialscore.accounts import service as accounts
from dialscore.accounts import team
from dialscore.dashboard.web import FormUser, SignedIn, render
from dialscore.kit.deps import StateDep
from dialscore.kit.envelope import number
from dialscore.kit.pagination import MAX_PAGE, PageRequest
from dialscore.models import CreditLedgerEntry
from dialscore.ratelimit.schemas import present_quota
from dialscore.ratelimit.service import (
    LimiterUnavailable,
    RequestLimiter,
    plan_limits,
    unconsumed,
)
from dialscore.signin.schemas import WebUser
from dialscore.v1 import service as v1

router = APIRouter()

LEDGER_PAGE_SIZE = 25


@dataclass(frozen=True)
class LedgerRow:
    created_at: datetime
    change: str
    negative: bool
    balance_after: str
    reason: str
    job_id: str | None


def credits_text(value: Decimal) -> str:
    return f"{number(value):,}"


def _ledger_row(entry: CreditLedgerEntry) -> LedgerRow:
    return LedgerRow(
        entry.created_at,
        f"{number(entry.delta):+,}",
        entry.delta < 0,
        credits_text(entry.balance_after),
        entry.reason,
        entry.job_id,
    )


def _limiter(request: Request) -> RequestLimiter | None:
    """The process's request limiter; None when rate limiting is switched off."""
    found = request.app.state.dialscore.extras.get("limiter")
    return found if isinstance(found, RequestLimiter) else None


async def _quota(request: Request, user: WebUser) -> dict[str, dict[str, int]] | None:
    """The figures GET /api/public/quota answers for this client now (nothing counted);
    None when the limiter cannot say (Redis unreachable and fail-closed)."""
    limits = plan_limits(user.principal.plan)
    limiter = _limiter(request)
    if limiter is None:
        return present_quota(unconsumed(limits))
    try:
        # The key the limiter counts an authenticated client's requests under.
        decision = await limiter.check(f"client:{user.principal.client_id}", limits, consume=False)
    except LimiterUnavailable:
        return None
    return present_quota(decision)


async def _account_page(
    request: Request, state: StateDep, user: WebUser, page: int, **context: Any
) -> HTMLResponse:
    paging = PageRequest(page, LEDGER_PAGE_SIZE)
    async with state.db.read() as session:
        balance = await accounts.current_balance(session, user.principal.client_id)
        entries, total = await team.ledger(session, client_id=user.principal.client_id, page=paging)
    return render(
        request,
        "account.html",
        user,
        plan=user.principal.plan,
        features=user.principal.plan.features(),
        balance=credits_text(balance),
        entries=[_ledger_row(entry) for entry in entries],
        paging=paging.describe(total),
        quota=await _quota(request, user),
        **context,
    )


@router.get("/account", response_class=HTMLResponse)
async def account(
    request: Request,
    state: StateDep,
    user: SignedIn,
    page: str = "1",
) -> HTMLResponse:
    # A page number typed wrong in the address shows the first page rather than an error.
    number = int(page) if page.isdigit() else 1
    return await _account_page(request, state, user, min(max(number, 1), MAX_PAGE))


@router.post("/account/callback-secret", response_class=HTMLResponse)
async def reveal_callback_secret(request: Request, state: StateDep, user: FormUser) -> HTMLResponse:
    """The same secret ``dialscore admin show-callback-secret`` prints (made on first use)."""
    async with state.db.write() as session:
        secret = await v1.callback_secret(
            session,
            user_id=user.principal.user_id,
            server_secret=state.settings.resolved_secret_key,
        )
        await session.commit()
    page = await _account_page(request, state, user, 1, callback_secret=secret)
    page.headers["Cache-Control"] = "no-store"
    return page
