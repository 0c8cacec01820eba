"""Which addresses a server may bind without authentication: this machine's only.

Light on purpose: ``serve`` checks its address before it loads the web application.
"""

from __future__ import annotations

import ipaddress

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost", "[::1]"})


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` exposes the server to this machine only."""
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
