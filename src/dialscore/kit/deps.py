"""Per-application state and the request-scoped dependencies built on it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.config import Settings
from dialscore.kit.db import Database
from dialscore.kit.foreground import Foreground
from dialscore.kit.wakers import Wakers


@dataclass
class AppState:
    settings: Settings
    db: Database
    # The process's background loops, which endpoints wake after writing work for them.
    wakers: Wakers = field(default_factory=Wakers)
    # The requests being served with a unit of work, which a worker of this process gives
    # way to (P211).
    foreground: Foreground = field(default_factory=Foreground)
    extras: dict[str, Any] = field(default_factory=dict)


def get_state(request: Request) -> AppState:
    state: AppState = request.app.state.dialscore
    return state


async def write_session(request: Request) -> AsyncIterator[AsyncSession]:
    """A session for a unit of work; the endpoint commits it, anything else rolls back. The
    request counts as served meanwhile (P211)."""
    state = get_state(request)
    with state.foreground.serving():
        async with state.db.write() as session:
            yield session


async def read_session(request: Request) -> AsyncIterator[AsyncSession]:
    async with get_state(request).db.read() as session:
        yield session


StateDep = Annotated[AppState, Depends(get_state)]
WriteSession = Annotated[AsyncSession, Depends(write_session)]
ReadSession = Annotated[AsyncSession, Depends(read_session)]
