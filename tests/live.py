"""The service running for real on 127.0.0.1, for tests that talk to it as a client or a
browser would."""

from __future__ import annotations

import asyncio
import socket
import threading
from pathlib import Path
from typing import Any

import uvicorn

from dialscore.app import create_app
from dialscore.config import Settings
from dialscore.migrations import upgrade
from tests.conftest import SECRET
from tests.processes import free_port


class LoopbackOnlyLoop(asyncio.SelectorEventLoop):
    """An event loop that resolves only addresses and ``localhost``: generated webhook and
    callback URLs name any host, and a test sends nothing beyond this machine, DNS included."""

    async def getaddrinfo(  # type: ignore[override]
        self, host: Any, port: Any, *args: Any, **kwargs: Any
    ) -> Any:
        text = host.decode() if isinstance(host, bytes) else str(host or "")
        if text != "localhost":
            try:
                socket.inet_pton(socket.AF_INET6 if ":" in text else socket.AF_INET, text)
            except OSError:
                raise socket.gaierror(socket.EAI_NONAME, "not resolved in tests") from None
        return await super().getaddrinfo(host, port, *args, **kwargs)


class LiveService:
    """The service on 127.0.0.1 in a thread of this process, on the embedded database.
    Without its worker (``run_worker=False``) no job runs and no webhook is sent anywhere."""

    def __init__(self, data_dir: Path, *, run_worker: bool, **settings: Any) -> None:
        self.port = free_port()
        url = f"sqlite:///{data_dir / 'dialscore.db'}"
        upgrade(url)
        self.settings = Settings(
            database_url=url,
            data_dir=data_dir,
            secret_key=SECRET,
            redis_url=None,
            _env_file=None,  # type: ignore[call-arg]
            **settings,
        )
        app = create_app(self.settings, run_worker=run_worker)
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _serve(self) -> None:
        loop = LoopbackOnlyLoop()
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self.server.serve())
        finally:
            loop.close()

    def __enter__(self) -> LiveService:
        self.thread.start()
        for _ in range(300):
            if self.server.started or not self.thread.is_alive():
                break
            threading.Event().wait(0.05)
        assert self.server.started, "the service did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
