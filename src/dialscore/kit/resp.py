"""A lean, pipelined connection to Redis for calls on the request path.

Every call writes its command at once and waits for its reply; Redis answers in order, so
concurrent calls share one connection without waiting for each other's round trips. It does
one thing (send a command, return its reply) for the rate limiter, which asks Redis on every
request and cannot afford a general client's per-call overhead.

Failures raise ``ConnectionError`` (an ``OSError``) or ``TimeoutError``; the next call after a
lost connection connects again."""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from typing import Any
from urllib.parse import unquote, urlsplit

import hiredis


class ReplyError(Exception):
    """An error reply from Redis (``-ERR …``, ``-NOSCRIPT …``)."""


def encode(args: tuple[str | bytes | int, ...]) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg if isinstance(arg, bytes) else str(arg).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)


class _Protocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.reader = hiredis.Reader(replyError=ReplyError)
        self.waiting: deque[asyncio.Future[Any]] = deque()
        self.transport: Any = None  # asyncio's or uvloop's transport
        self.lost: Exception | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        while True:
            reply = self.reader.gets()
            if reply is False:
                return
            future = self.waiting.popleft()
            if future.done():  # its caller gave up waiting
                continue
            if isinstance(reply, ReplyError):
                future.set_exception(reply)
            else:
                future.set_result(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = ConnectionError(f"the connection to Redis was lost: {exc or 'closed'}")
        while self.waiting:
            future = self.waiting.popleft()
            if not future.done():
                future.set_exception(self.lost)


class RedisLink:
    def __init__(self, url: str, *, timeout: float) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("redis", "rediss", "unix"):
            raise ValueError(f"unsupported Redis URL scheme {parts.scheme!r}")
        self._scheme = parts.scheme
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or 6379
        self._path = parts.path
        self._username = unquote(parts.username) if parts.username else None
        self._password = unquote(parts.password) if parts.password else None
        database = parts.path.strip("/") if parts.scheme != "unix" else ""
        query = dict(p.split("=", 1) for p in parts.query.split("&") if "=" in p)
        self._database = int(database or query.get("db") or 0)
        self._timeout = timeout
        self._protocol: _Protocol | None = None
        self._connecting: asyncio.Lock | None = None

    async def call(self, *args: str | bytes | int) -> Any:
        """Sends one command and returns its reply (``ReplyError`` is raised for errors)."""
        protocol = self._protocol
        if protocol is None or protocol.lost is not None:
            protocol = await self._connect()
        return await self._send(protocol, args)

    async def _send(self, protocol: _Protocol, args: tuple[str | bytes | int, ...]) -> Any:
        assert protocol.transport is not None
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        protocol.waiting.append(future)
        protocol.transport.write(encode(args))
        try:
            async with asyncio.timeout(self._timeout):
                return await future
        except TimeoutError:
            # A reply that never came leaves the connection in doubt: the next call starts a
            # new one (marked lost now, since connection_lost only runs on a later loop turn).
            protocol.lost = ConnectionError("a call to Redis timed out on this connection")
            protocol.transport.close()
            raise TimeoutError(f"Redis did not answer within {self._timeout} s") from None

    async def _connect(self) -> _Protocol:
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._protocol is not None and self._protocol.lost is None:
                return self._protocol
            loop = asyncio.get_running_loop()
            try:
                async with asyncio.timeout(self._timeout):
                    if self._scheme == "unix":
                        _, protocol = await loop.create_unix_connection(_Protocol, self._path)
                    else:
                        context = ssl.create_default_context() if self._scheme == "rediss" else None
                        _, protocol = await loop.create_connection(
                            _Protocol, self._host, self._port, ssl=context
                        )
            except TimeoutError:
                raise TimeoutError(f"cannot connect to Redis within {self._timeout} s") from None
            try:
                if self._password is not None:
                    auth = (self._username, self._password) if self._username else (self._password,)
                    await self._send(protocol, ("AUTH", *auth))
                if self._database:
                    await self._send(protocol, ("SELECT", self._database))
            except BaseException:
                if protocol.transport is not None:
                    protocol.transport.close()
                raise
            # Published only once ready, so no command of a caller goes before AUTH.
            self._protocol = protocol
            return protocol

    async def close(self) -> None:
        if self._protocol is not None and self._protocol.transport is not None:
            self._protocol.transport.close()
        self._protocol = None
