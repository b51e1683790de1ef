"""The pipelined Redis link (kit/resp.py): on the real Redis, and against small fake servers on
127.0.0.1 that stay silent, hang up mid-way or answer errors, on asyncio and on uvloop."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit, urlunsplit

import hiredis
import pytest
import redis
import uvloop

from dialscore.kit.resp import RedisLink, ReplyError, encode
from tests.processes import REDIS_URL

WAIT = 10.0  # bounds every test body, so a bug that hangs fails instead of stalling the suite
SHORT = 0.2  # the link timeout where the timeout itself is under test
UNREACHABLE_REDIS = "redis://127.0.0.1:1/0"


def bounded() -> asyncio.Timeout:
    return asyncio.timeout(WAIT)


def real_redis_url(path: str = "/0", query: str = "") -> str:
    """REDIS_URL (the real Redis) with another database path and query."""
    return urlunsplit(urlsplit(REDIS_URL)._replace(path=path, query=query))


@contextlib.asynccontextmanager
async def open_link(url: str, timeout: float = 5.0) -> AsyncIterator[RedisLink]:
    link = RedisLink(url, timeout=timeout)
    try:
        yield link
    finally:
        await link.close()


@contextlib.contextmanager
def redis_py(url: str) -> Iterator[redis.Redis]:
    """A separate, independent client (redis-py) to check what the link wrote."""
    client = redis.Redis.from_url(url, socket_timeout=WAIT)
    try:
        yield client
    finally:
        client.close()


def unique_key() -> str:
    return f"dialscore-test-resp-{uuid.uuid4().hex}"


# -- a fake Redis -------------------------------------------------------------------------------


def bulk(data: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(data), data)


@dataclass(frozen=True)
class HangUp:
    """Writes ``first`` (perhaps half a reply), then closes the connection."""

    first: bytes = b""


# What the fake answers to one command: the bytes to write, a hang-up, or None for silence.
Answer = bytes | HangUp | None
Answering = Callable[[int, list[bytes]], Answer]


def standard_answer(command: list[bytes]) -> bytes:
    name = command[0].upper()
    if name in (b"AUTH", b"SELECT"):
        return b"+OK\r\n"
    if name == b"PING":
        return b"+PONG\r\n"
    if name == b"ECHO":
        return bulk(command[1])
    return b"-ERR unknown command '%s'\r\n" % command[0]


def standard(connection: int, command: list[bytes]) -> Answer:
    return standard_answer(command)


@dataclass
class FakeConnection:
    index: int
    writer: asyncio.StreamWriter
    received: bytearray = field(default_factory=bytearray)
    commands: list[list[bytes]] = field(default_factory=list)
    client_closed: bool = False  # the client closed its end (we read EOF)
    finished: bool = False  # this connection is over, whoever closed it


class FakeRedis:
    """A minimal RESP server: parses each command (with hiredis), records it per connection and
    answers as ``answer(connection index, command)`` says."""

    def __init__(
        self,
        answer: Answering = standard,
        *,
        sock: socket.socket | None = None,
        unix_path: Path | None = None,
    ) -> None:
        self.answer = answer
        self.connections: list[FakeConnection] = []
        self._sock = sock
        self._unix_path = unix_path
        self._server: asyncio.Server | None = None
        self._handlers: list[asyncio.Task[None]] = []
        self._changed = asyncio.Event()
        self.port = 0

    async def __aenter__(self) -> FakeRedis:
        if self._unix_path is not None:
            self._server = await asyncio.start_unix_server(self._serve, path=str(self._unix_path))
        elif self._sock is not None:
            self._server = await asyncio.start_server(self._serve, sock=self._sock)
        else:
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
            self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.close()
        for connection in self.connections:
            connection.writer.close()
        async with asyncio.timeout(WAIT):
            await asyncio.gather(*self._handlers, return_exceptions=True)
            await self._server.wait_closed()

    def url(self, path: str = "/0", userinfo: str = "", query: str = "") -> str:
        return urlunsplit(("redis", f"{userinfo}127.0.0.1:{self.port}", path, query, ""))

    def commands(self, connection: int = 0) -> list[list[bytes]]:
        return self.connections[connection].commands

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        async with asyncio.timeout(WAIT):
            while not predicate():
                self._changed.clear()
                await self._changed.wait()

    def _notify(self) -> None:
        self._changed.set()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.append(task)
        connection = FakeConnection(len(self.connections), writer)
        self.connections.append(connection)
        self._notify()
        parser = hiredis.Reader()
        try:
            while data := await reader.read(65536):
                connection.received += data
                self._notify()
                parser.feed(data)
                while (command := parser.gets()) is not False:
                    connection.commands.append(command)
                    self._notify()
                    answer = self.answer(connection.index, command)
                    if isinstance(answer, HangUp):
                        writer.write(answer.first)
                        return
                    if answer is not None:
                        writer.write(answer)
            connection.client_closed = True
        except (ConnectionError, hiredis.ProtocolError):
            connection.client_closed = True
        finally:
            writer.close()
            connection.finished = True
            self._notify()


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    """A short directory for a unix socket (tmp_path can exceed the 108-byte path limit)."""
    path = Path(tempfile.mkdtemp(prefix="resp-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# -- encoding -----------------------------------------------------------------------------------


def test_encode_writes_resp_arrays_of_bulk_strings() -> None:
    assert encode(("PING",)) == b"*1\r\n$4\r\nPING\r\n"
    assert encode(("SET", "key", b"value")) == b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n"
    # Integers go as their decimal text; bulk lengths count bytes, not characters.
    assert encode(("INCRBY", "k", 42)) == b"*3\r\n$6\r\nINCRBY\r\n$1\r\nk\r\n$2\r\n42\r\n"
    assert encode(("X", -7, 0)) == b"*3\r\n$1\r\nX\r\n$2\r\n-7\r\n$1\r\n0\r\n"
    assert encode(("ECHO", "é€")) == b"*2\r\n$4\r\nECHO\r\n$5\r\n\xc3\xa9\xe2\x82\xac\r\n"
    # Bulk strings are binary-safe: CR LF and NUL inside a value do not end it.
    assert encode(("ECHO", b"a\r\nb\x00")) == b"*2\r\n$4\r\nECHO\r\n$5\r\na\r\nb\x00\r\n"
    assert encode(("ECHO", "")) == b"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n"
    assert encode(()) == b"*0\r\n"


def test_encode_parses_back_to_the_same_arguments() -> None:
    args: tuple[str | bytes | int, ...] = ("SET", bytes(range(256)), "ünïcode", 12345678901234)
    parser = hiredis.Reader()
    parser.feed(encode(args))
    assert parser.gets() == [b"SET", bytes(range(256)), "ünïcode".encode(), b"12345678901234"]
    assert parser.gets() is False  # nothing left over


# -- the real Redis -----------------------------------------------------------------------------


async def test_ping_and_set_get_round_trip_with_bytes_and_ints() -> None:
    key = unique_key()
    async with bounded(), open_link(REDIS_URL) as link:
        try:
            assert await link.call("PING") == b"PONG"
            value = bytes(range(256)) + b"\r\n$3\r\n"  # binary, with RESP framing inside
            assert await link.call("SET", key, value) == b"OK"
            assert await link.call("GET", key) == value
            assert await link.call("SET", key, 41) == b"OK"
            assert await link.call("GET", key) == b"41"
            assert await link.call("INCRBY", key, 2) == 43  # integer replies come as int
            assert await link.call("GET", f"{key}-missing") is None
            assert await link.call("RPUSH", f"{key}-list", "a", b"b", 3) == 3
            assert await link.call("LRANGE", f"{key}-list", 0, -1) == [b"a", b"b", b"3"]
        finally:
            await link.call("DEL", key, f"{key}-list")
        assert await link.call("EXISTS", key, f"{key}-list") == 0


def echo_payload(i: int) -> bytes:
    # Lengths vary, and some replies are large enough to arrive in many pieces.
    size = 200_000 if i % 100 == 7 else i % 13
    return f"echo-{i}-".encode() + b"x" * size


async def test_concurrent_calls_pair_with_their_own_replies_on_one_connection() -> None:
    async with bounded(), open_link(REDIS_URL) as link:
        # A fresh link: every call races to connect, yet one connection must carry them all.
        calls = [
            link.call("CLIENT", "ID") if i % 50 == 0 else link.call("ECHO", echo_payload(i))
            for i in range(500)
        ]
        replies = await asyncio.gather(*calls)
        ids = {reply for i, reply in enumerate(replies) if i % 50 == 0}
        assert len(ids) == 1, ids
        for i, reply in enumerate(replies):
            if i % 50 != 0:
                assert reply == echo_payload(i), i

        name = f"resp-test-{uuid.uuid4().hex[:12]}"
        assert await link.call("CLIENT", "SETNAME", name) == b"OK"
        assert await link.call("CLIENT", "ID") in ids
        with redis_py(REDIS_URL) as other:
            named = [c for c in other.client_list() if c["name"] == name]
        assert len(named) == 1, named
        assert int(named[0]["id"]) in ids


async def test_error_replies_raise_reply_error_and_the_link_keeps_its_pairing() -> None:
    key = unique_key()
    async with bounded(), open_link(REDIS_URL) as link:
        try:
            with pytest.raises(ReplyError, match="unknown command") as caught:
                await link.call("NOSUCHCOMMAND", "arg")
            assert "NOSUCHCOMMAND" in str(caught.value)
            assert not isinstance(caught.value, OSError)  # not mistaken for a lost connection
            assert await link.call("PING") == b"PONG"

            await link.call("SET", key, "not a number")
            with pytest.raises(ReplyError, match="not an integer"):
                await link.call("INCR", key)

            # Errors in the middle of a pipelined burst land on their own calls only.
            calls = [
                link.call("INCR", key) if i % 3 == 0 else link.call("ECHO", f"ok-{i}")
                for i in range(150)
            ]
            replies = await asyncio.gather(*calls, return_exceptions=True)
            for i, reply in enumerate(replies):
                if i % 3 == 0:
                    assert isinstance(reply, ReplyError), (i, reply)
                    assert "not an integer" in str(reply)
                else:
                    assert reply == f"ok-{i}".encode(), (i, reply)
            client_id = await link.call("CLIENT", "ID")
            assert await link.call("ECHO", "after") == b"after"
            assert await link.call("CLIENT", "ID") == client_id  # the same connection throughout
        finally:
            await link.call("DEL", key)


@pytest.mark.parametrize(
    ("path", "query", "database"),
    [("/5", "", 5), ("", "db=6", 6), ("/", "db=6", 6), ("/0", "", 0)],
    ids=["path", "query", "slash-and-query", "zero"],
)
async def test_the_url_selects_the_database(path: str, query: str, database: int) -> None:
    keys = [unique_key() for _ in range(40)]
    async with bounded(), open_link(real_redis_url(path, query)) as link:
        try:
            # Concurrent writes on a fresh link: SELECT must go before every one of them.
            replies = await asyncio.gather(
                *(link.call("SET", k, f"v{i}") for i, k in enumerate(keys))
            )
            assert replies == [b"OK"] * len(keys)
            info = await link.call("CLIENT", "INFO")
            assert f" db={database} ".encode() in info, info
            with redis_py(real_redis_url(f"/{database}")) as there:
                assert there.mget(keys) == [f"v{i}".encode() for i in range(len(keys))]
            other_database = 1 if database != 1 else 2
            with redis_py(real_redis_url(f"/{other_database}")) as elsewhere:
                assert elsewhere.exists(*keys) == 0
        finally:
            await link.call("DEL", *keys)  # wherever the link wrote them
            with redis_py(real_redis_url(f"/{database}")) as there:
                there.delete(*keys)


async def test_close_then_call_reconnects() -> None:
    async with bounded(), open_link(REDIS_URL) as link:
        await link.close()  # closing a link that never connected is harmless
        first = await link.call("CLIENT", "ID")
        await link.close()
        await link.close()  # and closing twice as well
        second = await link.call("CLIENT", "ID")
        assert isinstance(first, int) and isinstance(second, int)
        assert second != first  # a new connection
        assert await link.call("CLIENT", "ID") == second


# -- fake servers: authentication and database selection --------------------------------------


@pytest.mark.parametrize(
    ("userinfo", "path", "query", "preamble"),
    [
        (
            "reporter:p%40ss%3Aw%2Frd%25@",
            "/3",
            "",
            [[b"AUTH", b"reporter", b"p@ss:w/rd%"], [b"SELECT", b"3"]],
        ),
        (":s%20ecret+@", "/0", "", [[b"AUTH", b"s ecret+"]]),
        (":pw@", "", "db=4", [[b"AUTH", b"pw"], [b"SELECT", b"4"]]),
        ("", "/7", "", [[b"SELECT", b"7"]]),
        ("", "/0", "", []),
    ],
    ids=["user-and-password", "password-only", "query-db", "no-auth", "nothing"],
)
async def test_auth_and_select_go_before_every_caller_command(
    userinfo: str, path: str, query: str, preamble: list[list[bytes]]
) -> None:
    async with (
        bounded(),
        FakeRedis() as fake,
        open_link(fake.url(path, userinfo, query)) as link,
    ):
        # Many calls at once on a fresh link: none may overtake AUTH or SELECT.
        replies = await asyncio.gather(*(link.call("ECHO", f"m{i}") for i in range(30)))
        assert replies == [f"m{i}".encode() for i in range(30)]
        assert len(fake.connections) == 1
        commands = fake.commands(0)
        assert commands[: len(preamble)] == preamble
        caller_commands = commands[len(preamble) :]
        assert sorted(caller_commands) == sorted([b"ECHO", f"m{i}".encode()] for i in range(30))


async def test_a_call_made_while_auth_is_in_flight_waits_for_auth_and_select() -> None:
    # AUTH and SELECT are answered by hand, so calls can arrive while they are unanswered.
    def answer(connection: int, command: list[bytes]) -> Answer:
        return None if command[0] in (b"AUTH", b"SELECT") else standard_answer(command)

    async with (
        bounded(),
        FakeRedis(answer) as fake,
        open_link(fake.url("/9", ":pw@")) as link,
    ):
        first = asyncio.create_task(link.call("ECHO", "first"))
        await fake.wait_until(lambda: len(fake.connections) == 1 and len(fake.commands(0)) == 1)
        late = asyncio.create_task(link.call("ECHO", "late"))
        for _ in range(5):  # give a wrongly eager link every chance to send it now
            await asyncio.sleep(0)
        connection = fake.connections[0]
        assert connection.commands == [[b"AUTH", b"pw"]]
        connection.writer.write(b"+OK\r\n")
        await fake.wait_until(lambda: len(connection.commands) >= 2)
        assert connection.commands[1] == [b"SELECT", b"9"]
        connection.writer.write(b"+OK\r\n")
        assert await first == b"first"
        assert await late == b"late"
        assert connection.commands[2:] == [[b"ECHO", b"first"], [b"ECHO", b"late"]]
        assert len(fake.connections) == 1


async def test_auth_and_select_are_sent_again_on_reconnect() -> None:
    def answer(connection: int, command: list[bytes]) -> Answer:
        if connection == 0 and command[0] == b"ECHO":
            return HangUp()
        return standard_answer(command)

    async with bounded(), FakeRedis(answer) as fake, open_link(fake.url("/2", "u:pw@")) as link:
        with pytest.raises(ConnectionError):
            await link.call("ECHO", "lost")
        assert await link.call("ECHO", "again") == b"again"
        assert len(fake.connections) == 2
        assert fake.commands(1) == [
            [b"AUTH", b"u", b"pw"],
            [b"SELECT", b"2"],
            [b"ECHO", b"again"],
        ]


async def test_a_refused_auth_raises_and_the_caller_command_is_never_sent() -> None:
    def answer(connection: int, command: list[bytes]) -> Answer:
        if connection == 0 and command[0] == b"AUTH":
            return b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
        return standard_answer(command)

    async with (
        bounded(),
        FakeRedis(answer) as fake,
        open_link(fake.url("/0", ":wrong@")) as link,
    ):
        with pytest.raises(ReplyError, match="WRONGPASS"):
            await link.call("ECHO", "secret business")
        await fake.wait_until(lambda: fake.connections[0].finished)
        assert fake.commands(0) == [[b"AUTH", b"wrong"]]
        assert fake.connections[0].client_closed  # the link dropped that connection
        # The next call tries again on a new connection.
        assert await link.call("ECHO", "now") == b"now"
        assert fake.commands(1) == [[b"AUTH", b"wrong"], [b"ECHO", b"now"]]


async def test_unix_socket_url(socket_dir: Path) -> None:
    path = socket_dir / "r.sock"
    async with (
        bounded(),
        FakeRedis(unix_path=path) as fake,
        open_link(f"unix://{path}?db=2") as link,
    ):
        assert await link.call("PING") == b"PONG"
        async with open_link(f"unix://{path}") as link:
            assert await link.call("ECHO", "plain") == b"plain"
        assert fake.commands(0) == [[b"SELECT", b"2"], [b"PING"]]
        assert fake.commands(1) == [[b"ECHO", b"plain"]]


async def test_rediss_speaks_tls() -> None:
    # A plain server that sees a TLS ClientHello (record type 0x16) instead of a RESP command.
    async with (
        bounded(),
        FakeRedis() as fake,
        open_link(fake.url().replace("redis://", "rediss://"), timeout=2) as link,
    ):
        with pytest.raises(OSError):  # the handshake fails: SSL error, reset or timeout
            await link.call("PING")
        await fake.wait_until(lambda: len(fake.connections) == 1 and fake.connections[0].finished)
        assert fake.connections[0].received[:2] == b"\x16\x03"
        assert fake.commands(0) == []


# -- fake servers: failures ---------------------------------------------------------------------


async def test_error_reply_from_a_server_raises_and_later_calls_still_pair() -> None:
    def answer(connection: int, command: list[bytes]) -> Answer:
        if command[:2] == [b"ECHO", b"bad"]:
            return b"-ERR fake trouble\r\n"
        return standard_answer(command)

    async with bounded(), FakeRedis(answer) as fake, open_link(fake.url()) as link:
        replies = await asyncio.gather(
            link.call("ECHO", "a"),
            link.call("ECHO", "bad"),
            link.call("ECHO", "c"),
            return_exceptions=True,
        )
        assert replies[0] == b"a" and replies[2] == b"c"
        assert isinstance(replies[1], ReplyError) and str(replies[1]) == "ERR fake trouble"
        assert await link.call("ECHO", "d") == b"d"
        assert len(fake.connections) == 1


async def test_silent_server_times_out_closes_and_the_next_call_reconnects() -> None:
    def answer(connection: int, command: list[bytes]) -> Answer:
        return None if connection == 0 else standard_answer(command)

    async with (
        bounded(),
        FakeRedis(answer) as fake,
        open_link(fake.url(), timeout=SHORT) as link,
    ):
        with pytest.raises(TimeoutError):
            await link.call("PING")
        # The link closed that connection: the server reads end-of-file.
        await fake.wait_until(lambda: fake.connections[0].finished)
        assert fake.connections[0].client_closed
        assert fake.commands(0) == [[b"PING"]]
        assert await link.call("ECHO", "back") == b"back"
        assert len(fake.connections) == 2
        assert fake.commands(1) == [[b"ECHO", b"back"]]


async def test_timeout_fails_every_call_pending_on_that_connection() -> None:
    def answer(connection: int, command: list[bytes]) -> Answer:
        return None if connection == 0 else standard_answer(command)

    async with (
        bounded(),
        FakeRedis(answer) as fake,
        open_link(fake.url(), timeout=SHORT) as link,
    ):
        replies = await asyncio.gather(
            *(link.call("ECHO", f"q{i}") for i in range(5)), return_exceptions=True
        )
        # The first to time out closes the connection; the rest time out or see it lost.
        for reply in replies:
            assert isinstance(reply, TimeoutError | ConnectionError), reply
        assert isinstance(replies[0], TimeoutError)
        await fake.wait_until(lambda: fake.connections[0].finished)
        assert await link.call("PING") == b"PONG"
        assert len(fake.connections) == 2


async def test_a_call_right_after_a_timeout_reconnects() -> None:
    def answer(connection: int, command: list[bytes]) -> Answer:
        return None if connection == 0 else standard_answer(command)

    async with (
        bounded(),
        FakeRedis(answer) as fake,
        open_link(fake.url(), timeout=SHORT) as link,
    ):
        with pytest.raises(TimeoutError):
            await link.call("PING")
        # A caller that retries at once (no other await in between).
        assert await link.call("ECHO", "retry") == b"retry"
        assert len(fake.connections) == 2


async def test_a_hang_up_fails_pending_calls_and_the_next_call_reconnects() -> None:
    def answer(connection: int, command: list[bytes]) -> Answer:
        if connection == 0 and command[0] == b"ECHO":
            return HangUp()
        return standard_answer(command)

    async with bounded(), FakeRedis(answer) as fake, open_link(fake.url(), timeout=5) as link:
        assert await link.call("PING") == b"PONG"  # connected before the burst
        replies = await asyncio.gather(
            *(link.call("ECHO", f"p{i}") for i in range(5)), return_exceptions=True
        )
        for reply in replies:
            assert isinstance(reply, ConnectionError), reply
            assert isinstance(reply, OSError)
        assert await link.call("ECHO", "fine") == b"fine"
        assert len(fake.connections) == 2
        assert fake.commands(1) == [[b"ECHO", b"fine"]]


async def test_a_hang_up_mid_reply_keeps_complete_replies_and_fails_the_rest() -> None:
    def answer(connection: int, command: list[bytes]) -> Answer:
        if connection == 0 and command == [b"ECHO", b"second"]:
            return HangUp(b"$6\r\nsec")  # half a reply, then gone
        return standard_answer(command)

    async with bounded(), FakeRedis(answer) as fake, open_link(fake.url(), timeout=5) as link:
        assert await link.call("PING") == b"PONG"
        replies = await asyncio.gather(
            link.call("ECHO", "first"),
            link.call("ECHO", "second"),
            link.call("ECHO", "third"),
            return_exceptions=True,
        )
        assert replies[0] == b"first"
        assert isinstance(replies[1], ConnectionError), replies[1]
        assert isinstance(replies[2], ConnectionError), replies[2]
        # The half reply does not leak into the new connection's first answer.
        assert await link.call("ECHO", "fresh") == b"fresh"
        assert len(fake.connections) == 2


async def test_a_caller_giving_up_does_not_shift_the_replies_of_others() -> None:
    def answer(connection: int, command: list[bytes]) -> Answer:
        return None if command[0] == b"ECHO" else standard_answer(command)  # ECHO: by hand

    async with bounded(), FakeRedis(answer) as fake, open_link(fake.url(), timeout=5) as link:
        assert await link.call("PING") == b"PONG"
        connection = fake.connections[0]
        slow = asyncio.create_task(link.call("ECHO", "slow"))
        await fake.wait_until(lambda: len(connection.commands) == 2)
        slow.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await slow
        assert slow.cancelled()
        following = asyncio.create_task(link.call("ECHO", "next"))
        await fake.wait_until(lambda: len(connection.commands) == 3)
        connection.writer.write(bulk(b"slow") + bulk(b"next"))
        assert await following == b"next"
        assert len(fake.connections) == 1


async def test_close_fails_a_pending_call_and_the_next_call_reconnects() -> None:
    def answer(connection: int, command: list[bytes]) -> Answer:
        return None if connection == 0 else standard_answer(command)

    async with bounded(), FakeRedis(answer) as fake, open_link(fake.url(), timeout=5) as link:
        pending = asyncio.create_task(link.call("ECHO", "never"))
        await fake.wait_until(lambda: len(fake.connections) == 1 and bool(fake.commands(0)))
        await link.close()
        with pytest.raises(ConnectionError):
            await pending
        await fake.wait_until(lambda: fake.connections[0].finished)
        assert fake.connections[0].client_closed
        assert await link.call("ECHO", "reopened") == b"reopened"
        assert len(fake.connections) == 2


async def test_connection_refused_raises_connection_error() -> None:
    async with bounded(), open_link(UNREACHABLE_REDIS) as link:
        replies = await asyncio.gather(
            *(link.call("PING") for _ in range(3)), return_exceptions=True
        )
        for reply in replies:
            assert isinstance(reply, ConnectionError), reply  # ConnectionRefusedError
            assert isinstance(reply, OSError)


async def test_a_refused_link_connects_once_the_server_listens() -> None:
    # A bound socket that does not listen yet: connecting to it is refused.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    async with bounded(), open_link(f"redis://127.0.0.1:{port}/0") as link:
        try:
            with pytest.raises(ConnectionRefusedError):
                await link.call("PING")
        except BaseException:
            sock.close()
            raise
        async with FakeRedis(sock=sock) as fake:
            assert await link.call("PING") == b"PONG"
            assert fake.commands(0) == [[b"PING"]]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:6379/0",
        "redis+sentinel://127.0.0.1:26379/mymaster",
        "tcp://127.0.0.1:6379",
        "localhost:6379",
        "127.0.0.1:6379",
    ],
)
def test_an_unsupported_scheme_raises_value_error(url: str) -> None:
    with pytest.raises(ValueError, match="scheme"):
        RedisLink(url, timeout=1)


# -- uvloop (production serves on it) -----------------------------------------------------------

UVLOOP_SCENARIOS: list[Callable[[], Awaitable[None]]] = [
    test_ping_and_set_get_round_trip_with_bytes_and_ints,
    test_concurrent_calls_pair_with_their_own_replies_on_one_connection,
    test_error_replies_raise_reply_error_and_the_link_keeps_its_pairing,
    test_close_then_call_reconnects,
    test_a_call_made_while_auth_is_in_flight_waits_for_auth_and_select,
    test_auth_and_select_are_sent_again_on_reconnect,
    test_a_refused_auth_raises_and_the_caller_command_is_never_sent,
    test_rediss_speaks_tls,
    test_error_reply_from_a_server_raises_and_later_calls_still_pair,
    test_silent_server_times_out_closes_and_the_next_call_reconnects,
    test_timeout_fails_every_call_pending_on_that_connection,
    test_a_hang_up_fails_pending_calls_and_the_next_call_reconnects,
    test_a_hang_up_mid_reply_keeps_complete_replies_and_fails_the_rest,
    test_a_caller_giving_up_does_not_shift_the_replies_of_others,
    test_close_fails_a_pending_call_and_the_next_call_reconnects,
    test_connection_refused_raises_connection_error,
    test_a_refused_link_connects_once_the_server_listens,
]


@pytest.mark.parametrize("scenario", UVLOOP_SCENARIOS, ids=lambda s: s.__name__[5:])
def test_under_uvloop(scenario: Callable[[], Awaitable[None]]) -> None:
    async def main() -> None:
        assert isinstance(asyncio.get_running_loop(), uvloop.Loop)
        await scenario()

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main())


def test_under_uvloop_unix_socket_and_database(socket_dir: Path) -> None:
    async def main() -> None:
        assert isinstance(asyncio.get_running_loop(), uvloop.Loop)
        await test_unix_socket_url(socket_dir)
        await test_the_url_selects_the_database("/5", "", 5)

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main())
