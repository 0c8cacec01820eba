"""Who a rate limit counts a request against: a token, a run, or a client address.

- a token: its own bucket (``token:<id>``); a person signed in with single sign-on, their
  session's (``session:<id>``);
- a run's credential: a bucket of its own (``run:<id>``), apart from the token that launched
  its backfill, and apart from every other run (a trigger's runs included);
- no token (``--auth none``, and any caller without a name): the client's address
  (``client:<address>``), so one local client cannot spend every other one's budget. Behind a
  reverse proxy, that is the proxy's address.
"""

from __future__ import annotations

from backfiller.resolvers.access import Principal


def rate_caller(principal: Principal | None, client: str | None) -> str:
    """The key of the caller's bucket (see the module's docstring)."""
    if principal is not None:
        if principal.run_id is not None:
            return f"run:{principal.run_id}"
        if principal.token_id is not None:
            return f"token:{principal.token_id}"
        if principal.session_id is not None:  # a person signed in with single sign-on
            return f"session:{principal.session_id}"
    return f"client:{client or 'unknown'}"
