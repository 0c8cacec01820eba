"""Records of triggers: their persisted state (enabled, cursor, schedule) and every evaluation."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, Enum, Float, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from backfiller.storage.base import Base, BigId


class TriggerOutcome(enum.StrEnum):
    """How an evaluation ended (stored; mapped to the public enum by the resolvers)."""

    LAUNCHED = "launched"
    SKIPPED = "skipped"
    FAILED = "failed"


_OUTCOME = Enum(
    TriggerOutcome,
    native_enum=False,
    create_constraint=False,
    length=32,
    values_callable=lambda e: [m.value for m in e],
)


class TriggerStateRecord(Base):
    """The persisted state of one trigger, created on its first evaluation or toggle.

    ``cursor_version`` grows on every cursor write, so a cursor is only saved by an
    evaluation that read the latest one (a conditional update). ``next_evaluation_at`` is
    claimed by a conditional update too, so two daemons never evaluate one interval twice.
    For a cron trigger it is the oldest tick not yet claimed, and ``schedule`` names the
    cron expression and zone it follows (a change of either restarts the schedule from now).
    """

    __tablename__ = "trigger_states"

    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    cursor: Mapped[str | None] = mapped_column(Text)
    cursor_version: Mapped[int] = mapped_column(Integer, default=0)
    interval_seconds: Mapped[float | None] = mapped_column(Float)
    next_evaluation_at: Mapped[datetime | None]
    last_evaluation_at: Mapped[datetime | None]
    updated_at: Mapped[datetime]
    schedule: Mapped[str | None] = mapped_column(String(300))


class TriggerEvaluationRecord(Base):
    """One evaluation of a trigger and its outcome.

    ``error_traceback`` is the user's traceback: kept here for the operators, never served.
    ``requests`` holds what the trigger returned, each with its preview, its problems and the
    backfill it launched: private, versioned JSON written and read by
    ``backfiller.services.trigger_requests`` (the resolvers translate it to public types).
    """

    __tablename__ = "trigger_evaluations"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    trigger_name: Mapped[str] = mapped_column(String(200))
    outcome: Mapped[TriggerOutcome] = mapped_column(_OUTCOME)
    skip_reason: Mapped[str | None] = mapped_column(Text)
    error_message: Mapped[str | None] = mapped_column(Text)
    error_traceback: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[datetime]
    evaluated_at: Mapped[datetime]
    duration_seconds: Mapped[float] = mapped_column(Float)
    actor: Mapped[str | None] = mapped_column(String(200))
    dry_run: Mapped[bool] = mapped_column(Boolean, default=False)
    # The tick it stands for, when the daemon evaluated it on its schedule.
    scheduled_at: Mapped[datetime | None]
    backfill_ids: Mapped[list[Any]] = mapped_column(JSON, default=list)
    requests: Mapped[list[Any]] = mapped_column(JSON, default=list)

    __table_args__ = (
        Index("ix_trigger_evaluations_trigger_name_id", "trigger_name", "id"),
        # Retention finds the evaluations past their keeping (``storage.retention``).
        Index("ix_trigger_evaluations_evaluated_at", "evaluated_at"),
    )


class TriggerLatestEvaluationRecord(Base):
    """The newest evaluation of each trigger, kept as evaluations are added: the triggers page
    reads one row per trigger instead of looking for the newest among all evaluations, and
    retention keeps the evaluation named here whatever its age."""

    __tablename__ = "trigger_latest_evaluations"

    trigger_name: Mapped[str] = mapped_column(String(200), primary_key=True)
    evaluation_id: Mapped[int] = mapped_column(BigInteger)
