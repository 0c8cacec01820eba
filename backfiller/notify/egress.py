"""The daemon's way out to webhooks: resolve once, check what was resolved, connect to it.

:class:`CheckedBackend` is the network layer of the deliveries' HTTP client (an httpcore
network backend). Asked to connect to ``host:port``, it resolves the host once (or reads the
address the host spells), refuses the connection when any address is one the
:class:`~backfiller.notify.addresses.EgressPolicy` refuses, and otherwise connects to the
address it checked: there is no second resolution between the check and the connection for a
rebinding DNS server to answer differently. The URL's host still names the request (``Host``
header) and, over TLS, the server (SNI and the certificate's name).

Proxies from the environment are ignored (a proxy would make the check meaningless).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import httpcore
import httpx

from backfiller.notify.addresses import EgressPolicy, IPAddress, parse_address

Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]
"""``(host, port) -> addresses``; the system's resolver by default."""


class EgressRefused(Exception):
    """A delivery to an address the policy refuses: nothing was sent."""

    def __init__(self, host: str, address: IPAddress | None, kind: str) -> None:
        where = f"{host} ({address})" if address is not None and str(address) != host else host
        super().__init__(f"{where} is {kind}: not an allowed webhook address")
        self.kind = kind


async def system_resolver(host: str, port: int) -> list[IPAddress]:
    """Every address the system's resolver gives ``host`` (getaddrinfo, in a thread)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found: list[IPAddress] = []
    for info in infos:
        ip = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if ip not in found:
            found.append(ip)
    return found


class CheckedBackend(httpcore.AsyncNetworkBackend):
    """An httpcore network backend that connects only to addresses the policy allows."""

    def __init__(self, policy: EgressPolicy, resolver: Resolver = system_resolver) -> None:
        self.policy = policy
        self.resolver = resolver
        self._inner = httpcore.AnyIOBackend()

    async def addresses(self, host: str, port: int) -> list[IPAddress]:
        """What ``host`` is (resolved once), each address checked.

        Raises:
            EgressRefused: an address is one the policy refuses.
        """
        literal = parse_address(host)
        found = [literal] if literal is not None else await self.resolver(host, port)
        if self.policy.allows_name(host):
            return found
        for ip in found:
            kind = self.policy.refusal_of_address(ip)
            if kind is not None:
                raise EgressRefused(host, ip, kind)
        return found

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        failure: Exception = httpcore.ConnectError(f"{host} has no address")
        for ip in await self.addresses(host, port):
            try:
                return await self._inner.connect_tcp(
                    str(ip), port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise EgressRefused(path, None, "a local socket")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class EgressTransport(httpx.AsyncHTTPTransport):
    """httpx's transport on a :class:`CheckedBackend`, without proxies from the environment."""

    def __init__(self, backend: CheckedBackend, max_connections: int) -> None:
        super().__init__(trust_env=False)
        # httpx builds its connection pool without a way to pass a network backend: the pool
        # is made again, as httpx makes it, on the checked one.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=max_connections,
            max_keepalive_connections=max_connections,
            keepalive_expiry=5.0,
            network_backend=backend,
        )


def egress_client(
    policy: EgressPolicy, timeout_seconds: float, max_connections: int, resolver: Resolver | None
) -> httpx.AsyncClient:
    """The deliveries' HTTP client: checked connections, no redirects, no proxies."""
    backend = CheckedBackend(policy, resolver or system_resolver)
    return httpx.AsyncClient(
        transport=EgressTransport(backend, max_connections),
        timeout=timeout_seconds,
        follow_redirects=False,
        trust_env=False,
    )
