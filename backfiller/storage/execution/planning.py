"""Planning: materializing a backfill's slots a window at a time, and the partitions' history."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, insert, select, update

from backfiller.domain import BackfillState, RunState, SkipReason, SlotState
from backfiller.storage.execution.common import (
    CHUNK,
    SessionRepository,
    changed,
    slots_t,
    states_t,
)
from backfiller.storage.prepared import Prepared
from backfiller.storage.records import BackfillRecord
from backfiller.storage.value_lists import DIALECTS, one_of_list

PLANNABLE = [BackfillState.REQUESTED, BackfillState.RUNNING]


@dataclass(frozen=True, slots=True)
class PlannedSlot:
    position: int
    partition_key: str
    skip_reason: SkipReason | None = None


class PlanningRepository(SessionRepository):
    async def plan_window(
        self, pk: int, expected_planned: int, slots: Sequence[PlannedSlot], now: datetime
    ) -> bool:
        """Materialize the slots of positions ``[expected_planned, +len(slots))``.

        Only while the backfill is REQUESTED or RUNNING and nobody planned these positions
        first; skipped partitions move from ``pending`` to ``skipped`` in the same update.
        """
        if not slots:
            return True
        skipped = sum(1 for s in slots if s.skip_reason is not None)
        result = await self.session.execute(
            update(BackfillRecord)
            .where(
                BackfillRecord.id == pk,
                BackfillRecord.planned == expected_planned,
                BackfillRecord.status.in_(PLANNABLE),
                BackfillRecord.pending >= skipped,
            )
            .values(
                planned=expected_planned + len(slots),
                pending=BackfillRecord.pending - skipped,
                skipped=BackfillRecord.skipped + skipped,
                updated_at=now,
                version=BackfillRecord.version + (1 if skipped else 0),
            )
            .execution_options(synchronize_session=False)
        )
        if not changed(result):
            return False
        await self.run_many(
            _INSERT_SLOTS,
            [
                {
                    "backfill_id": pk,
                    "position": s.position,
                    "partition_key": s.partition_key,
                    "status": SlotState.SKIPPED if s.skip_reason else SlotState.PENDING,
                    "attempts": 0,
                    "free_attempts": 0,
                    "lost_attempts": 0,
                    "skip_reason": s.skip_reason.value if s.skip_reason else None,
                    "next_attempt_at": None,
                    "updated_at": now,
                }
                for s in slots
            ],
        )
        return True

    async def latest_states(self, job_name: str, keys: Sequence[str]) -> dict[str, RunState]:
        """The latest run state of each of ``keys`` of ``job_name``, across all backfills."""
        found: dict[str, RunState] = {}
        for i in range(0, len(keys), CHUNK):
            rows = await self.rows_of(
                _LATEST_STATES[self.dialect], {"b_job": job_name, "b_keys": keys[i : i + CHUNK]}
            )
            found.update({k: RunState(s) for k, s in rows})
        return found


_INSERT_SLOTS = Prepared(insert(slots_t))
"""Built once: planning inserts a window of slots at a time."""
_LATEST_STATES = {
    dialect: Prepared(
        select(states_t.c.partition_key, states_t.c.status).where(
            states_t.c.job_name == bindparam("b_job"),
            one_of_list(dialect, states_t.c.partition_key, "b_keys"),
        )
    )
    for dialect in DIALECTS
}
"""Built once per dialect: every claim that may skip partitions reads their states."""
