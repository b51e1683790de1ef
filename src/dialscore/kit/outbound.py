"""Outbound HTTP to user-given URLs, refusing private targets at every connection (D24).

A URL is normalised before it is stored and again before every call (P75). Its host is
resolved when a connection is made, every resolved address checked, and the connection made to
a checked address itself (with the original Host and TLS server name), so a DNS answer that
changes between the check and the connection cannot redirect the request."""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import re
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp
import aiohttp.abc
import httpx
import idna
import yarl

from dialscore.kit.text import SURROGATE_PROBLEM, text_problem

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_REFUSED_NETWORKS: tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str], ...] = tuple(
    (ipaddress.ip_network(net), why)
    for net, why in (
        ("0.0.0.0/8", "an unspecified address"),
        ("10.0.0.0/8", "a private address"),
        ("100.64.0.0/10", "a carrier-grade NAT address"),
        ("127.0.0.0/8", "a loopback address"),
        ("169.254.0.0/16", "a link-local address (cloud metadata lives here)"),
        ("172.16.0.0/12", "a private address"),
        ("192.0.0.0/24", "a reserved address"),
        ("192.168.0.0/16", "a private address"),
        ("198.18.0.0/15", "a benchmarking address"),
        ("224.0.0.0/4", "a multicast address"),
        ("240.0.0.0/4", "a reserved address"),
        ("::/128", "an unspecified address"),
        ("::1/128", "a loopback address"),
        ("::/96", "a deprecated IPv4-compatible address"),
        ("64:ff9b:1::/48", "a local NAT64 address"),
        ("fc00::/7", "a private address (cloud metadata lives here)"),
        ("fe80::/10", "a link-local address"),
        ("ff00::/8", "a multicast address"),
    )
)


# Well-known NAT64 prefix: the last 32 bits are an IPv4 address reached through a gateway.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class RefusedTarget(Exception):
    """The URL may not be called: its scheme, or an address its host resolves to."""


def address_refusal(address: IPAddress) -> str | None:
    """Why a connection to ``address`` is refused, or None for a public address."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = (
            address.ipv4_mapped
            or address.sixtofour
            or (address.teredo[1] if address.teredo else None)
        )
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            why = address_refusal(embedded)
            return f"an IPv6 address embedding {why}" if why else None
    for network, why in _REFUSED_NETWORKS:
        if address.version == network.version and address in network:
            return why
    if not address.is_global:
        return "not a public address"
    return None


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    path: str


MAX_URL = 2048
DEFAULT_PORTS = {"https": 443, "http": 80}
# C0 controls, DEL and C1 controls: a URL carrying one is a header injection or a mistake.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


# Memoised: the dispatcher reads the receiver of every due delivery it looks at, and a
# deployment has few distinct URLs; IDNA and percent-encoding cost more than the lookup.
@functools.lru_cache(maxsize=4096)
def normalise_url(url: str, *, allow_private: bool) -> str:
    """The form of a webhook or callback URL that is stored, shown and called (P75): scheme
    and host in lower case, the host in its ASCII (IDNA) form, no default port, the path and
    query percent-encoded, no fragment. ``RefusedTarget`` says why a URL may not be used:
    https only (unless private targets are allowed), no control characters, no user name or
    password, a valid host name."""
    control = _CONTROL.search(url)
    if control is not None:
        raise RefusedTarget(
            f"url must not contain control characters (U+{ord(control[0]):04X} at position "
            f"{control.start()})"
        )
    if text_problem(url) is not None:
        raise RefusedTarget(f"url {SURROGATE_PROBLEM}")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise RefusedTarget("url is not a valid URL") from None
    scheme = parts.scheme.lower()
    allowed = ("https", "http") if allow_private else ("https",)
    if scheme not in allowed:
        raise RefusedTarget("url must use https")
    if parts.username or parts.password:
        raise RefusedTarget("url must not contain a user name or password")
    host = _ascii_host(parts.hostname)
    if port == 0:
        raise RefusedTarget("url is not a valid URL: port 0")
    shown_port = "" if port in (None, DEFAULT_PORTS[scheme]) else f":{port}"
    query = f"?{parts.query}" if parts.query else ""
    try:
        # httpx sends the request: its percent-encoding of the path and query is what goes
        # out, so it is what is stored.
        normalised = str(httpx.URL(f"{scheme}://{host}{shown_port}{parts.path or '/'}{query}"))
    except httpx.InvalidURL as exc:
        raise RefusedTarget(f"url is not a valid URL: {exc}") from None
    if len(normalised) > MAX_URL:
        raise RefusedTarget(f"url is longer than {MAX_URL} characters once normalised")
    return normalised


def _ascii_host(hostname: str | None) -> str:
    """A URL's host as it is written in a normalised URL: an IP address in its short form
    (IPv6 in brackets), a name in its IDNA ASCII form."""
    if not hostname:
        raise RefusedTarget("url must have a host")
    try:
        address: IPAddress | None = ipaddress.ip_address(hostname)
    except ValueError:
        address = None
    if isinstance(address, ipaddress.IPv6Address):
        return f"[{address.compressed}]"
    if address is not None:
        return str(address)
    try:
        return idna.encode(hostname, uts46=True).decode("ascii")
    except idna.IDNAError as exc:
        raise RefusedTarget(f"url has an invalid host name ({exc})") from None


def parse_target(url: str, *, allow_private: bool) -> Target:
    """The parts of a webhook URL, normalised; https only unless private targets are
    allowed."""
    parts = urlsplit(normalise_url(url, allow_private=allow_private))
    scheme = parts.scheme
    assert parts.hostname is not None  # normalise_url refuses a URL without a host
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    return Target(scheme, parts.hostname, parts.port or DEFAULT_PORTS[scheme], path)


async def resolve_allowed(target: Target, *, allow_private: bool) -> str:
    """An address of the target's host that may be called; refuses if any may not."""
    try:
        literal: IPAddress | None = ipaddress.ip_address(target.host)
    except ValueError:
        literal = None
    if literal is not None:
        addresses: list[IPAddress] = [literal]
    else:
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
        except socket.gaierror:
            raise RefusedTarget(f"host {target.host} does not resolve") from None
        addresses = [ipaddress.ip_address(info[4][0]) for info in infos]
        if not addresses:
            raise RefusedTarget(f"host {target.host} does not resolve")
    if not allow_private:
        for address in addresses:
            why = address_refusal(address)
            if why is not None:
                raise RefusedTarget(f"host {target.host} resolves to {address}, {why}")
    return str(addresses[0])


async def check_url(url: str, *, allow_private: bool) -> str:
    """The normalised ``url`` once its host resolves only to addresses that may be called."""
    normalised = normalise_url(url, allow_private=allow_private)
    await resolve_allowed(
        parse_target(normalised, allow_private=allow_private), allow_private=allow_private
    )
    return normalised


@dataclass(frozen=True)
class Answer:
    """What a receiver answered: its status code and its ``Retry-After``, if any."""

    status_code: int
    retry_after: str | None


# The most of an answer's body that is read: receivers owe only a status code.
_ANSWER_BYTES = 64 * 1024


class _CheckingResolver(aiohttp.abc.AbstractResolver):
    """Resolves as the system does, and refuses a host any of whose addresses may not be
    called: the connection is then made to one of the addresses just checked."""

    def __init__(self, *, allow_private: bool) -> None:
        self.allow_private = allow_private
        self.system = aiohttp.ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[aiohttp.abc.ResolveResult]:
        try:
            found = await self.system.resolve(host, port, family)
        except OSError:
            raise RefusedTarget(f"host {host} does not resolve") from None
        if not self.allow_private:
            for entry in found:
                why = address_refusal(ipaddress.ip_address(entry["host"]))
                if why is not None:
                    raise RefusedTarget(f"host {host} resolves to {entry['host']}, {why}")
        return found

    async def close(self) -> None:
        await self.system.close()


class Poster:
    """POSTs to user-given URLs over kept-alive connections (aiohttp), each connection made
    to an address checked when its host was resolved; redirects are not followed. A host
    given as an address is checked before every request."""

    def __init__(self, *, allow_private: bool, max_connections: int) -> None:
        self.allow_private = allow_private
        self.max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None

    def start(self) -> None:
        """Opens the connection pool, on the running event loop."""
        connector = aiohttp.TCPConnector(
            limit=self.max_connections,
            resolver=_CheckingResolver(allow_private=self.allow_private),
        )
        self._session = aiohttp.ClientSession(connector=connector)

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def post(
        self, url: str, *, content: bytes, headers: dict[str, str], timeout: float
    ) -> Answer:
        """The receiver's answer; ``RefusedTarget`` when the URL or its address may not be
        called, ``aiohttp.ClientError`` or ``TimeoutError`` when it could not be reached in
        ``timeout`` seconds."""
        assert self._session is not None, "start() first"
        target = parse_target(url, allow_private=self.allow_private)
        if not self.allow_private:
            _check_literal(target.host)
        async with self._session.post(
            yarl.URL(normalise_url(url, allow_private=self.allow_private), encoded=True),
            data=content,
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=timeout),
            allow_redirects=False,
        ) as response:
            await response.content.read(_ANSWER_BYTES)
            return Answer(response.status, response.headers.get("Retry-After"))


def _check_literal(host: str) -> None:
    """Refuses a host given as a private address (a name is checked when resolved)."""
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return
    why = address_refusal(address)
    if why is not None:
        raise RefusedTarget(f"host {host} is {why}")
