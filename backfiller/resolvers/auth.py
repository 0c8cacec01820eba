"""Access control, by concept (this module only gathers the names other layers use):

- :mod:`backfiller.resolvers.policy`: the least role of every root field (deny by default),
  job scopes, the per-token rate limit;
- :mod:`backfiller.resolvers.authorize`: the ``Authorize`` schema extension that applies it;
- :mod:`backfiller.resolvers.sanitize`: text no database can store;
- :mod:`backfiller.resolvers.audit`: the audit log of mutations;
- :mod:`backfiller.resolvers.authentication`: the principal of a bearer token or run credential.
"""

from __future__ import annotations

from backfiller.resolvers.access import actor_of
from backfiller.resolvers.audit import mark_audited, success_audit
from backfiller.resolvers.authentication import AuthFailure, authenticate
from backfiller.resolvers.authorize import Authorize
from backfiller.resolvers.policy import FIELD_ROLES, RATE_LIMITED_FIELDS, Refusal, decide

__all__ = [
    "FIELD_ROLES",
    "RATE_LIMITED_FIELDS",
    "AuthFailure",
    "Authorize",
    "Refusal",
    "actor_of",
    "authenticate",
    "decide",
    "mark_audited",
    "success_audit",
]
