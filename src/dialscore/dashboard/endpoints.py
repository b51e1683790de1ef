"""The web app's routes under /app, its static files, and how its errors are answered."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

from dialscore.dashboard import (
    account,
    accuracy,
    auth,
    calls,
    enrichment_sources,
    jobs,
    keys,
    upload,
    users,
    webhooks,
)
from dialscore.dashboard.web import (
    PREFIX,
    FormExpired,
    PageNotFound,
    SignInRequired,
    UnstorableForm,
    render,
    sign_in_url,
)
from dialscore.kit.routes import include_router


async def _not_found(request: Request, exc: Exception) -> HTMLResponse:
    return render(request, "not_found.html", status_code=404)


async def _sign_in_required(request: Request, exc: Exception) -> RedirectResponse:
    assert isinstance(exc, SignInRequired)
    return RedirectResponse(sign_in_url(exc.next_path), status_code=303)


async def _form_expired(request: Request, exc: Exception) -> HTMLResponse:
    return render(request, "form_expired.html", status_code=403)


async def _unstorable_form(request: Request, exc: Exception) -> HTMLResponse:
    assert isinstance(exc, UnstorableForm)
    return render(request, "unstorable_form.html", message=exc.message, status_code=400)


def install(app: FastAPI) -> None:
    """Adds the web app to ``app``: pages, static files and error pages."""
    app.mount(
        f"{PREFIX}/static",
        StaticFiles(directory=Path(__file__).parent / "static"),
        name="app-static",
    )
    # The home page first and the unknown page last, each router in the app itself with the
    # prefix (see create_app).
    home_page = APIRouter()

    @home_page.get("")
    async def home() -> RedirectResponse:
        return RedirectResponse(f"{PREFIX}/jobs", status_code=303)

    unknown = APIRouter()

    @unknown.api_route("/{rest:path}", methods=["GET", "POST"])
    async def unknown_page(rest: str) -> None:
        raise PageNotFound()

    pages = (auth, jobs, upload, keys, users, account, webhooks, calls, accuracy)
    for router in (home_page, *(page.router for page in (*pages, enrichment_sources)), unknown):
        include_router(app, router, prefix=PREFIX, include_in_schema=False)

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    async def root() -> RedirectResponse:
        # Someone who opens the service's address in a browser wants the web app.
        return RedirectResponse(PREFIX, status_code=307)

    app.add_exception_handler(PageNotFound, _not_found)
    app.add_exception_handler(SignInRequired, _sign_in_required)
    app.add_exception_handler(FormExpired, _form_expired)
    app.add_exception_handler(UnstorableForm, _unstorable_form)
