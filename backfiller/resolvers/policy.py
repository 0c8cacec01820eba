"""The access policy: the least role of every root field (deny by default), the per-token rate
limit of launches, and the scopes of a token (jobs and assets, one namespace). Pure decisions:
no IO, no strawberry."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from backfiller.config import Settings
from backfiller.domain.roles import Role
from backfiller.resolvers.access import Principal, RateLimiter
from backfiller.schema.common import UserErrorCode

PUBLIC = None
"""A field anyone may ask for, even without a token (only ``__typename``)."""

VIEWER, OPERATOR, ADMIN = Role.VIEWER, Role.OPERATOR, Role.ADMIN

FIELD_ROLES: Mapping[str, Mapping[str, Role | None]] = {
    "Query": {
        "__typename": PUBLIC,
        "__schema": VIEWER,
        "__type": VIEWER,
        "apiVersion": VIEWER,
        "me": VIEWER,
        "backfill": VIEWER,
        "backfills": VIEWER,
        "node": VIEWER,
        "jobs": VIEWER,
        "job": VIEWER,
        "assets": VIEWER,
        "asset": VIEWER,
        "run": VIEWER,
        "runs": VIEWER,
        "triggers": VIEWER,
        "trigger": VIEWER,
        "partitionMarks": VIEWER,
        "apiTokens": ADMIN,
        "auditLog": ADMIN,
        "teamLimits": ADMIN,
    },
    "Mutation": {
        "__typename": PUBLIC,
        "launchBackfill": OPERATOR,
        "previewBackfill": OPERATOR,
        "pauseBackfill": OPERATOR,
        "resumeBackfill": OPERATOR,
        "cancelBackfill": OPERATOR,
        "updateBackfill": OPERATOR,
        "retryBackfill": OPERATOR,
        "evaluateTrigger": OPERATOR,
        "markPartitions": OPERATOR,
        "setTriggerEnabled": ADMIN,
        "addDynamicPartitions": ADMIN,
        "deleteDynamicPartitions": ADMIN,
        "createApiToken": ADMIN,
        "revokeApiToken": ADMIN,
        "updateApiToken": ADMIN,
        "setTeamLimit": ADMIN,
    },
    "Subscription": {
        "__typename": PUBLIC,
        "backfillProgress": VIEWER,
    },
}
"""Root field -> the least role that may use it. A field missing here is refused."""

RATE_LIMITED_FIELDS: Mapping[str, str] = {
    "launchBackfill": "launch",
    "retryBackfill": "launch",
    "evaluateTrigger": "evaluate",
}
"""Mutations that count against a per-token rate limit, by bucket."""

UNSCOPED_ONLY_FIELDS = frozenset({"evaluateTrigger"})
"""Mutations a token limited to some jobs may not use: a trigger may launch any job."""


@dataclass(frozen=True, slots=True)
class Refusal:
    code: UserErrorCode
    message: str
    field: list[str] | None = None


def decide(principal: Principal | None, root: str, field: str) -> Refusal | None:
    """Whether ``principal`` may use the root field ``root.field``; None when it may."""
    table = FIELD_ROLES.get(root, {})
    if field not in table:
        return Refusal(UserErrorCode.FORBIDDEN, f"`{field}` is not open to any role")
    needed = table[field]
    if needed is PUBLIC:
        return None
    if principal is None:
        return Refusal(
            UserErrorCode.UNAUTHENTICATED,
            "a token is required: send `Authorization: Bearer <token>`",
        )
    if not principal.role.allows(needed):
        return Refusal(
            UserErrorCode.FORBIDDEN,
            f"`{field}` needs the {needed.value} role; this token is a {principal.role.value}",
        )
    if principal.jobs is not None and field in UNSCOPED_ONLY_FIELDS:
        return Refusal(
            UserErrorCode.FORBIDDEN,
            f"`{field}` is not open to a token limited to some jobs",
        )
    return None


def job_refusal(principal: Principal | None, job_name: str) -> Refusal | None:
    """Whether ``principal`` may launch a backfill of ``job_name``; None when it may."""
    if principal is None or principal.may_launch(job_name):
        return None
    return Refusal(
        UserErrorCode.FORBIDDEN,
        f"this token may not launch job {job_name!r}",
        ["target", "job"],
    )


def scope_refusal(principal: Principal | None, names: Iterable[str], verb: str) -> Refusal | None:
    """Whether ``principal`` may ``verb`` a stored backfill that runs ``names`` (its job, or
    its assets); None when it may."""
    for name in names:
        if principal is not None and not principal.may_launch(name):
            return Refusal(
                UserErrorCode.FORBIDDEN,
                f"this token may not {verb} a backfill of {name!r}: it is outside its scope",
                ["id"],
            )
    return None


def rate_refusal(
    limiter: RateLimiter,
    settings: Settings,
    caller: str,
    field: str,
    now: datetime,
) -> Refusal | None:
    """Whether ``field`` is over the rate limit of ``caller`` (``resolvers.rate_keys``) now."""
    bucket = RATE_LIMITED_FIELDS.get(field)
    if bucket is None:
        return None
    if limiter.allow(
        bucket, caller, settings.launch_rate_limit, settings.rate_limit_window_seconds, now
    ):
        return None
    return Refusal(
        UserErrorCode.RATE_LIMITED,
        f"more than {settings.launch_rate_limit} requests of this kind in "
        f"{settings.rate_limit_window_seconds:g} s from this token; try again later",
    )
