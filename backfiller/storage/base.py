"""The base of every record class: ``Base``, its naming convention and column types.

Record modules (``records``, ``auth_records``, ``trigger_records``) import from here and never
from each other; ``metadata`` imports them all, for the migrations and the tests.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Dialect,
    Enum,
    Integer,
    MetaData,
    Table,
    TypeDecorator,
)
from sqlalchemy.orm import DeclarativeBase

from backfiller.domain import (
    BackfillKind,
    BackfillState,
    FailureReason,
    MarkStatus,
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
        BackfillKind: _enum(BackfillKind),
        BackfillState: _enum(BackfillState),
        SlotState: _enum(SlotState),
        RunState: _enum(RunState),
        FailureReason: _enum(FailureReason),
        SelectionKind: _enum(SelectionKind),
        Reprocess: _enum(Reprocess),
        Order: _enum(Order),
        MarkStatus: _enum(MarkStatus),
    }
