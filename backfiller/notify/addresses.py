"""Where a webhook may be sent: the addresses a delivery refuses, and the admin's allow-list.

Pure (no IO): the daemon's deliveries (:mod:`.egress`) check every address a host name
resolves to, and a launch checks a URL whose host is written as an address (in any spelling a
resolver would accept: ``2130706433``, ``0x7f.1``, ``017700000001``, ``[::ffff:127.0.0.1]``)
or names a host that is always inside (``localhost``, ``metadata.google.internal``).

Refused, unless the allow-list says otherwise: loopback, private, shared (carrier-grade NAT),
link-local, unique-local and site-local, multicast, unspecified, reserved and documentation
ranges, the cloud metadata addresses, and an IPv6 address that carries one of those as an
IPv4 address (mapped, compatible, 6to4, NAT64). In short: only globally routable unicast.

The allow-list (``--webhook-allow`` on the daemon, ``$BACKFILLER_WEBHOOK_ALLOW`` for every
process) holds networks (``10.1.0.0/16``, ``127.0.0.1``, ``fd00::/8``) and host names
(``hooks.internal``, ``*.corp.example``). An allowed name is sent to whatever it resolves to;
an allowed network lets any name that resolves into it through.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

ALLOW_VARIABLE = "BACKFILLER_WEBHOOK_ALLOW"

# Always inside, whatever a resolver says: refused at launch (unless allowed by name).
INTERNAL_NAMES = frozenset({"localhost", "metadata.google.internal", "metadata.goog", "metadata"})
INTERNAL_SUFFIXES = (".localhost",)

# Not caught by ``is_global`` on every Python release, or routable but a platform's own.
_DENIED = tuple(
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",
        "100.64.0.0/10",
        "192.0.0.0/24",  # IETF protocol assignments (Oracle Cloud's metadata is 192.0.0.192)
        "198.18.0.0/15",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "168.63.129.16/32",  # Azure's platform address
        "100::/64",
        "fec0::/10",
        "ff00::/8",
    )
)
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
_ULA = ipaddress.ip_network("fc00::/7")
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))


def parse_ipv4(text: str) -> ipaddress.IPv4Address | None:
    """An IPv4 address as ``inet_aton`` reads it: one to four parts, each decimal, octal
    (``0`` prefix) or hexadecimal (``0x``), the last one filling the remaining bytes."""
    parts = text.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    numbers = []
    for part in parts:
        lowered = part.lower()
        try:
            if lowered.startswith("0x"):
                numbers.append(int(lowered[2:] or "0", 16))
            elif len(lowered) > 1 and lowered.startswith("0"):
                numbers.append(int(lowered, 8))
            elif lowered.isdigit():
                numbers.append(int(lowered, 10))
            else:
                return None
        except ValueError:
            return None
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (4 - len(head)):
        return None
    value = 0
    for n in head:
        value = value * 256 + n
    value = value * 256 ** (4 - len(head)) + last
    return ipaddress.IPv4Address(value)


def parse_address(host: str) -> IPAddress | None:
    """The address ``host`` spells (brackets, a zone and a trailing dot allowed), or None for
    a name."""
    text = host.strip().lower().removesuffix(".")
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if ":" in text:
        try:
            return ipaddress.IPv6Address(text.split("%", 1)[0])
        except ValueError:
            return None
    if len(text) > 64 or not text or not all(c in "0123456789abcdefx." for c in text):
        return None
    return parse_ipv4(text)


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries to an IPv4 host, if any."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if any(ip in net for net in _NAT64) or (ip in _IPV4_COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def refusal_of(ip: IPAddress) -> str | None:
    """Why a delivery may not go to ``ip`` (None when it may): a word for the kind of address."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_ipv4(ip)
        if inner is not None:
            return refusal_of(inner)
    checks = (
        (ip.is_unspecified, "unspecified"),
        (ip.is_loopback, "loopback"),
        (ip.is_link_local, "link-local"),
        (ip.is_multicast, "multicast"),
        (ip.version == 6 and ip in _ULA, "unique-local"),
        (ip.is_private, "private"),
        (ip.is_reserved, "reserved"),
        (any(ip in net for net in _DENIED if net.version == ip.version), "reserved"),
        (not ip.is_global, "not global"),
    )
    return next((word for hit, word in checks if hit), None)


def _name(host: str) -> str:
    return host.strip().lower().removesuffix(".")


@dataclass(frozen=True)
class EgressPolicy:
    """The admin's exceptions to the refused addresses (none by default)."""

    networks: tuple[IPNetwork, ...] = ()
    hosts: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()

    @classmethod
    def of(cls, entries: Iterable[str]) -> EgressPolicy:
        """From allow-list entries: networks or addresses, host names, ``*.`` suffixes.

        Raises:
            ValueError: an entry that is none of these.
        """
        networks: list[IPNetwork] = []
        hosts: set[str] = set()
        suffixes: list[str] = []
        for raw in entries:
            entry = _name(raw)
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
                continue
            except ValueError:
                pass
            label = entry.removeprefix("*.")
            if not label or not all(c.isalnum() or c in "-." for c in label):
                raise ValueError(f"{raw!r} is neither a network, an address nor a host name")
            if entry.startswith("*."):
                suffixes.append("." + label)
            else:
                hosts.add(entry)
        return cls(tuple(networks), frozenset(hosts), tuple(suffixes))

    @classmethod
    def from_env(cls, extra: Iterable[str] = ()) -> EgressPolicy:
        """``$BACKFILLER_WEBHOOK_ALLOW`` (comma or space separated), plus ``extra``."""
        given = os.environ.get(ALLOW_VARIABLE, "").replace(",", " ").split()
        return cls.of([*given, *extra])

    def allows_name(self, host: str) -> bool:
        name = _name(host)
        return name in self.hosts or any(name.endswith(s) for s in self.suffixes)

    def refusal_of_address(self, ip: IPAddress) -> str | None:
        """Why ``ip`` is refused (None when allowed)."""
        if any(ip.version == net.version and ip in net for net in self.networks):
            return None
        return refusal_of(ip)

    def refusal_of_literal(self, host: str) -> str | None:
        """Why a URL whose host is ``host`` is refused before any resolution: an address
        written out, or a name that is always inside; None for any other name."""
        if self.allows_name(host):
            return None
        ip = parse_address(host)
        if ip is not None:
            return self.refusal_of_address(ip)
        name = _name(host)
        if name in INTERNAL_NAMES or name.endswith(INTERNAL_SUFFIXES):
            return "internal"
        return None
