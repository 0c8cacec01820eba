"""How the daemon shares free room between running backfills: priority, then team, then
backfill (pure; ``daemon/ticks.py`` applies it each tick).

The rule, one run at a time (docs/execution.md, "Priority and fair share"):

1. **Priority level.** Each priority with work has a weight ``2 ** (priority - lowest)``
   (the difference capped at :data:`MAX_WEIGHT_SHIFT`). The next run goes to the level with
   the fewest runs in flight per weight, so a level of weight 4 keeps about four times the
   runs of a level of weight 1.
2. **Team**, within the level: the team with the fewest runs in flight at that level, so
   teams share a level's room evenly (a team at its own limit takes none).
3. **Backfill**, within the team and level: the fewest runs in flight.

Ties go to the one that has waited longest (its backfill's oldest change), then to the higher
priority, then to the older backfill. Starvation is impossible by construction: a level, team
or backfill with work and no run in flight has the least possible share (0) and so comes
before every one that has runs in flight; among those with none, the one that waited longest
comes first, so each gets its turn however many there are.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

MIN_PRIORITY = -1000
MAX_PRIORITY = 1000
"""The priorities a launch or a job may name (0 by default)."""
MAX_WEIGHT_SHIFT = 10
"""A priority level weighs at most ``2 ** 10`` times the lowest level with work."""

Team = str | None


@dataclass(frozen=True, slots=True)
class Contender:
    """A running backfill that could take runs now."""

    key: int
    """Its id."""
    team: Team
    priority: int
    active: int
    """Its runs in flight now (queued and running)."""
    wants: int
    """The most runs it could take now (its pending work within its own limit)."""
    waited_since: float = 0.0
    """When it last changed (seconds, any origin): the older, the longer it has waited."""


def level_weight(priority: int, lowest: int) -> int:
    """The weight of a priority level, when ``lowest`` is the lowest level with work."""
    return 1 << min(MAX_WEIGHT_SHIFT, max(0, priority - lowest))


def share_room(
    contenders: Iterable[Contender],
    room: int,
    *,
    team_active: Mapping[Team, int] | None = None,
    team_limits: Mapping[Team, int | None] | None = None,
    default_team_limit: int | None = None,
) -> dict[int, int]:
    """How many of ``room`` runs each contender gets now (only those that get some).

    ``team_active``: each team's runs in flight across all its backfills (those that are no
    contender too); a team's own contenders' ``active`` is used when it is missing.
    ``team_limits``: a team's cap on runs in flight (None or absent: ``default_team_limit``,
    None: no cap).
    """
    everyone = [c for c in contenders if c.wants > 0]
    if room <= 0 or not everyone:
        return {}
    lowest = min(c.priority for c in everyone)
    team_room = _team_room(everyone, team_active, team_limits or {}, default_team_limit)
    # Runs in flight and work left per level, per (level, team) and per backfill.
    level_active: dict[int, int] = defaultdict(int)
    pair_active: dict[tuple[int, Team], int] = defaultdict(int)
    waited: dict[tuple[int, Team], float] = {}
    members: dict[tuple[int, Team], list[Contender]] = defaultdict(list)
    for c in everyone:
        level_active[c.priority] += c.active
        pair = (c.priority, c.team)
        pair_active[pair] += c.active
        members[pair].append(c)
        waited[pair] = min(waited.get(pair, c.waited_since), c.waited_since)
    given: dict[int, int] = defaultdict(int)
    left = {c.key: c.wants for c in everyone}
    # One heap of backfills per (level, team): fewest in flight, then waited longest.
    heaps: dict[tuple[int, Team], list[tuple[int, float, int, Contender]]] = {}
    for pair, found in members.items():
        heap = [(c.active, c.waited_since, c.key, c) for c in found]
        heapq.heapify(heap)
        heaps[pair] = heap
    while room > 0 and heaps:
        pair = _next_pair(heaps, level_active, pair_active, waited, lowest)
        if team_room[pair[1]] <= 0:
            del heaps[pair]
            continue
        heap = heaps[pair]
        active, since, key, c = heapq.heappop(heap)
        given[key] += 1
        left[key] -= 1
        room -= 1
        team_room[c.team] -= 1
        level_active[c.priority] += 1
        pair_active[pair] += 1
        if left[key] > 0:
            heapq.heappush(heap, (active + 1, since, key, c))
        if not heap:
            del heaps[pair]
    return dict(given)


def _team_room(
    everyone: list[Contender],
    team_active: Mapping[Team, int] | None,
    limits: Mapping[Team, int | None],
    default_team_limit: int | None,
) -> dict[Team, float]:
    """How many more runs each team's limit admits now (infinite without a limit)."""
    in_team: dict[Team, int] = defaultdict(int)
    if team_active is not None:
        in_team.update(team_active)
    else:
        for c in everyone:
            in_team[c.team] += c.active
    room: dict[Team, float] = {}
    for c in everyone:
        if c.team not in room:
            cap = limits.get(c.team, default_team_limit)
            room[c.team] = float("inf") if cap is None else max(0, cap - in_team[c.team])
    return room


def _next_pair(
    heaps: Mapping[tuple[int, Team], object],
    level_active: Mapping[int, int],
    pair_active: Mapping[tuple[int, Team], int],
    waited: Mapping[tuple[int, Team], float],
    lowest: int,
) -> tuple[int, Team]:
    """The (level, team) that takes the next run: the level with the fewest runs in flight
    per weight, then in it the team with the fewest runs in flight (ties: waited longest,
    then higher priority)."""
    levels: dict[int, float] = {}
    for level, _team in heaps:
        if level not in levels:
            levels[level] = min(waited[p] for p in heaps if p[0] == level)

    def level_order(level: int) -> tuple[float, float, int]:
        return (level_active[level] / level_weight(level, lowest), levels[level], -level)

    level = min(levels, key=level_order)
    return min(
        (p for p in heaps if p[0] == level),
        key=lambda p: (pair_active[p], waited[p], str(p[1])),
    )


__all__ = [
    "MAX_PRIORITY",
    "MAX_WEIGHT_SHIFT",
    "MIN_PRIORITY",
    "Contender",
    "Team",
    "level_weight",
    "share_room",
]
