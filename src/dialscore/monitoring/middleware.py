"""Counts every HTTP request by method, route template and status, and times it: answers given
before routing (the rate limiter's 429, a 413) included."""

from __future__ import annotations

import re
import time

from starlette.applications import Starlette
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dialscore.kit import metrics
from dialscore.kit.routes import route_paths

# The route of a path no route matches: one label value, however many such paths come.
UNMATCHED = "unmatched"


class RouteTemplates:
    """The route template (``/api/public/v2/jobs/{jobId}``) a path is answered by, as the
    application's routes say, so that label values stay as few as the routes."""

    def __init__(self, app: Starlette) -> None:
        # In the order the router tries them: a mount (a prefix) or a route (a pattern).
        self._routes: list[tuple[str | re.Pattern[str], str]] = []
        for path, mount in route_paths(app):
            if mount:
                self._routes.append((path.rstrip("/"), path + "/{path}"))
            else:
                pattern, template, _ = compile_path(path)
                self._routes.append((pattern, template))

    def template(self, path: str) -> str:
        for matcher, template in self._routes:
            if isinstance(matcher, str):
                if path == matcher or path.startswith(matcher + "/"):
                    return template
            elif matcher.match(path):
                return template
        return UNMATCHED


class RequestMetrics:
    """Outermost middleware: what it measures includes every other middleware's work."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._templates: RouteTemplates | None = None

    def _route(self, scope: Scope) -> str:
        if self._templates is None:
            # Made on the first request: every route has been added by then.
            self._templates = RouteTemplates(scope["app"])
        return self._templates.template(scope["path"])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            seconds = time.perf_counter() - started
            metrics.observe_request(scope["method"], self._route(scope), status, seconds)
