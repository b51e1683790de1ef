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
    router = APIRouter(include_in_schema=False)

    @router.get("")
    async def home() -> RedirectResponse:
        return RedirectResponse(f"{PREFIX}/jobs", status_code=303)

    pages = (auth, jobs, upload, keys, users, account, webhooks, calls, accuracy)
    for page in (*pages, enrichment_sources):
        router.include_router(page.router)

    @router.api_route("/{rest:path}", methods=["GET", "POST"])
    async def unknown_page(rest: str) -> None:
        raise PageNotFound()

    # Its prefix given here rather than to the router, as for the API's (see create_app).
    app.include_router(router, prefix=PREFIX)

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    async def root() -> RedirectResponse:
        # Someone who opens the service's address in a browser wants the web app.
        return RedirectResponse(PREFIX, status_code=307)

    app.add_exception_handler(PageNotFound, _not_found)
    app.add_exception_handler(SignInRequired, _sign_in_required)
    app.add_exception_handler(FormExpired, _form_expired)
    app.add_exception_handler(UnstorableForm, _unstorable_form)
