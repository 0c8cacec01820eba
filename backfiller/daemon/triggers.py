"""The daemon's trigger tick: evaluate the triggers whose interval or cron tick has come.

A trigger with ``interval_seconds`` that is enabled is due when its stored
``next_evaluation_at`` has passed (a new trigger is due at once). The tick claims each due
trigger with a conditional update that moves ``next_evaluation_at`` one interval past now, so
two daemons never evaluate one interval twice. A ``cron`` trigger's ``next_evaluation_at`` is
its oldest unclaimed tick (a new one waits for its first tick); a claim moves it past the tick
it evaluates, chosen by its catch-up policy
(:func:`backfiller.services.trigger_schedules.plan_cron_claim`), so each tick is evaluated
once whatever the number of daemons. The tick evaluates the claimed triggers concurrently,
each in its own thread with its own time limit. A trigger that raises or runs past its limit
is recorded FAILED and the tick carries on; the cursor and the schedule live in the database,
so they survive daemon restarts.

Two entry points:

- :func:`tick_triggers` evaluates what is due and waits for the outcomes (tests call it
  directly with a frozen clock);
- :class:`TriggerRunner` is what the daemon's loop runs: its ``tick`` starts the due
  evaluations in the background and returns at once, so a slow trigger never holds up
  planning and launching runs (the loop runs its tasks one at a time).

Evaluation goes through :func:`backfiller.services.trigger_evaluation.evaluate_trigger_now`:
the one place that turns what a trigger returns into backfills, through the launch service
that ``launchBackfill`` uses too. The daemon imports no GraphQL.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Literal

from backfiller.config import Settings
from backfiller.definitions.loading import Definitions
from backfiller.definitions.schedules import CatchUp
from backfiller.definitions.triggers import TriggerDefinition
from backfiller.services.backend import Backend
from backfiller.services.trigger_context import client_factory_for
from backfiller.services.trigger_evaluation import evaluate_trigger_now, trigger_definitions
from backfiller.services.trigger_schedules import (
    ensure_state,
    plan_cron_claim,
    restart_schedule,
)
from backfiller.storage import Database
from backfiller.storage.trigger_records import TriggerEvaluationRecord, TriggerOutcome
from backfiller.storage.triggers import TriggerStateRepository

if TYPE_CHECKING:
    from backfiller.client import Client  # httpx: loaded when a trigger asks for its client

logger = logging.getLogger("backfiller.daemon.triggers")

DAEMON_ACTOR = "daemon"
TICK_SECONDS = 1.0

Claim = Literal["claimed", "not_due", "disabled", "lost", "passed_over"]


@dataclass
class TriggerTickReport:
    """What one trigger tick did."""

    evaluated: dict[str, TriggerOutcome] = field(default_factory=dict)
    started: list[str] = field(default_factory=list)
    not_due: int = 0
    disabled: int = 0
    lost_claims: int = 0
    passed_over: int = 0
    still_running: int = 0
    errors: int = 0

    @property
    def busy(self) -> bool:
        """Triggers keep their own schedule: the daemon's loop need not hurry for them."""
        return False


@dataclass(frozen=True, slots=True)
class Claimed:
    """A claim won: evaluate ``definition`` for the tick ``scheduled_at``."""

    definition: TriggerDefinition
    scheduled_at: datetime


async def claim_due(
    services: Backend, definition: TriggerDefinition
) -> tuple[Claim, datetime | None]:
    """Whether this caller gets to evaluate ``definition`` now (a conditional update), and
    for which tick."""
    if definition.schedule is not None:
        return await _claim_cron(services, definition)
    interval = definition.interval_seconds
    assert interval is not None
    now = services.clock()
    async with services.database.write() as session:
        states = TriggerStateRepository(session)
        state = await ensure_state(states, definition, now)
        if not state.enabled:
            return "disabled", None
        due = state.next_evaluation_at
        if state.interval_seconds != interval:
            # The definitions changed the interval: follow it from now on.
            due = now if due is None else min(due, now + timedelta(seconds=interval))
            await states.set_interval(definition.name, interval, due, now)
        if due is not None and due > now:
            return "not_due", None
        claimed = await states.claim_due(
            definition.name, due, now + timedelta(seconds=interval), now
        )
    return ("claimed", due or now) if claimed else ("lost", None)


async def _claim_cron(
    services: Backend, definition: TriggerDefinition
) -> tuple[Claim, datetime | None]:
    """Claim the tick of a cron trigger that its catch-up policy evaluates now."""
    schedule = definition.schedule
    assert schedule is not None
    now = services.clock()
    async with services.database.write() as session:
        states = TriggerStateRepository(session)
        state = await ensure_state(states, definition, now)
        if not state.enabled:
            return "disabled", None
        due = state.next_evaluation_at
        if state.schedule != schedule.key or due is None:
            # New to cron, or the expression or zone changed: start from the next tick.
            await restart_schedule(states, definition, state, now)
            return "not_due", None
        if due > now:
            return "not_due", None
    # Which tick, computed outside the transaction; the claim stands only if no one moved
    # the trigger's next tick meanwhile.
    plan = plan_cron_claim(definition, due, now)
    async with services.database.write() as session:
        claimed = await TriggerStateRepository(session).claim_due(
            definition.name, due, plan.next_at, now
        )
    if not claimed:
        return "lost", None
    if plan.passed_over:
        logger.warning(
            "trigger %s: ticks missed from %s on passed over (catch_up=%s)",
            definition.name,
            due.isoformat(),
            definition.catch_up.value,
        )
    if plan.scheduled_at is None:
        return "passed_over", None
    return "claimed", plan.scheduled_at


async def _claim_all(services: Backend, report: TriggerTickReport, skip: set[str]) -> list[Claimed]:
    due: list[Claimed] = []
    for definition in trigger_definitions(services):
        if not definition.scheduled:
            continue
        if definition.name in skip:
            report.still_running += 1
            continue
        claim, scheduled_at = await claim_due(services, definition)
        match claim:
            case "claimed":
                assert scheduled_at is not None
                due.append(Claimed(definition, scheduled_at))
            case "not_due":
                report.not_due += 1
            case "disabled":
                report.disabled += 1
            case "lost":
                report.lost_claims += 1
            case "passed_over":
                report.passed_over += 1
    return due


async def evaluate_claimed(
    services: Backend,
    claimed: Claimed,
    client_factory: Callable[[], Client] | None,
) -> TriggerEvaluationRecord:
    """Evaluate a claimed tick. A cron trigger catching up ``all`` then claims and evaluates
    its next missed ticks, one after the other, until it has caught up (another daemon may
    take some of them: each is claimed once). Returns the last evaluation."""
    definition = claimed.definition
    record = await evaluate_trigger_now(
        services,
        definition,
        actor=DAEMON_ACTOR,
        dry_run=False,
        client_factory=client_factory,
        scheduled_at=claimed.scheduled_at,
    )
    while definition.schedule is not None and definition.catch_up is CatchUp.ALL:
        claim, scheduled_at = await claim_due(services, definition)
        if claim != "claimed" or scheduled_at is None:
            break
        record = await evaluate_trigger_now(
            services,
            definition,
            actor=DAEMON_ACTOR,
            dry_run=False,
            client_factory=client_factory,
            scheduled_at=scheduled_at,
        )
    return record


async def tick_triggers(
    services: Backend, client_factory: Callable[[], Client] | None = None
) -> TriggerTickReport:
    """Evaluate every enabled interval trigger that is due, and wait for the outcomes.

    Never raises for a trigger's fault.
    """
    report = TriggerTickReport()
    due = await _claim_all(services, report, set())
    results = await asyncio.gather(
        *(evaluate_claimed(services, c, client_factory) for c in due),
        return_exceptions=True,
    )
    for claimed, result in zip(due, results, strict=True):
        name = claimed.definition.name
        if isinstance(result, BaseException):
            if not isinstance(result, Exception):
                raise result
            report.errors += 1
            logger.error("evaluating trigger %s failed", name, exc_info=result)
        else:
            report.evaluated[name] = result.outcome
    return report


class TriggerRunner:
    """Runs interval triggers inside the daemon without ever blocking its loop.

    Args:
        database, definitions, clock: those of the daemon.
        api_url: Where the service answers, for ``context.client`` (default: the
            ``BACKFILLER_URL`` or ``BACKFILLER_PUBLIC_URL`` environment variable).
        token: The token of that client (default: ``BACKFILLER_TOKEN``).

    Example:
        >>> daemon.loop.every(TICK_SECONDS, "triggers", TriggerRunner(db, defs, clock).tick)
        ... # doctest: +SKIP
    """

    def __init__(
        self,
        database: Database,
        definitions: Definitions,
        clock: Callable[[], datetime],
        api_url: str | None = None,
        token: str | None = None,
        settings: Settings | None = None,
    ) -> None:
        settings = settings or Settings.from_env()
        self.services = Backend(
            database=database, definitions=definitions, settings=settings, clock=clock
        )
        url = api_url or os.environ.get("BACKFILLER_URL") or settings.public_url
        self.client_factory = client_factory_for(
            url, token or os.environ.get("BACKFILLER_TOKEN") or None
        )
        self.running: dict[str, asyncio.Task[object]] = {}

    def _reap(self, report: TriggerTickReport) -> None:
        for name, task in list(self.running.items()):
            if not task.done():
                continue
            del self.running[name]
            if task.cancelled():
                continue
            error = task.exception()
            if error is not None:
                report.errors += 1
                logger.error("evaluating trigger %s failed", name, exc_info=error)

    async def tick(self) -> TriggerTickReport:
        """Start the evaluations that are due; return without waiting for them."""
        report = TriggerTickReport()
        self._reap(report)
        for claimed in await _claim_all(self.services, report, set(self.running)):
            name = claimed.definition.name
            self.running[name] = asyncio.create_task(
                evaluate_claimed(self.services, claimed, self.client_factory),
                name=f"trigger {name}",
            )
            report.started.append(name)
        return report

    async def wait(self) -> None:
        """Wait for the evaluations in flight (each ends within its time limit)."""
        if self.running:
            await asyncio.gather(*self.running.values(), return_exceptions=True)
        self._reap(TriggerTickReport())
