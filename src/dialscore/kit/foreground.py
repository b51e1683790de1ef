"""Requests before background work in one process: the count of requests being served, the
short wait a job's steps take while there are any (P211), the turns its jobs take their steps
in (P219), and the middleware that counts a request that may write for all of its time
(P216)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager

from starlette.types import ASGIApp, Receive, Scope, Send

# The longest a step of background work waits for the requests being served.
MOST_SECONDS = 0.5
# How often a waiting step looks whether they are done.
STEP_SECONDS = 0.005

# A step of a job's work (a batch's read, a write): entered before it, left after it; what
# it gives is the seconds it waited for requests.
Step = Callable[[], AbstractAsyncContextManager[float]]


class Foreground:
    """The requests this process is serving that may write (P216) or hold a unit of work.
    The API counts them (``serving``) on its event loop; a job run by a worker of the same
    process, on another thread, gives way (``give_way``) before each step of a batch: both
    share one interpreter, and a step run meanwhile takes the CPU, and on SQLite the write
    lock, from the request. Its jobs take their steps in turn (``turn``, P219). A process
    that serves no requests (``dialscore worker``) never waits."""

    def __init__(
        self,
        *,
        most: float = MOST_SECONDS,
        step: float = STEP_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.most = most
        self.step = step
        self._clock = clock
        self._sleep = sleep
        self._serving = 0
        self._lock = threading.Lock()
        # The jobs' turns: used on the one event loop their runs share.
        self._turns = asyncio.Lock()

    @property
    def serving_count(self) -> int:
        return self._serving

    @contextmanager
    def serving(self) -> Iterator[None]:
        """Counts a request as served while the block runs."""
        with self._lock:
            self._serving += 1
        try:
            yield
        finally:
            with self._lock:
                self._serving -= 1

    async def give_way(self) -> float:
        """Waits while a request is being served, at most ``most`` seconds; the seconds
        waited (0 when none was)."""
        if not self._serving:
            return 0.0
        started = self._clock()
        waited = 0.0
        while self._serving and waited < self.most:
            await self._sleep(self.step)
            waited = self._clock() - started
        return waited

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[float]:
        """A step of a job of this process, taken in turn (P219): after the steps of its
        other jobs that came first, and once no request is being served (``give_way``)."""
        async with self._turns:
            yield await self.give_way()


@asynccontextmanager
async def any_time() -> AsyncIterator[float]:
    """``step`` of a process that serves no requests: its jobs' steps wait for nothing."""
    yield 0.0


# Methods that change nothing: their requests are not counted (P211).
READING_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class ServingWrites:
    """ASGI middleware counting a request that may write (any method but
    ``READING_METHODS``) as served from its first byte to its answer's last: reading and
    checking its body, and making its answer, take the CPU from it as much as its unit of
    work does (P216). Before the application's lifespan has made its state, nothing is
    counted."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = getattr(scope["app"].state, "dialscore", None)
        if state is None or scope["type"] != "http" or scope["method"] in READING_METHODS:
            await self.app(scope, receive, send)
            return
        foreground: Foreground = state.foreground
        with foreground.serving():
            await self.app(scope, receive, send)
