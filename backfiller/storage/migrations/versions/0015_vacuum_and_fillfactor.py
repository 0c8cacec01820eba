"""vacuum and fillfactor: autovacuum per hot table, and room on each page for HOT updates

Revision ID: 0015
Revises: 0014

PostgreSQL only (SQLite has neither). With the defaults, autovacuum waits for a fifth of a
table to be dead rows: 200 million dead rows before a billion-row ``runs`` is vacuumed, and
insert-only tables (log lines, events) are vacuumed (and their visibility map, which makes
index-only scans cheap, set) as rarely. Here each hot table is vacuumed after a small share
of dead (or, for insert-only tables, new) rows, analyzed as often, and leaves room on its
pages so that an update that changes no indexed column is a HOT update (no new index
entries, the old version pruned on the page without vacuum):

- ``backfills``: every claim and result batch moves a backfill's counters (no index on them);
- ``partition_states``: three updates a run (queued, running, its end), none of an indexed
  column;
- ``runs``: the heartbeat of running runs every few seconds (``heartbeat_at``, not indexed);
  its start and end change ``status``, which is indexed, and cannot be HOT;
- ``slots``: every update changes ``status`` (indexed); a little room keeps the new version on
  the same page;
- ``run_logs``, ``backfill_events``: insert-only; vacuumed for their visibility maps.

``fillfactor`` applies to pages written from now on; existing pages fill up as before until
rewritten (``VACUUM FULL`` or ``pg_repack``), which this migration does not do.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_HOT = (
    "autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000, "
    "autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 1000"
)
_INSERTED = (
    "autovacuum_vacuum_insert_scale_factor = 0.02, autovacuum_vacuum_insert_threshold = 10000, "
    "autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 10000"
)
SETTINGS = {
    "backfills": f"fillfactor = 50, {_HOT}",
    "partition_states": f"fillfactor = 70, {_HOT}",
    "runs": f"fillfactor = 80, {_HOT}, autovacuum_vacuum_insert_scale_factor = 0.02",
    "slots": f"fillfactor = 90, {_HOT}, autovacuum_vacuum_insert_scale_factor = 0.02",
    "run_logs": _INSERTED,
    "backfill_events": _INSERTED,
    "trigger_evaluations": _INSERTED,
    "audit_log": _INSERTED,
}


def _names(settings: str) -> str:
    return ", ".join(part.split("=")[0].strip() for part in settings.split(","))


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, settings in SETTINGS.items():
        op.execute(f"ALTER TABLE {table} SET ({settings})")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, settings in SETTINGS.items():
        op.execute(f"ALTER TABLE {table} RESET ({_names(settings)})")
