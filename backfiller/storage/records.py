"""SQLAlchemy 2 records of backfills and their execution. Private: the public GraphQL types are
translated from these. ``Base`` and the column types live in ``base``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from backfiller.domain import (
    BackfillKind,
    BackfillState,
    FailureReason,
    Order,
    Reprocess,
    RunState,
    SelectionKind,
    SlotState,
)
from backfiller.storage.base import Base, BigId, table_of


class BackfillRecord(Base):
    """One backfill: the selection as asked, never an expanded partition list."""

    __tablename__ = "backfills"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    kind: Mapped[BackfillKind] = mapped_column(server_default=BackfillKind.JOB.value)
    # The job of a JOB backfill; empty for an ASSETS one (its target is ``asset_target``).
    job_name: Mapped[str] = mapped_column(String(200))
    selection_kind: Mapped[SelectionKind]
    range_start: Mapped[str | None] = mapped_column(String(200))
    range_end: Mapped[str | None] = mapped_column(String(200))
    keys: Mapped[list[Any] | None]
    partitions_fingerprint: Mapped[str] = mapped_column(String(64))
    first_index: Mapped[int] = mapped_column(BigInteger, default=0)
    reprocess: Mapped[Reprocess]
    order: Mapped[Order]
    max_concurrent_runs: Mapped[int | None]
    run_config: Mapped[dict[str, Any] | None]
    tags: Mapped[list[Any]] = mapped_column(JSON, default=list)
    title: Mapped[str | None] = mapped_column(Text)
    description: Mapped[str | None] = mapped_column(Text)
    idempotency_key: Mapped[str | None] = mapped_column(String(200), unique=True)
    request_fingerprint: Mapped[str] = mapped_column(String(64))
    status: Mapped[BackfillState]
    error: Mapped[str | None] = mapped_column(Text)
    creator: Mapped[str | None] = mapped_column(String(200))
    # The team it acts for (its launcher's: a token's, a signed-in person's or a trigger's),
    # and its priority: the daemon shares room by both (``backfiller.domain.fair_share``).
    team: Mapped[str | None] = mapped_column(String(200))
    priority: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("backfills.id"))
    created_at: Mapped[datetime]
    started_at: Mapped[datetime | None]
    ended_at: Mapped[datetime | None]
    updated_at: Mapped[datetime]
    # Planning cursor: positions [0, planned) of the selection have slots.
    planned: Mapped[int] = mapped_column(BigInteger, default=0)
    # Counters, kept incrementally in the same transaction as every slot change.
    total: Mapped[int] = mapped_column(BigInteger)
    pending: Mapped[int] = mapped_column(BigInteger)
    queued: Mapped[int] = mapped_column(BigInteger, default=0)
    running: Mapped[int] = mapped_column(BigInteger, default=0)
    succeeded: Mapped[int] = mapped_column(BigInteger, default=0)
    failed: Mapped[int] = mapped_column(BigInteger, default=0)
    canceled: Mapped[int] = mapped_column(BigInteger, default=0)
    skipped: Mapped[int] = mapped_column(BigInteger, default=0)
    # Bumped on every change that a watcher should see (status or counts).
    version: Mapped[int] = mapped_column(BigInteger, default=0)
    # The W3C traceparent of the launch, when tracing was on: runs link to it.
    trace_parent: Mapped[str | None] = mapped_column(String(64))
    # An asset backfill's target and per-asset selections (``backfiller.planning.asset_plan``); None
    # for a job.
    asset_target: Mapped[dict[str, Any] | None]

    __table_args__ = (
        Index("ix_backfills_status_id", "status", "id"),
        Index("ix_backfills_job_name_id", "job_name", "id"),
        Index("ix_backfills_parent_id", "parent_id"),
        # Retention finds the finished backfills past their keeping (``storage.retention``).
        Index("ix_backfills_ended_at", "ended_at"),
    )


class BackfillTagRecord(Base):
    """Tags of a backfill, one row each, so backfills can be filtered by tag."""

    __tablename__ = "backfill_tags"

    backfill_id: Mapped[int] = mapped_column(
        ForeignKey("backfills.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    value: Mapped[str] = mapped_column(String(1000))

    # The tag filter of ``backfills`` walks one tag's backfills newest first (``backfill_reads``).
    __table_args__ = (
        Index("ix_backfill_tags_key_value_backfill_id", "key", "value", "backfill_id"),
    )


class SlotRecord(Base):
    """One (backfill, partition) pair, materialized lazily by the planner.

    On PostgreSQL, ``slots`` and ``runs`` are partitioned by ``backfill_id`` ranges as
    ``run_logs`` and ``backfill_events`` are (``storage.history_partitions``), and their primary
    keys are ``(id, backfill_id)``. So no foreign key names a backfill or a slot: a range's rows
    go with its partitions, and its backfills' own rows in the same transaction."""

    __tablename__ = "slots"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    backfill_id: Mapped[int] = mapped_column(BigId)
    position: Mapped[int] = mapped_column(BigInteger)
    # An asset backfill's slot is keyed ``asset/partition`` (``storage.assets``).
    partition_key: Mapped[str] = mapped_column(String(401))
    status: Mapped[SlotState]
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    # Attempts that do not count against the job's error retries: lost with their worker or
    # daemon, or taken back before they started.
    free_attempts: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    # Attempts lost with their worker or daemon (the job's lost-worker retry budget).
    lost_attempts: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    skip_reason: Mapped[str | None] = mapped_column(String(64))
    next_attempt_at: Mapped[datetime | None]
    updated_at: Mapped[datetime]

    __table_args__ = (
        UniqueConstraint("backfill_id", "position"),
        UniqueConstraint("backfill_id", "partition_key"),
        Index("ix_slots_backfill_id_status_position", "backfill_id", "status", "position"),
    )


class RunRecord(Base):
    """One attempt to run a job for one partition."""

    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    # The partition key on PostgreSQL; no foreign keys (see ``SlotRecord``).
    backfill_id: Mapped[int] = mapped_column(BigId)
    slot_id: Mapped[int] = mapped_column(BigId)
    job_name: Mapped[str] = mapped_column(String(200))
    partition_key: Mapped[str] = mapped_column(String(200))
    attempt: Mapped[int] = mapped_column(Integer)
    status: Mapped[RunState]
    failure_reason: Mapped[FailureReason | None]
    error_message: Mapped[str | None] = mapped_column(Text)
    error_traceback: Mapped[str | None] = mapped_column(Text)
    queued_at: Mapped[datetime]
    started_at: Mapped[datetime | None]
    ended_at: Mapped[datetime | None]
    lease_owner: Mapped[str | None] = mapped_column(String(200))
    heartbeat_at: Mapped[datetime | None]
    worker: Mapped[str | None] = mapped_column(String(200))
    # A ranged run (a job's backfill policy) is one row per partition, all claimed, started and
    # ended together: the first partition's row leads (``partition_count`` partitions, its id is
    # the run's id), the others name it in ``lead_run_id``. Each row holds its partition's
    # place in ``active_runs``.
    lead_run_id: Mapped[int | None] = mapped_column(BigInteger)
    partition_count: Mapped[int] = mapped_column(Integer, default=1, server_default=text("1"))

    __table_args__ = (
        UniqueConstraint("backfill_id", "slot_id", "attempt"),
        Index("ix_runs_lead_run_id", "lead_run_id"),
        Index("ix_runs_backfill_id_id", "backfill_id", "id"),
        # A backfill's runs of one status, newest first (``Backfill.runs(statuses:)``).
        Index("ix_runs_backfill_id_status_id", "backfill_id", "status", "id"),
        # A partition's history (``runs(job:, partitionKey:)``, also without the job) and a
        # job's runs (``runs(job:)``).
        Index("ix_runs_partition_key_job_name_id", "partition_key", "job_name", "id"),
        Index("ix_runs_job_name_id", "job_name", "id"),
        Index("ix_runs_status_id", "status", "id"),
        Index("ix_runs_lease_owner_status", "lease_owner", "status"),
        # The active runs of a (job, partition): at most one, kept so by ``active_runs``.
        Index(
            "ix_runs_active_partition",
            "job_name",
            "partition_key",
            sqlite_where=text("status IN ('queued', 'running')"),
            postgresql_where=text("status IN ('queued', 'running')"),
        ),
    )


class ActiveRunRecord(Base):
    """The QUEUED or RUNNING run of a (job, partition), across all backfills: never two.

    A unique index of ``runs`` cannot hold this rule once ``runs`` is partitioned by backfill
    (PostgreSQL): its keys would have to include ``backfill_id``. So triggers on ``runs`` keep
    this table, in the statement that inserts a run, changes its status or deletes it (migration
    0050, on both databases), and its primary key refuses a second active run of a partition:
    the statement fails as a unique index would have failed it (a
    :class:`~backfiller.storage.errors.Conflict`). Nothing else writes it, but the drop of a
    history range, which removes its runs' rows here too (``history_partitions.drop_range``)."""

    __tablename__ = "active_runs"

    job_name: Mapped[str] = mapped_column(String(200), primary_key=True)
    partition_key: Mapped[str] = mapped_column(String(200), primary_key=True)
    run_id: Mapped[int] = mapped_column(BigId)
    backfill_id: Mapped[int] = mapped_column(BigId)

    # A run's backfill by its id (``SessionRepository.backfills_of``): the partition of
    # ``runs`` to read.
    __table_args__ = (Index("ix_active_runs_run_id", "run_id"),)


class RunLogRecord(Base):
    """One log line of a run.

    On PostgreSQL, ``run_logs`` and ``backfill_events`` are partitioned by ``backfill_id``
    ranges (``storage.history_partitions``): a range's lines and events are dropped together
    once all its backfills have expired. So neither names its run or backfill by a foreign key:
    they outlive those rows until their partition goes (nothing reads them meanwhile), and
    retention deletes them itself where they are not in a range (and on SQLite)."""

    __tablename__ = "run_logs"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    run_id: Mapped[int] = mapped_column(BigId)
    at: Mapped[datetime]
    level: Mapped[str] = mapped_column(String(16))
    message: Mapped[str] = mapped_column(Text)
    # The run's backfill: the partition key on PostgreSQL.
    backfill_id: Mapped[int] = mapped_column(BigId)

    __table_args__ = (Index("ix_run_logs_run_id_id", "run_id", "id"),)


class PartitionStateRecord(Base):
    """The latest run outcome of a (job, partition), across all backfills."""

    __tablename__ = "partition_states"

    job_name: Mapped[str] = mapped_column(String(200), primary_key=True)
    # In code-point order on PostgreSQL too (SQLite's is already): the order of Python's
    # ``str``, in which the API folds a job's states into ranges (``storage.partition_states``).
    partition_key: Mapped[str] = mapped_column(
        String(200).with_variant(String(200, collation="C"), "postgresql"), primary_key=True
    )
    status: Mapped[RunState]
    run_id: Mapped[int | None] = mapped_column(BigInteger)
    updated_at: Mapped[datetime]


class BackfillEventRecord(Base):
    """Something that happened to a backfill: launched, paused, run failed, ..."""

    __tablename__ = "backfill_events"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    # No foreign key, and the partition key on PostgreSQL: see ``RunLogRecord``.
    backfill_id: Mapped[int] = mapped_column(BigId)
    kind: Mapped[str] = mapped_column(String(32))
    at: Mapped[datetime]
    actor: Mapped[str | None] = mapped_column(String(200))
    message: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (Index("ix_backfill_events_backfill_id_id", "backfill_id", "id"),)


class DynamicPartitionRecord(Base):
    """A key of a dynamic partitions definition."""

    __tablename__ = "dynamic_partitions"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(200))
    key: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime]

    __table_args__ = (
        UniqueConstraint("name", "key"),
        Index("ix_dynamic_partitions_name_id", "name", "id"),
    )


class DaemonLeaseRecord(Base):
    """A daemon's lease: it may claim and run only until ``expires_at``, renewed while alive.

    Another daemon takes over the runs of an owner only once its lease has expired (its workers
    stop before that), and deletes the row in the same transaction: a deleted or expired lease
    is never renewed, its owner must start over under a new name.
    """

    __tablename__ = "daemon_leases"

    owner: Mapped[str] = mapped_column(String(200), primary_key=True)
    heartbeat_at: Mapped[datetime]
    started_at: Mapped[datetime]
    expires_at: Mapped[datetime | None]


__all__ = [
    "BackfillEventRecord",
    "BackfillRecord",
    "BackfillTagRecord",
    "Base",
    "BigId",
    "DaemonLeaseRecord",
    "DynamicPartitionRecord",
    "PartitionStateRecord",
    "RunLogRecord",
    "RunRecord",
    "SlotRecord",
    "table_of",
]
