"""Routers included in an app with their prefixes noted, so that the paths of its routes can be
listed without FastAPI building its routes.

FastAPI builds the routes an app includes from a router (their parameters' and answers'
validators) once an app, when a request first needs them. Listing them through its
``iter_route_contexts`` builds every one: 0.15-0.2 s of an app's first request (and every test
makes an app), for routes the process may never serve (P222)."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI
from starlette.applications import Starlette
from starlette.routing import Mount, Route


def include_router(
    app: FastAPI, router: APIRouter, *, prefix: str = "", include_in_schema: bool = True
) -> None:
    """``app.include_router``, noted for ``route_paths``. ``router`` holds routes, not routers
    (``route_paths`` refuses them)."""
    app.include_router(router, prefix=prefix, include_in_schema=include_in_schema)
    _included(app).append((prefix, router))


def _included(app: Starlette) -> list[tuple[str, APIRouter]]:
    included: list[tuple[str, APIRouter]] | None = getattr(app.state, "included_routers", None)
    if included is None:
        included = app.state.included_routers = []
    return included


def route_paths(app: Starlette) -> list[tuple[str, bool]]:
    """The path of each of ``app``'s routes, in the order its router tries them, and whether it
    is a mount (the prefix of what it serves)."""
    included = iter(_included(app))
    paths: list[tuple[str, bool]] = []
    for route in app.routes:
        if isinstance(route, Mount):
            paths.append((route.path, True))
        elif isinstance(route, Route):
            paths.append((route.path, False))
        else:
            prefix, router = next(included, ("", None))
            if router is None:
                raise RuntimeError(f"{route!r} was not included by kit.routes.include_router")
            for inner in router.routes:
                if not isinstance(inner, Route):
                    raise RuntimeError(f"{inner!r} is not a route: include it in the app")
                paths.append((prefix + inner.path, False))
    return paths
