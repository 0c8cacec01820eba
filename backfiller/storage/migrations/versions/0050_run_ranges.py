"""run ranges: runs and slots partitioned by backfill id as the history is (PostgreSQL)

Revision ID: 0050
Revises: 0049

``runs`` and ``slots`` no longer name their backfill (nor a run its slot) by a foreign key: on
PostgreSQL both become partitioned by ``RANGE (backfill_id)`` with the ranges 0049 made for
``run_logs`` and ``backfill_events`` (read from the catalog: ``<table>_b<low>`` partitions and
a ``DEFAULT`` one), so that a range's runs and slots are dropped with its history, whole
partitions and no dead rows. Their primary keys become ``(id, backfill_id)`` and the unique
constraint of a slot's attempts ``(backfill_id, slot_id, attempt)``: a unique index of a
partitioned table must hold the partition key.

So the unique partial index that refused a second active (queued or running) run of a (job,
partition) across all backfills cannot stay. ``active_runs`` holds the rule instead: a row per
(job, partition) with an active run, kept by triggers on ``runs`` in the statement that inserts
a run, changes its status or deletes it, and whose primary key fails that statement as the
unique index did (the index stays, not unique, for the reads of active runs). The triggers are
made on both databases (on PostgreSQL on the partitioned table: PostgreSQL clones them onto
every partition, those attached later too); SQLite keeps plain tables otherwise (the keys
changed, ``active_runs`` and its triggers added).

On PostgreSQL the rows are copied once into the partitioned tables, then the keys and indexes
are built, and each partition gets 0015's settings of its table. The tables are locked for the
whole migration (see docs/deploy.md for how long it takes per million runs), and it is not
additive: stop the daemons and servers, upgrade, then start them.
"""

import re
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0050"
down_revision: str | None = "0049"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_HOT = (
    "autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000, "
    "autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 1000"
)
SETTINGS = {
    "runs": f"fillfactor = 80, {_HOT}, autovacuum_vacuum_insert_scale_factor = 0.02",
    "slots": f"fillfactor = 90, {_HOT}, autovacuum_vacuum_insert_scale_factor = 0.02",
}
"""0015's settings of the two tables, now each partition's (a partitioned table has none)."""

ACTIVE = "('queued', 'running')"
"""The statuses of an active run."""

_BOUND = re.compile(r"FROM \('?(-?\d+)'?\) TO \('?(-?\d+)'?\)")
_FKS = {
    "slots": [("fk_slots_backfill_id_backfills", "backfills", ["backfill_id"], ["id"])],
    "runs": [
        ("fk_runs_backfill_id_backfills", "backfills", ["backfill_id"], ["id"]),
        ("fk_runs_slot_id_slots", "slots", ["slot_id"], ["id"]),
    ],
}
_OLD_UNIQUE = ("uq_runs_slot_id_attempt", ["slot_id", "attempt"])
_NEW_UNIQUE = ("uq_runs_backfill_id_slot_id_attempt", ["backfill_id", "slot_id", "attempt"])

# The indexes both revisions have, as they are built on PostgreSQL.
_INDEXES = {
    "slots": [
        "ALTER TABLE slots ADD CONSTRAINT uq_slots_backfill_id_position "
        'UNIQUE (backfill_id, "position")',
        "ALTER TABLE slots ADD CONSTRAINT uq_slots_backfill_id_partition_key "
        "UNIQUE (backfill_id, partition_key)",
        "CREATE INDEX ix_slots_backfill_id_status_position "
        'ON slots (backfill_id, status, "position")',
    ],
    "runs": [
        "CREATE INDEX ix_runs_lead_run_id ON runs (lead_run_id)",
        "CREATE INDEX ix_runs_backfill_id_id ON runs (backfill_id, id)",
        "CREATE INDEX ix_runs_backfill_id_status_id ON runs (backfill_id, status, id)",
        "CREATE INDEX ix_runs_partition_key_job_name_id ON runs (partition_key, job_name, id)",
        "CREATE INDEX ix_runs_job_name_id ON runs (job_name, id)",
        "CREATE INDEX ix_runs_status_id ON runs (status, id)",
        "CREATE INDEX ix_runs_lease_owner_status ON runs (lease_owner, status)",
    ],
}
_NEW_INDEXES = {
    "slots": ["ALTER TABLE slots ADD CONSTRAINT pk_slots PRIMARY KEY (id, backfill_id)"],
    "runs": [
        "ALTER TABLE runs ADD CONSTRAINT pk_runs PRIMARY KEY (id, backfill_id)",
        f"ALTER TABLE runs ADD CONSTRAINT {_NEW_UNIQUE[0]} UNIQUE ({', '.join(_NEW_UNIQUE[1])})",
        "CREATE INDEX ix_runs_active_partition ON runs (job_name, partition_key) "
        f"WHERE status IN {ACTIVE}",
    ],
}
_OLD_INDEXES = {
    "slots": ["ALTER TABLE slots ADD CONSTRAINT pk_slots PRIMARY KEY (id)"],
    "runs": [
        "ALTER TABLE runs ADD CONSTRAINT pk_runs PRIMARY KEY (id)",
        f"ALTER TABLE runs ADD CONSTRAINT {_OLD_UNIQUE[0]} UNIQUE ({', '.join(_OLD_UNIQUE[1])})",
        "CREATE UNIQUE INDEX uq_runs_active_partition ON runs (job_name, partition_key) "
        f"WHERE status IN {ACTIVE}",
    ],
}

_ADD = (
    "INSERT INTO active_runs (job_name, partition_key, run_id, backfill_id) "
    "VALUES (NEW.job_name, NEW.partition_key, NEW.id, NEW.backfill_id)"
)
_REMOVE = (
    "DELETE FROM active_runs WHERE job_name = OLD.job_name "
    "AND partition_key = OLD.partition_key AND run_id = OLD.id"
)
# (name, event, condition, adds: else removes) of each trigger on runs, on both databases.
_TRIGGERS = (
    ("runs_active_inserted", "INSERT", f"NEW.status IN {ACTIVE}", True),
    (
        "runs_active_started",
        "UPDATE OF status",
        f"OLD.status NOT IN {ACTIVE} AND NEW.status IN {ACTIVE}",
        True,
    ),
    (
        "runs_active_ended",
        "UPDATE OF status",
        f"OLD.status IN {ACTIVE} AND NEW.status NOT IN {ACTIVE}",
        False,
    ),
    ("runs_active_deleted", "DELETE", f"OLD.status IN {ACTIVE}", False),
)
_FUNCTIONS = {True: "active_runs_add", False: "active_runs_remove"}
"""The PL/pgSQL functions of the triggers (PostgreSQL)."""


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _partition()
    else:
        _rekey_sqlite()
    _active_runs()


def _rekey_sqlite() -> None:
    # The unique partial index goes first: the table's copy would rebuild it for nothing.
    op.drop_index("uq_runs_active_partition", table_name="runs")
    with op.batch_alter_table("runs") as batch:
        for fk in _FKS["runs"]:
            batch.drop_constraint(fk[0], type_="foreignkey")
        batch.drop_constraint(_OLD_UNIQUE[0], type_="unique")
        batch.create_unique_constraint(*_NEW_UNIQUE)
    with op.batch_alter_table("slots") as batch:
        batch.drop_constraint(_FKS["slots"][0][0], type_="foreignkey")
    op.create_index(
        "ix_runs_active_partition",
        "runs",
        ["job_name", "partition_key"],
        sqlite_where=sa.text(f"status IN {ACTIVE}"),
    )


def _partition() -> None:
    # Whoever makes a range (``history_partitions.make_ahead``) waits for this transaction.
    op.execute("SELECT pg_advisory_xact_lock(hashtext('backfiller history ranges'))")
    op.execute("LOCK TABLE runs, slots IN ACCESS EXCLUSIVE MODE")
    bounds = _ranges()
    for table in ("runs", "slots"):  # runs first: its old table's foreign key names slots
        op.execute(
            f"CREATE TABLE {table}_ranged (LIKE {table} INCLUDING DEFAULTS) "
            "PARTITION BY RANGE (backfill_id)"
        )
        for low, high in bounds:
            op.execute(
                f"CREATE TABLE {table}_b{low} PARTITION OF {table}_ranged "
                f"FOR VALUES FROM ({low}) TO ({high}) WITH ({SETTINGS[table]})"
            )
        op.execute(
            f"CREATE TABLE {table}_default PARTITION OF {table}_ranged DEFAULT "
            f"WITH ({SETTINGS[table]})"
        )
        op.execute(f"INSERT INTO {table}_ranged SELECT * FROM {table}")
        op.execute(f"ALTER SEQUENCE {table}_id_seq OWNED BY {table}_ranged.id")
        op.execute(f"DROP TABLE {table}")  # its keys and indexes with it
        op.execute(f"ALTER TABLE {table}_ranged RENAME TO {table}")
        # Built once the rows are in, on the parent: each partition gets its own.
        for statement in _NEW_INDEXES[table] + _INDEXES[table]:
            op.execute(statement)
        _analyze_filled(table, [f"{table}_b{low}" for low, _ in bounds] + [f"{table}_default"])


def _analyze_filled(table: str, partitions: list[str]) -> None:
    """Statistics now for the partitions that received rows (autovacuum would take a while);
    not for an empty one: analyzed empty, its plans would read it as empty (a sequential
    scan) until autovacuum analyzes it again, where one never analyzed is planned on its
    actual size."""
    for name in partitions:
        if op.get_bind().execute(sa.text(f"SELECT EXISTS (SELECT 1 FROM {name})")).scalar():
            op.execute(f"ANALYZE {name}")


def _ranges() -> list[tuple[int, int]]:
    """The ranges of ``run_logs``' partitions, lowest first (``history_partitions.ranges``)."""
    bounds = op.get_bind().execute(
        sa.text(
            "SELECT pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
            "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'run_logs'::regclass"
        )
    )
    found = [_BOUND.search(str(bound)) for bound in bounds.scalars()]
    return sorted((int(m.group(1)), int(m.group(2))) for m in found if m)


def _active_runs() -> None:
    """``active_runs``, filled from the active runs, and the triggers that keep it."""
    big = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    op.create_table(
        "active_runs",
        sa.Column("job_name", sa.String(length=200), nullable=False),
        sa.Column("partition_key", sa.String(length=200), nullable=False),
        sa.Column("run_id", big, nullable=False),
        sa.Column("backfill_id", big, nullable=False),
        sa.PrimaryKeyConstraint("job_name", "partition_key", name=op.f("pk_active_runs")),
    )
    op.create_index("ix_active_runs_run_id", "active_runs", ["run_id"])
    op.execute(
        "INSERT INTO active_runs (job_name, partition_key, run_id, backfill_id) "
        f"SELECT job_name, partition_key, id, backfill_id FROM runs WHERE status IN {ACTIVE}"
    )
    postgresql = op.get_bind().dialect.name == "postgresql"
    if postgresql:
        for adds, function in _FUNCTIONS.items():
            op.execute(
                f"CREATE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$ "
                f"BEGIN {_ADD if adds else _REMOVE}; RETURN NULL; END $$"
            )
    for name, event, condition, adds in _TRIGGERS:
        if postgresql:
            op.execute(
                f"CREATE TRIGGER {name} AFTER {event} ON runs FOR EACH ROW "
                f"WHEN ({condition}) EXECUTE FUNCTION {_FUNCTIONS[adds]}()"
            )
        else:
            op.execute(
                f"CREATE TRIGGER {name} AFTER {event} ON runs FOR EACH ROW "
                f"WHEN {condition} BEGIN {_ADD if adds else _REMOVE}; END"
            )


def downgrade() -> None:
    for name, *_ in _TRIGGERS:
        op.execute(f"DROP TRIGGER {name} ON runs" if _pg() else f"DROP TRIGGER {name}")
    if _pg():
        for function in _FUNCTIONS.values():
            op.execute(f"DROP FUNCTION {function}()")
    op.drop_table("active_runs")
    if _pg():
        _unpartition()
        return
    op.execute("DELETE FROM slots WHERE backfill_id NOT IN (SELECT id FROM backfills)")
    op.execute(
        "DELETE FROM runs WHERE backfill_id NOT IN (SELECT id FROM backfills) "
        "OR slot_id NOT IN (SELECT id FROM slots)"
    )
    op.drop_index("ix_runs_active_partition", table_name="runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_constraint(_NEW_UNIQUE[0], type_="unique")
        batch.create_unique_constraint(*_OLD_UNIQUE)
        for fk in _FKS["runs"]:
            batch.create_foreign_key(*fk, ondelete="CASCADE")
    with op.batch_alter_table("slots") as batch:
        batch.create_foreign_key(*_FKS["slots"][0], ondelete="CASCADE")
    op.create_index(
        "uq_runs_active_partition",
        "runs",
        ["job_name", "partition_key"],
        unique=True,
        sqlite_where=sa.text(f"status IN {ACTIVE}"),
    )


def _pg() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def _unpartition() -> None:
    """Plain tables again, with the rows whose backfill (and a run's slot) is still there."""
    op.execute("LOCK TABLE runs, slots IN ACCESS EXCLUSIVE MODE")
    kept = {
        "slots": "backfill_id IN (SELECT id FROM backfills)",
        "runs": "backfill_id IN (SELECT id FROM backfills) AND slot_id IN (SELECT id FROM slots)",
    }
    for table in ("slots", "runs"):  # slots first: the runs kept are those of the slots kept
        op.execute(f"CREATE TABLE {table}_plain (LIKE {table} INCLUDING DEFAULTS)")
        op.execute(f"INSERT INTO {table}_plain SELECT * FROM {table} WHERE {kept[table]}")
        op.execute(f"ALTER SEQUENCE {table}_id_seq OWNED BY {table}_plain.id")
        op.execute(f"DROP TABLE {table}")  # its partitions with it
        op.execute(f"ALTER TABLE {table}_plain RENAME TO {table}")
        for statement in _OLD_INDEXES[table] + _INDEXES[table]:
            op.execute(statement)
        op.execute(f"ALTER TABLE {table} SET ({SETTINGS[table]})")
    for table in ("slots", "runs"):
        for fk in _FKS[table]:
            op.create_foreign_key(fk[0], table, fk[1], fk[2], fk[3], ondelete="CASCADE")
