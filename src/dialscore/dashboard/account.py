"""The account page of the web app: plan, features, credits and their ledger, request-rate
tiers with what is left now, the webhook delivery rate, the version 1 callback secret, and the
client's own enrichment provider keys and order of sources (P204)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse

from dialscore.accounts import service as accounts
from dialscore.accounts import team
from dialscore.dashboard.web import AdminForm, FormUser, PageNotFound, SignedIn, render
from dialscore.dashboard.words import words
from dialscore.enrichment import client_settings
from dialscore.enrichment.service import PROVIDERS, source_names
from dialscore.kit.clock import utcnow
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


@dataclass(frozen=True)
class ProviderRow:
    """A provider of the Account page: its name, the client's own key (last four) if set,
    and whether the service asks it at all."""

    code: str
    name: str
    key: client_settings.ProviderKeyView | None
    asked: bool


def _provider_rows(
    keys: list[client_settings.ProviderKeyView], enabled: list[str]
) -> list[ProviderRow]:
    names, own = words().enrichment_names, {key.provider: key for key in keys}
    return [ProviderRow(code, names[code], own.get(code), code in enabled) for code in PROVIDERS]


async def _account_page(
    request: Request,
    state: StateDep,
    user: WebUser,
    page: int,
    *,
    status_code: int = 200,
    **context: Any,
) -> HTMLResponse:
    paging = PageRequest(page, LEDGER_PAGE_SIZE)
    client_id = user.principal.client_id
    async with state.db.read() as session:
        balance = await accounts.current_balance(session, client_id)
        entries, total = await team.ledger(session, client_id=client_id, page=paging)
        keys = await client_settings.provider_keys(session, client_id)
        order = await client_settings.enrichment_order(session, client_id)
    enabled = source_names(state.settings)
    effective = client_settings.effective_order(state.settings, order)
    context.setdefault("key_errors", {})
    context.setdefault("order_chosen", effective)
    return render(
        request,
        "account.html",
        user,
        status_code=status_code,
        providers=_provider_rows(keys, enabled),
        own_order=order is not None,
        effective_order=effective,
        order_sources=enabled,
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


# -- the client's own provider keys and order of sources (P204): admins only -------------------


def _provider_name(provider: str) -> str:
    """The provider's name in words; an unknown one is a page not found."""
    if provider not in PROVIDERS:
        raise PageNotFound()
    return words().enrichment_names[provider]


def _sentence(message: str) -> str:
    return message[:1].upper() + message[1:] + "."


@router.post("/account/provider-keys/{provider}", response_class=HTMLResponse)
async def set_provider_key(
    request: Request,
    state: StateDep,
    user: AdminForm,
    provider: str,
    api_key: Annotated[str, Form()] = "",
) -> HTMLResponse:
    name = _provider_name(provider)
    try:
        client_settings.check_api_key(api_key)
    except ValueError as exc:
        # The form is shown again with what is wrong, but never with the key typed.
        errors = {provider: _sentence(str(exc))}
        page = await _account_page(request, state, user, 1, status_code=400, key_errors=errors)
    else:
        async with state.db.write() as session:
            shown = await client_settings.set_provider_key(
                session,
                client_id=user.principal.client_id,
                provider=provider,
                api_key=api_key,
                server_secret=state.settings.resolved_secret_key,
                user_id=user.principal.user_id,
                now=utcnow(),
            )
            await session.commit()
        notice = words().enrichment_settings["key_saved"]
        notice = notice.format(provider=name, last_four=shown.last_four)
        page = await _account_page(request, state, user, 1, notice=notice)
    page.headers["Cache-Control"] = "no-store"
    return page


@router.post("/account/provider-keys/{provider}/remove", response_class=HTMLResponse)
async def remove_provider_key(
    request: Request, state: StateDep, user: AdminForm, provider: str
) -> HTMLResponse:
    name = _provider_name(provider)
    async with state.db.write() as session:
        removed = await client_settings.clear_provider_key(
            session, client_id=user.principal.client_id, provider=provider
        )
        await session.commit()
    notice = words().enrichment_settings["key_removed" if removed else "key_none"]
    return await _account_page(request, state, user, 1, notice=notice.format(provider=name))


def _order_problem(chosen: list[str], enabled: list[str]) -> str | None:
    """What is wrong with the places chosen, in words; None when each enabled source has a
    place of its own."""
    said = words()
    if len(chosen) != len(enabled) or any(name not in enabled for name in chosen):
        return said.enrichment_settings["order_missing"]
    for name in enabled:
        if chosen.count(name) > 1:
            source = said.enrichment_names[name]
            return said.enrichment_settings["order_twice"].format(source=source)
    return None


@router.post("/account/enrichment-order", response_class=HTMLResponse)
async def set_enrichment_order(request: Request, state: StateDep, user: AdminForm) -> HTMLResponse:
    form = await request.form()
    enabled = source_names(state.settings)
    chosen = [str(form.get(f"place_{n}", "")) for n in range(1, len(enabled) + 1)]
    problem = _order_problem(chosen, enabled)
    if problem is not None:
        return await _account_page(
            request, state, user, 1, status_code=400, order_error=problem, order_chosen=chosen
        )
    async with state.db.write() as session:
        await client_settings.set_enrichment_order(
            session, client_id=user.principal.client_id, order=chosen, settings=state.settings
        )
        await session.commit()
    notice = words().enrichment_settings["order_saved"]
    return await _account_page(request, state, user, 1, notice=notice)


@router.post("/account/enrichment-order/reset", response_class=HTMLResponse)
async def reset_enrichment_order(
    request: Request, state: StateDep, user: AdminForm
) -> HTMLResponse:
    async with state.db.write() as session:
        await client_settings.set_enrichment_order(
            session, client_id=user.principal.client_id, order=None, settings=state.settings
        )
        await session.commit()
    notice = words().enrichment_settings["order_reset"]
    return await _account_page(request, state, user, 1, notice=notice)
