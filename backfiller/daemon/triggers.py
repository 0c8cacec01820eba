"""The daemon's trigger tick: evaluate the triggers whose interval has come.

A trigger with ``interval_seconds`` that is enabled is due when its stored
``next_evaluation_at`` has passed (a new trigger is due at once). The tick claims each due
trigger with a conditional update that moves ``next_evaluation_at`` one interval past now, so
two daemons never evaluate one interval twice, then evaluates the claimed ones concurrently,
each in its own thread with its own time limit. A trigger that raises or runs past its limit
is recorded FAILED and the tick carries on; the cursor and the schedule live in the database,
so they survive daemon restarts.

Evaluation goes through :func:`backfiller.resolvers.triggers.evaluate_trigger_now`: the one
place that turns what a trigger returns into backfills, with the same validation as
``launchBackfill``.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import timedelta

from backfiller.definitions.triggers import TriggerDefinition
from backfiller.resolvers.context import Services
from backfiller.resolvers.triggers import evaluate_trigger_now, trigger_definitions
from backfiller.storage.trigger_records import TriggerOutcome
from backfiller.storage.triggers import TriggerStateRepository

logger = logging.getLogger("backfiller.daemon.triggers")

DAEMON_ACTOR = "daemon"


@dataclass
class TriggerTickReport:
    """What one trigger tick did."""

    evaluated: dict[str, TriggerOutcome] = field(default_factory=dict)
    not_due: int = 0
    disabled: int = 0
    lost_claims: int = 0
    errors: int = 0


async def _claim(services: Services, definition: TriggerDefinition) -> str:
    """``"claimed"``, ``"not_due"``, ``"disabled"`` or ``"lost"``."""
    interval = definition.interval_seconds
    assert interval is not None
    now = services.clock()
    async with services.database.write() as session:
        states = TriggerStateRepository(session)
        state = await states.ensure(definition.name, interval, now)
        if not state.enabled:
            return "disabled"
        due = state.next_evaluation_at
        if state.interval_seconds != interval:
            # The definitions changed the interval: follow it from now on.
            due = now if due is None else min(due, now + timedelta(seconds=interval))
            await states.set_interval(definition.name, interval, due, now)
        if due is not None and due > now:
            return "not_due"
        claimed = await states.claim_due(
            definition.name, due, now + timedelta(seconds=interval), now
        )
    return "claimed" if claimed else "lost"


async def tick_triggers(services: Services) -> TriggerTickReport:
    """Evaluate every enabled interval trigger that is due; returns what happened.

    Never raises for a trigger's fault. Tests call it directly with a frozen clock.
    """
    report = TriggerTickReport()
    due: list[TriggerDefinition] = []
    for definition in trigger_definitions(services):
        if definition.interval_seconds is None:
            continue
        match await _claim(services, definition):
            case "claimed":
                due.append(definition)
            case "not_due":
                report.not_due += 1
            case "disabled":
                report.disabled += 1
            case _:
                report.lost_claims += 1
    results = await asyncio.gather(
        *(evaluate_trigger_now(services, d, actor=DAEMON_ACTOR, dry_run=False) for d in due),
        return_exceptions=True,
    )
    for definition, result in zip(due, results, strict=True):
        if isinstance(result, BaseException):
            if not isinstance(result, Exception):
                raise result
            report.errors += 1
            logger.error("evaluating trigger %s failed", definition.name, exc_info=result)
        else:
            report.evaluated[definition.name] = result.outcome
    return report
