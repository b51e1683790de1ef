"""The background loops of this process that work can ask to look now, by name."""

from __future__ import annotations

from collections.abc import Callable

# The loops a worker process runs; the API and the tasks wake them after writing their work.
RELAY = "relay"
DISPATCHER = "dispatcher"


class Wakers:
    """One per process: the loops running in it register here, and whoever wrote work for
    them (an endpoint, a task on a worker thread) wakes them by name. Waking a loop that does
    not run in this process asks ``remote`` (the worker processes, through Redis) when there
    is one; else it does nothing, and the loop finds the work at its next poll."""

    def __init__(self, remote: Callable[[str], None] | None = None) -> None:
        self._wakers: dict[str, Callable[[], None]] = {}
        self._remote = remote

    def register(self, name: str, wake: Callable[[], None]) -> None:
        self._wakers[name] = wake

    def unregister(self, name: str) -> None:
        self._wakers.pop(name, None)

    def wake(self, name: str) -> None:
        """Calls the loop's waker; safe from any thread (wakers themselves must be)."""
        waker = self._wakers.get(name)
        if waker is not None:
            waker()
        elif self._remote is not None:
            self._remote(name)

    def __contains__(self, name: object) -> bool:
        return name in self._wakers
