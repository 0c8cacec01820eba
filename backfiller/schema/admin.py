"""Public types of access control: API tokens, the caller, and the audit log."""

from __future__ import annotations

import enum
from datetime import datetime

import strawberry

from backfiller.schema.common import PageInfo, UserError, UserErrorCode


@strawberry.enum(description="What a token may do. Each role may do all that the one before may.")
class ApiTokenRole(enum.Enum):
    VIEWER = strawberry.enum_value("VIEWER", description="Reads everything.")
    OPERATOR = strawberry.enum_value(
        "OPERATOR",
        description="Also launches, previews, pauses, resumes, cancels and retries backfills, "
        "and evaluates triggers.",
    )
    ADMIN = strawberry.enum_value(
        "ADMIN",
        description="Also manages tokens and dynamic partitions, enables triggers and reads "
        "the audit log.",
    )


@strawberry.type(description="An API token. Its secret is shown once, when it is created.")
class ApiToken:
    id: strawberry.ID
    name: str
    role: ApiTokenRole
    hint: str = strawberry.field(description="The first characters of the secret.")
    created_at: datetime
    created_by: str | None
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None = strawberry.field(
        description="When it was last presented (updated at most once a minute)."
    )
    jobs: list[str] | None = strawberry.field(
        default=None,
        description="The only jobs and assets (one namespace) whose backfills it may launch, "
        "preview, pause, resume, cancel and retry; null for every one.",
    )
    team: str | None = strawberry.field(
        default=None,
        description="The team it belongs to: what it launches acts for this team; null for none.",
    )

    @strawberry.field(description="Neither revoked nor expired (as of the request).")
    def active(self) -> bool:
        return self._active

    _active: strawberry.Private[bool]


@strawberry.type
class ApiTokenEdge:
    cursor: str
    node: ApiToken


@strawberry.type
class ApiTokenConnection:
    edges: list[ApiTokenEdge]
    page_info: PageInfo

    @strawberry.field
    def nodes(self) -> list[ApiToken]:
        return [e.node for e in self.edges]


@strawberry.type(description="Who is asking: the token of this request.")
class Caller:
    name: str | None = strawberry.field(
        description="The token's name; null when the server runs without authentication."
    )
    role: ApiTokenRole
    authenticated: bool = strawberry.field(
        description="Whether a token was presented (false when the server runs without auth)."
    )
    team: str | None = strawberry.field(
        default=None,
        description="The team it acts for (its token's, or a signed-in person's); null for none.",
    )


@strawberry.input
class CreateApiTokenInput:
    name: str = strawberry.field(description="Unique among active tokens; 1 to 200 characters.")
    role: ApiTokenRole
    expires_at: datetime | None = strawberry.field(
        default=None, description="When the token stops working; never when null."
    )
    jobs: list[str] | None = strawberry.field(
        default=None,
        description="Limit the token to the backfills of these jobs and assets (one "
        "namespace): it may launch, preview, pause, resume, cancel and retry only those, and "
        "may not evaluate triggers; every one when null.",
    )
    team: str | None = strawberry.field(
        default=None,
        description="The team it belongs to (1 to 200 characters); what it launches acts for "
        "this team; no team when null.",
    )


@strawberry.type
class CreateApiTokenPayload:
    token: ApiToken | None
    secret: str | None = strawberry.field(
        description="The token to send as `Authorization: Bearer <secret>`. Shown only here, "
        "only once: the server keeps only its hash."
    )
    user_errors: list[UserError]


@strawberry.input(description="What to change of an API token; an absent field is left as it is.")
class UpdateApiTokenInput:
    id: strawberry.ID
    team: str | None = strawberry.field(
        default=strawberry.UNSET,
        description="Its team (1 to 200 characters); null removes it. Backfills launched "
        "before keep the team they were launched for.",
    )


@strawberry.type
class UpdateApiTokenPayload:
    token: ApiToken | None
    user_errors: list[UserError]


@strawberry.type(description="A team's limit on its runs in flight, across all its backfills.")
class TeamLimit:
    team: str
    max_concurrent_runs: int = strawberry.field(
        description="At most this many runs of the team's backfills at once (queued and "
        "running), across daemons."
    )
    updated_at: datetime
    updated_by: str | None


@strawberry.input
class SetTeamLimitInput:
    team: str = strawberry.field(description="The team's name, 1 to 200 characters.")
    max_concurrent_runs: int | None = strawberry.field(
        description="Its limit (1..100000); null removes it (the daemon's default applies)."
    )


@strawberry.type
class SetTeamLimitPayload:
    team_limit: TeamLimit | None = strawberry.field(
        description="The limit as set; null once removed."
    )
    user_errors: list[UserError]


@strawberry.input
class RevokeApiTokenInput:
    id: strawberry.ID


@strawberry.type
class RevokeApiTokenPayload:
    token: ApiToken | None
    user_errors: list[UserError]


@strawberry.enum(description="How a mutation ended.")
class AuditOutcome(enum.Enum):
    SUCCEEDED = strawberry.enum_value("SUCCEEDED", description="It did what it was asked.")
    REJECTED = strawberry.enum_value(
        "REJECTED", description="It answered with `userErrors` (bad input, wrong state, ...)."
    )
    DENIED = strawberry.enum_value(
        "DENIED", description="Access control or a rate limit refused it."
    )
    FAILED = strawberry.enum_value(
        "FAILED", description="An unexpected error; the server log has it under `requestId`."
    )


@strawberry.type(description="One mutation: who asked, what, when, and how it ended.")
class AuditEntry:
    id: strawberry.ID
    at: datetime
    actor: str | None = strawberry.field(
        description="The token's name (and the run, for a launch from a job); null without auth."
    )
    role: ApiTokenRole | None
    operation: str = strawberry.field(description="The mutation's name, e.g. `launchBackfill`.")
    subject: str | None = strawberry.field(description="What it was about: an id, a name, a job.")
    outcome: AuditOutcome
    codes: list[UserErrorCode] = strawberry.field(description="The codes of its `userErrors`.")
    message: str | None
    request_id: str | None
    run_id: strawberry.ID | None = strawberry.field(
        default=None,
        description="The run whose own credential made the request (its job's "
        "`context.client`); `actor` is then the token that launched the run's backfill.",
    )


@strawberry.type
class AuditEntryEdge:
    cursor: str
    node: AuditEntry


@strawberry.type
class AuditEntryConnection:
    edges: list[AuditEntryEdge]
    page_info: PageInfo

    @strawberry.field
    def nodes(self) -> list[AuditEntry]:
        return [e.node for e in self.edges]
