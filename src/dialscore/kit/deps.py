"""Per-application state and the request-scoped dependencies built on it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.config import Settings
from dialscore.kit.db import Database


@dataclass
class AppState:
    settings: Settings
    db: Database
    extras: dict[str, Any] = field(default_factory=dict)
    # Background loops running in this process ("relay", "dispatcher"), by name.
    wakers: dict[str, Callable[[], None]] = field(default_factory=dict)

    def wake(self, name: str) -> None:
        """Asks an in-process background loop to look now (no-op when it runs elsewhere)."""
        waker = self.wakers.get(name)
        if waker is not None:
            waker()


def get_state(request: Request) -> AppState:
    state: AppState = request.app.state.dialscore
    return state


async def write_session(request: Request) -> AsyncIterator[AsyncSession]:
    """A session for a unit of work; the endpoint commits it, anything else rolls back."""
    async with get_state(request).db.write() as session:
        yield session


async def read_session(request: Request) -> AsyncIterator[AsyncSession]:
    async with get_state(request).db.read() as session:
        yield session


StateDep = Annotated[AppState, Depends(get_state)]
WriteSession = Annotated[AsyncSession, Depends(write_session)]
ReadSession = Annotated[AsyncSession, Depends(read_session)]
