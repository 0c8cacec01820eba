"""Runs a pause took back before they executed leave no record (on PostgreSQL).

A run that ends ``NOT_STARTED`` while its backfill is PAUSED (its launcher withdrew it, or its
start gate refused it, because of the pause) never executed: its partition goes back to
PENDING with no budget spent (``domain.retries``). Beyond that, its row is deleted, its slot's
attempt is given back (the next claim's run has the attempt number this one had, under a new
run id: the fencing token ``(run_id, attempt)`` never names two runs) and the partition's
latest state (``partition_states``) goes back to the run before it. A pause therefore leaves
no CANCELED run per run it took back, however often the backfill is paused and resumed.

Other runs taken back keep their record, CANCELED with what took them back (a worker that
died holding them, a takeover that found they never reached a worker): those say something
happened. So does a run of a backfill being canceled: it is recorded CANCELED, as is its
partition.

On SQLite a run taken back by a pause is recorded CANCELED too: SQLite gives the largest id of
a table again once its row is deleted, so a message still on a broker about the run taken back
(a task the Celery launcher withdrew) could name a new run. PostgreSQL's ids come from a
sequence and are never given twice.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, exists, select, update

from backfiller.domain import BackfillState, RunFinished, SlotState
from backfiller.domain.retries import Budget, Ending, SoFar, decide_end, recorded_as
from backfiller.storage.execution.common import (
    ACTIVE,
    Moves,
    one_of,
    runs_t,
    slots_t,
    states_t,
    unindexed,
)
from backfiller.storage.prepared import Prepared


def leaves_no_record(dialect: str, end: RunFinished, r: Any, budget: Budget, backfill: Any) -> bool:
    """Whether ``end`` of the active run ``r`` takes it back without a trace (see above)."""
    if dialect == "sqlite" or backfill is not BackfillState.PAUSED:
        return False
    if recorded_as(end.outcome)[2] is not Ending.NOT_STARTED:
        return False
    so_far = SoFar(int(r.attempts), int(r.free_attempts), int(r.lost_attempts))
    decision = decide_end(Ending.NOT_STARTED, so_far, budget, backfill)
    return decision.slot is SlotState.PENDING


def take_back(rows: list[dict[str, Any]], moves: Moves, r: Any, owner: str) -> None:
    """Plan the removal of the active run row ``r`` (a ranged run's rows each)."""
    slot_status = SlotState(r.slot_status)
    rows.append(
        {
            "b_id": int(r.id),
            "b_backfill": int(r.backfill_id),
            "b_owner": owner,
            "b_slot": int(r.slot_id),
            "b_old": slot_status,
            "b_job": r.job_name,
            "b_key": r.partition_key,
        }
    )
    moves.move(int(r.backfill_id), slot_status, SlotState.PENDING)


async def write_take_backs(repo: Any, rows: list[dict[str, Any]], now: datetime) -> None:
    """Delete the runs taken back, give their slots back, restore their partitions' states
    (``repo``: a ``SessionRepository``, in its transaction)."""
    if not rows:
        return
    keys = ("b_id", "b_backfill", "b_owner")
    await repo.run_many(_DELETE_RUNS, [{k: row[k] for k in keys} for row in rows])
    slots = [
        {k: row[k] for k in ("b_slot", "b_backfill", "b_old")} | {"b_now": now} for row in rows
    ]
    await repo.run_many(_GIVE_BACK_SLOTS, slots)
    states = [{"b_id": row["b_id"], "b_job": row["b_job"], "b_key": row["b_key"]} for row in rows]
    await repo.run_many(_FORGET_STATES, states)
    await repo.run_many(_RESTORE_STATES, [{**s, "b_now": now} for s in states])


_DELETE_RUNS = Prepared(
    delete(runs_t).where(
        runs_t.c.id == bindparam("b_id"),
        runs_t.c.backfill_id == bindparam("b_backfill"),  # its partition, on PostgreSQL
        one_of(unindexed(runs_t.c.status), ACTIVE),
        runs_t.c.lease_owner == bindparam("b_owner"),
    )
)
_GIVE_BACK_SLOTS = Prepared(
    update(slots_t)
    .where(
        slots_t.c.id == bindparam("b_slot"),
        slots_t.c.backfill_id == bindparam("b_backfill"),
        unindexed(slots_t.c.status) == bindparam("b_old"),
    )
    .values(
        status=SlotState.PENDING,
        attempts=slots_t.c.attempts - 1,
        next_attempt_at=None,
        updated_at=bindparam("b_now"),
    )
)
_SAME_PARTITION = (runs_t.c.job_name == states_t.c.job_name) & (
    runs_t.c.partition_key == states_t.c.partition_key
)
_OF_THE_RUN = (
    (states_t.c.job_name == bindparam("b_job"))
    & (states_t.c.partition_key == bindparam("b_key"))
    & (states_t.c.run_id == bindparam("b_id"))
)
_FORGET_STATES = Prepared(delete(states_t).where(_OF_THE_RUN, ~exists().where(_SAME_PARTITION)))
"""A partition whose only run was taken back has no state (it never ran)."""
_LATEST = select(runs_t.c.id).where(_SAME_PARTITION).order_by(runs_t.c.id.desc()).limit(1)
_RESTORE_STATES = Prepared(
    update(states_t)
    .where(_OF_THE_RUN)
    .values(
        run_id=_LATEST.scalar_subquery(),
        status=select(runs_t.c.status)
        .where(_SAME_PARTITION)
        .order_by(runs_t.c.id.desc())
        .limit(1)
        .scalar_subquery(),
        updated_at=bindparam("b_now"),
    )
)
"""Else its state is its latest run's again."""
