"""The daemon's schedule of a trigger as stored: its state's first tick, and which tick a claim
of a cron trigger evaluates under its catch-up policy.

A trigger's state holds ``next_evaluation_at``: for a cron trigger, the oldest tick not yet
claimed. A claim moves it forward with a conditional update (see
:class:`backfiller.storage.triggers.TriggerStateRepository`), so whatever the number of
daemons, each tick is claimed once. :func:`plan_cron_claim` decides, from that tick and the
time now, which tick the claim evaluates and where the schedule goes next:

- ``latest``: the latest tick that has come; the older ones missed are passed over;
- ``all``: the oldest tick not yet evaluated (of the latest ``MAX_CATCH_UP`` that have come),
  then the next one on the next claim, in order;
- ``none``: the latest tick if it is on time (``ON_TIME_SECONDS``), else nothing: the missed
  ticks are passed over and the schedule waits for the next one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from backfiller.definitions.schedules import MAX_CATCH_UP, ON_TIME_SECONDS, CatchUp
from backfiller.definitions.triggers import TriggerDefinition
from backfiller.storage.trigger_records import TriggerStateRecord
from backfiller.storage.triggers import TriggerStateRepository

MAX_FIRE_TIMES = 100
"""Most upcoming fire times the API lists at once (``Trigger.nextFireTimes``)."""


async def ensure_state(
    states: TriggerStateRepository, definition: TriggerDefinition, now: datetime
) -> TriggerStateRecord:
    """The stored state of ``definition``, inserted when missing: an interval trigger is due
    at once, a cron trigger at its first tick after ``now``."""
    schedule = definition.schedule
    if schedule is None:
        return await states.ensure(definition.name, definition.interval_seconds, now)
    return await states.ensure(
        definition.name, None, now, schedule=schedule.key, first_at=schedule.next_after(now)
    )


async def restart_schedule(
    states: TriggerStateRepository,
    definition: TriggerDefinition,
    state: TriggerStateRecord,
    now: datetime,
) -> bool:
    """Follow a cron trigger's schedule from its next tick after ``now`` (a new or changed
    schedule, or a trigger enabled again: the ticks before are not caught up)."""
    schedule = definition.schedule
    assert schedule is not None
    return await states.set_schedule(
        definition.name, schedule.key, state.next_evaluation_at, schedule.next_after(now), now
    )


@dataclass(frozen=True, slots=True)
class CronClaim:
    """What one claim of a cron trigger does.

    Attributes:
        scheduled_at: The tick to evaluate; None: nothing to evaluate (``none`` after a gap).
        next_at: The trigger's next tick after this claim (None: it never fires again).
        passed_over: Whether ticks that came are never evaluated.
    """

    scheduled_at: datetime | None
    next_at: datetime | None
    passed_over: bool


def plan_cron_claim(definition: TriggerDefinition, due: datetime, now: datetime) -> CronClaim:
    """Which tick a claim of ``definition`` evaluates, its oldest unclaimed tick being ``due``
    (at or before ``now``)."""
    schedule = definition.schedule
    assert schedule is not None
    policy = definition.catch_up
    keep = MAX_CATCH_UP if policy is CatchUp.ALL else 1
    ticks, left_out, after = schedule.latest_ticks(due, now, keep)
    if not ticks:
        return CronClaim(None, after, False)
    match policy:
        case CatchUp.ALL:
            following = ticks[1] if len(ticks) > 1 else after
            return CronClaim(ticks[0], following, left_out)
        case CatchUp.NONE:
            latest = ticks[-1]
            if (now - latest).total_seconds() <= ON_TIME_SECONDS:
                return CronClaim(latest, after, left_out)
            return CronClaim(None, after, True)
        case _:
            return CronClaim(ticks[-1], after, left_out)


def next_fire_times(definition: TriggerDefinition, after: datetime, count: int) -> list[datetime]:
    """The next ``count`` (at most :data:`MAX_FIRE_TIMES`) ticks of a cron trigger after
    ``after``; empty for a trigger without cron."""
    if definition.schedule is None:
        return []
    return definition.schedule.fire_times_after(after, min(count, MAX_FIRE_TIMES))


__all__ = [
    "MAX_FIRE_TIMES",
    "CronClaim",
    "ensure_state",
    "next_fire_times",
    "plan_cron_claim",
    "restart_schedule",
]
