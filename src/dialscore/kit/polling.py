"""A background loop that runs a step, then waits for its poll interval or a wake."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import structlog

log = structlog.get_logger(__name__)


class PollingLoop:
    """Runs ``step`` on the event loop it is started on, again and again: after each step it
    waits ``poll_seconds``, or less when ``wake()`` is called. A step that raises is logged
    and the loop goes on; a run of failures (a database or Redis away for a while) is logged
    once, with the first one's traceback, and its end once. ``stop()`` cancels the step
    under way. With ``wait_first``, the first step too waits for the poll interval or a
    wake."""

    def __init__(
        self,
        step: Callable[[], Awaitable[object]],
        *,
        poll_seconds: float,
        name: str,
        wait_first: bool = False,
    ) -> None:
        self.step = step
        self.poll_seconds = poll_seconds
        self.name = name
        self.wait_first = wait_first
        self._loop: asyncio.AbstractEventLoop | None = None
        self._woken = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def wake(self) -> None:
        """Asks for the next step now rather than at the next poll; safe from any thread, and
        a no-op before ``start()`` and after ``stop()``."""
        loop = self._loop
        if loop is None:
            return
        # The loop may close between the check and the call (a wake from a worker thread
        # racing the shutdown): nothing is left to wake then.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._woken.set)

    def start(self) -> None:
        """Starts the loop as a task of the running event loop."""
        self._stopping = False
        # Made here, not in __init__: an event belongs to the first loop that waits on it.
        self._woken = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._task = self._loop.create_task(self._run(), name=self.name)

    async def stop(self) -> None:
        task, self._task = self._task, None
        self._loop = None
        if task is None:
            return
        self._stopping = True
        while not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=1.0)
        with contextlib.suppress(asyncio.CancelledError):
            task.result()

    async def _run(self) -> None:
        failures = 0
        if self.wait_first:
            await self._wait()
        while not self._stopping:
            try:
                await self.step()
            except asyncio.CancelledError:
                raise
            except Exception:
                if not failures:
                    log.exception(f"{self.name} failed; retrying")
                failures += 1
            else:
                if failures:
                    log.warning(f"{self.name} works again", failed_steps=failures)
                failures = 0
            await self._wait()

    async def _wait(self) -> None:
        """Until the poll interval has passed or a wake came."""
        # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a cancellation
        # that arrives as the event fires, and stop() would wait forever.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.poll_seconds):
                await self._woken.wait()
        self._woken.clear()
