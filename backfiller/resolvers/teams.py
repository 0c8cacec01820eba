"""Resolvers of teams: their limits on runs in flight (admin only), and a team name's rules."""

from __future__ import annotations

from backfiller.resolvers.commands import user_error
from backfiller.resolvers.context import Info
from backfiller.schema.admin import SetTeamLimitInput, SetTeamLimitPayload, TeamLimit
from backfiller.schema.common import UserError, UserErrorCode
from backfiller.storage.teams import MAX_TEAM_NAME, TeamLimitRecord, TeamRepository

MAX_TEAM_RUNS = 100_000


def team_name_errors(team: str | None, field: list[str]) -> list[UserError]:
    """A team is named by 1 to 200 printable characters without surrounding spaces."""
    if team is None:
        return []
    if (
        not team.strip()
        or team != team.strip()
        or len(team) > MAX_TEAM_NAME
        or any(ord(c) < 32 or ord(c) == 127 for c in team)
    ):
        message = f"a team is 1 to {MAX_TEAM_NAME} printable characters, without surrounding spaces"
        return [user_error(UserErrorCode.INVALID_ARGUMENT, message, field)]
    return []


def team_limit_from_record(record: TeamLimitRecord) -> TeamLimit:
    assert record.max_concurrent_runs is not None
    return TeamLimit(
        team=record.team,
        max_concurrent_runs=record.max_concurrent_runs,
        updated_at=record.updated_at,
        updated_by=record.updated_by,
    )


async def team_limits(info: Info) -> list[TeamLimit]:
    async with info.context.database.read() as session:
        records = await TeamRepository(session).limit_records()
    return [team_limit_from_record(r) for r in records if r.max_concurrent_runs is not None]


async def set_team_limit(info: Info, input: SetTeamLimitInput) -> SetTeamLimitPayload:
    ctx = info.context
    errors = team_name_errors(input.team, ["team"])
    limit = input.max_concurrent_runs
    if limit is not None and not 1 <= limit <= MAX_TEAM_RUNS:
        message = f"must be between 1 and {MAX_TEAM_RUNS}, or null to remove the limit"
        errors.append(user_error(UserErrorCode.INVALID_ARGUMENT, message, ["maxConcurrentRuns"]))
    if errors:
        return SetTeamLimitPayload(team_limit=None, user_errors=errors)
    async with ctx.database.write() as session:
        record = await TeamRepository(session).set_limit(input.team, limit, ctx.now(), ctx.actor)
    return SetTeamLimitPayload(
        team_limit=team_limit_from_record(record) if record is not None else None,
        user_errors=[],
    )


__all__ = ["MAX_TEAM_RUNS", "set_team_limit", "team_limits", "team_name_errors"]
