"""Server-side token commands: create, list and revoke API tokens, against the database."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated

import typer

from backfiller import ids
from backfiller.cli.app import app
from backfiller.cli.server import DatabaseOption, fail, prepare_database

if TYPE_CHECKING:
    from backfiller.storage.auth import TokenRepository

token_app = typer.Typer(
    help="Manage API tokens (server side: talks to the database, not to the API).",
    no_args_is_help=True,
)
app.add_typer(token_app, name="token")

ROLES = ("viewer", "operator", "admin")
DURATION = re.compile(r"^(\d+)([mhdw])$")
UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_expiry(text: str, now: datetime) -> datetime:
    """``30d``, ``12h``, ``90m``, ``2w``, or an ISO 8601 time (UTC when it names no zone)."""
    match = DURATION.match(text.strip())
    if match:
        amount, unit = int(match.group(1)), match.group(2)
        if amount <= 0:
            raise ValueError("the duration must be positive")
        return now + timedelta(**{UNITS[unit]: amount})
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is neither a duration (30d, 12h) nor an ISO time") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    if when <= now:
        raise ValueError("the expiry is in the past")
    return when


TeamOption = Annotated[
    str | None,
    typer.Option(
        "--team",
        help="The team the token belongs to: what it launches acts for this team (fair "
        "share, team limits).",
    ),
]


def _checked_team(team: str | None) -> str | None:
    if team is None:
        return None
    if not team.strip() or team != team.strip() or len(team) > 200:
        raise fail("--team must be 1 to 200 characters without surrounding spaces")
    if any(ord(c) < 32 or ord(c) == 127 for c in team):
        raise fail("--team must be printable")
    return team


@token_app.command("create")
def token_create(
    name: Annotated[str, typer.Option("--name", help="A name people recognize, e.g. ci-nightly.")],
    role: Annotated[
        str, typer.Option("--role", help="viewer (reads), operator (launches) or admin.")
    ] = "viewer",
    expires: Annotated[
        str | None,
        typer.Option("--expires", help="A duration (30d, 12h, 90m, 2w) or an ISO 8601 time."),
    ] = None,
    database: DatabaseOption = None,
    output_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    job: Annotated[
        list[str] | None,
        typer.Option(
            "--job",
            help="Limit the token to the backfills of this job or asset (one namespace); "
            "repeat for more.",
        ),
    ] = None,
    team: TeamOption = None,
) -> None:
    """Create a token and print it, once: only its hash is stored."""
    from backfiller.domain.roles import Role
    from backfiller.storage.auth import NewToken, TokenNameTaken

    now = datetime.now(UTC)
    name, expires_at, jobs = _checked_token_options(name, role, expires, job, now)
    team = _checked_team(team)
    url = prepare_database(database)
    new = NewToken(name, Role(role), expires_at, created_by="cli", jobs=jobs, team=team)
    try:
        record_id, secret = asyncio.run(_create(url, new, now))
    except TokenNameTaken:
        raise fail(f"an active token is already named {name!r}; revoke it first") from None
    _print_created(record_id, secret, name, role, expires_at, jobs, output_json)


def _checked_token_options(
    name: str, role: str, expires: str | None, job: list[str] | None, now: datetime
) -> tuple[str, datetime | None, frozenset[str] | None]:
    """The name, expiry and scope of a new token, or a usage error naming the bad option."""
    if role not in ROLES:
        raise fail(f"--role must be one of {', '.join(ROLES)}, not {role!r}")
    name = name.strip()
    if not name or len(name) > 200 or any(ord(c) < 32 for c in name):
        raise fail("--name must be 1 to 200 printable characters")
    try:
        expires_at = parse_expiry(expires, now) if expires else None
    except ValueError as exc:
        raise fail(f"--expires: {exc}") from None
    if job is not None and any(not j.strip() for j in job):
        raise fail("--job takes a job's name")
    return name, expires_at, frozenset(job) if job else None


def _print_created(
    record_id: int,
    secret: str,
    name: str,
    role: str,
    expires_at: datetime | None,
    jobs: frozenset[str] | None,
    output_json: bool,
) -> None:
    """The secret on stdout (alone, or in JSON), what was created on stderr."""
    if output_json:
        typer.echo(
            json.dumps(
                {
                    "id": ids.token_id(record_id),
                    "name": name,
                    "role": role,
                    "expiresAt": expires_at.isoformat() if expires_at else None,
                    "jobs": sorted(jobs) if jobs is not None else None,
                    "token": secret,
                }
            )
        )
        return
    typer.echo(secret)
    until = f", expires {expires_at.isoformat()}" if expires_at else ""
    typer.echo(
        f"created token tok_{record_id} {name!r} ({role}{until}). It is shown only now: "
        "send it as `Authorization: Bearer <token>`.",
        err=True,
    )


async def _create(url: str, new: object, now: datetime) -> tuple[int, str]:
    from backfiller.storage import Database
    from backfiller.storage.auth import NewToken, TokenRepository

    assert isinstance(new, NewToken)
    db = Database(url)
    try:
        async with db.write() as session:
            record, secret = await TokenRepository(session).add(new, now)
            return record.id, secret
    finally:
        await db.dispose()


@token_app.command("list")
def token_list(
    database: DatabaseOption = None,
    include_revoked: Annotated[bool, typer.Option("--all", help="Include revoked tokens.")] = False,
    output_json: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
) -> None:
    """List tokens (never their secrets)."""
    url = prepare_database(database)
    rows = asyncio.run(_list(url, include_revoked))
    now = datetime.now(UTC)
    for row in rows:
        state = "active"
        if row["revokedAt"]:
            state = "revoked"
        elif row["expiresAt"] and datetime.fromisoformat(str(row["expiresAt"])) <= now:
            state = "expired"
        row["state"] = state
        if output_json:
            typer.echo(json.dumps(row))
        else:
            typer.echo(
                f"{row['id']:<10} {row['name']:<30} {row['role']:<9} {state:<8} "
                f"{row['hint']}...  created {row['createdAt']}"
                + (f"  expires {row['expiresAt']}" if row["expiresAt"] else "")
                + (f"  team {row['team']}" if row["team"] else "")
            )


async def _list(url: str, include_revoked: bool) -> list[dict[str, object]]:
    from backfiller.storage import Database
    from backfiller.storage.auth import TokenRepository

    db = Database(url)
    found: list[dict[str, object]] = []
    try:
        async with db.read() as session:
            after: int | None = None
            while True:
                page = await TokenRepository(session).page(500, after, include_revoked)
                for r in page:
                    found.append(
                        {
                            "id": ids.token_id(r.id),
                            "name": r.name,
                            "role": r.role.value,
                            "hint": r.hint,
                            "createdAt": r.created_at.isoformat(),
                            "expiresAt": r.expires_at.isoformat() if r.expires_at else None,
                            "revokedAt": r.revoked_at.isoformat() if r.revoked_at else None,
                            "lastUsedAt": r.last_used_at.isoformat() if r.last_used_at else None,
                            "jobs": r.jobs,
                            "team": r.team,
                        }
                    )
                if len(page) < 500:
                    return found
                after = page[-1].id
    finally:
        await db.dispose()


@token_app.command("set-team")
def token_set_team(
    token: Annotated[str, typer.Argument(help="The token's id (tok_12) or its name.")],
    team: TeamOption = None,
    no_team: Annotated[bool, typer.Option("--none", help="Remove the token's team.")] = False,
    database: DatabaseOption = None,
) -> None:
    """Set (or with --none remove) the team of an active token. Backfills launched before keep
    the team they were launched for."""
    if (team is None) == (not no_team):
        raise fail("give either --team NAME or --none")
    team = _checked_team(team)
    url = prepare_database(database)
    changed = asyncio.run(_set_team(url, token, team))
    if changed is None:
        raise fail(f"no active token has id or name {token!r}", code=1)
    typer.echo(f"{changed}: team {team or '(none)'}")


async def _set_team(url: str, token: str, team: str | None) -> str | None:
    return await _on_active_token(url, token, lambda repo, pk: repo.set_team(pk, team))


@token_app.command("revoke")
def token_revoke(
    token: Annotated[str, typer.Argument(help="The token's id (tok_12) or its name.")],
    database: DatabaseOption = None,
) -> None:
    """Revoke a token at once: requests with it get 401 from now on."""
    url = prepare_database(database)
    revoked = asyncio.run(_revoke(url, token, datetime.now(UTC)))
    if revoked is None:
        raise fail(f"no active token has id or name {token!r}", code=1)
    typer.echo(f"revoked {revoked}")


async def _revoke(url: str, token: str, now: datetime) -> str | None:
    return await _on_active_token(url, token, lambda repo, pk: repo.revoke(pk, now))


async def _on_active_token(
    url: str, token: str, change: Callable[[TokenRepository, int], Awaitable[bool]]
) -> str | None:
    """Apply ``change`` to the active token of this id (tok_12) or name, in one transaction;
    the token's description, or None when no active token matches or the change did not hold."""
    from backfiller.ids import parse_token_id
    from backfiller.storage import Database
    from backfiller.storage.auth import TokenRepository

    db = Database(url)
    try:
        async with db.write() as session:
            repo = TokenRepository(session)
            pk = parse_token_id(token)
            record = await repo.get(pk) if pk is not None else None
            if record is None or record.revoked_at is not None:
                record = await repo.active_by_name(token)
            if record is None or not await change(repo, record.id):
                return None
            return f"tok_{record.id} {record.name!r}"
    finally:
        await db.dispose()
