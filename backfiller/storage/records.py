"""SQLAlchemy 2 records. Private: the public GraphQL types are translated from these."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Dialect,
    Enum,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from backfiller.domain import (
    BackfillState,
    FailureReason,
    Order,
    Reprocess,
    RunState,
    SelectionKind,
    SlotState,
)

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator[datetime]):
    """Aware datetimes in, aware UTC datetimes out, on every dialect (SQLite keeps no zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to storage")
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def _enum(cls: type[Any]) -> Enum:
    return Enum(
        cls,
        native_enum=False,
        create_constraint=False,
        length=32,
        values_callable=lambda e: [m.value for m in e],
    )


BigId = BigInteger().with_variant(Integer(), "sqlite")


def table_of(record: type[Any]) -> Table:
    """The Core table of a record class, for statements built once and run many times."""
    table = record.__table__
    assert isinstance(table, Table)
    return table


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {
        datetime: UTCDateTime(),
        dict[str, Any]: JSON(),
        list[Any]: JSON(),
        BackfillState: _enum(BackfillState),
        SlotState: _enum(SlotState),
        RunState: _enum(RunState),
        FailureReason: _enum(FailureReason),
        SelectionKind: _enum(SelectionKind),
        Reprocess: _enum(Reprocess),
        Order: _enum(Order),
    }


class BackfillRecord(Base):
    """One backfill: the selection as asked, never an expanded partition list."""

    __tablename__ = "backfills"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
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

    __table_args__ = (
        Index("ix_backfills_status_id", "status", "id"),
        Index("ix_backfills_job_name_id", "job_name", "id"),
        Index("ix_backfills_parent_id", "parent_id"),
    )


class BackfillTagRecord(Base):
    """Tags of a backfill, one row each, so backfills can be filtered by tag."""

    __tablename__ = "backfill_tags"

    backfill_id: Mapped[int] = mapped_column(
        ForeignKey("backfills.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    value: Mapped[str] = mapped_column(String(1000))

    __table_args__ = (Index("ix_backfill_tags_key_value", "key", "value"),)


class SlotRecord(Base):
    """One (backfill, partition) pair, materialized lazily by the planner."""

    __tablename__ = "slots"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    backfill_id: Mapped[int] = mapped_column(ForeignKey("backfills.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(BigInteger)
    partition_key: Mapped[str] = mapped_column(String(200))
    status: Mapped[SlotState]
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    # Attempts lost with a daemon that died: they do not count against the retry policy.
    free_attempts: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
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
    backfill_id: Mapped[int] = mapped_column(ForeignKey("backfills.id", ondelete="CASCADE"))
    slot_id: Mapped[int] = mapped_column(ForeignKey("slots.id", ondelete="CASCADE"))
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

    __table_args__ = (
        UniqueConstraint("slot_id", "attempt"),
        Index("ix_runs_backfill_id_id", "backfill_id", "id"),
        Index("ix_runs_status_id", "status", "id"),
        Index("ix_runs_lease_owner_status", "lease_owner", "status"),
        # Never two active runs of one (job, partition), across all backfills.
        Index(
            "uq_runs_active_partition",
            "job_name",
            "partition_key",
            unique=True,
            sqlite_where=text("status IN ('queued', 'running')"),
            postgresql_where=text("status IN ('queued', 'running')"),
        ),
    )


class RunLogRecord(Base):
    """One log line of a run."""

    __tablename__ = "run_logs"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    at: Mapped[datetime]
    level: Mapped[str] = mapped_column(String(16))
    message: Mapped[str] = mapped_column(Text)

    __table_args__ = (Index("ix_run_logs_run_id_id", "run_id", "id"),)


class PartitionStateRecord(Base):
    """The latest run outcome of a (job, partition), across all backfills."""

    __tablename__ = "partition_states"

    job_name: Mapped[str] = mapped_column(String(200), primary_key=True)
    partition_key: Mapped[str] = mapped_column(String(200), primary_key=True)
    status: Mapped[RunState]
    run_id: Mapped[int | None] = mapped_column(BigInteger)
    updated_at: Mapped[datetime]


class BackfillEventRecord(Base):
    """Something that happened to a backfill: launched, paused, run failed, ..."""

    __tablename__ = "backfill_events"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    backfill_id: Mapped[int] = mapped_column(ForeignKey("backfills.id", ondelete="CASCADE"))
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
    """A daemon's heartbeat, so others (and the API) can tell which daemons are alive."""

    __tablename__ = "daemon_leases"

    owner: Mapped[str] = mapped_column(String(200), primary_key=True)
    heartbeat_at: Mapped[datetime]
    started_at: Mapped[datetime]


# Access-control records live in their own module; importing it registers them on Base.
from backfiller.storage import auth_records as _auth_records  # noqa: E402, F401

# Notification records live in their own module; importing it registers them on Base.
from backfiller.storage import notification_records as _notification_records  # noqa: E402, F401

# Trigger records live in their own module; importing it registers them on Base.
from backfiller.storage import trigger_records as _trigger_records  # noqa: E402, F401
