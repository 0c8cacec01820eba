"""A long history on PostgreSQL, built in SQL (``generate_series``) in the daemon's row shapes.

Backfills of ``per_backfill`` daily partitions each, over the given jobs in turn, every one
finished (but the last ``running`` ones): each partition a slot and a run (``success``, every
``fail_every``-th ``failed`` and then retried once, as a second run), ``log_lines`` log lines a
run, the events a backfill gets (launched, started, one per failed run, completed), two tags,
and ``partition_states`` as the daemon leaves them (the latest run of each (job, key)).
Besides, ``evaluations`` trigger evaluations over ``triggers`` names and ``audit`` audit
entries. Counters on the backfill rows agree with their slots. Then ``ANALYZE``.

Used by the query-plan test (a million rows a table) and ``bench/scale.py`` (five million
runs). The statements are this module's own: they write the tables as the migrations left
them, and run in a few seconds a million rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, text

from backfiller.storage.history_partitions import (
    MIN_SPAN,
    PARTITIONED,
    Range,
    create_range,
    partitioned,
    ranges,
)

EPOCH = datetime(2020, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class HistoryShape:
    runs: int
    jobs: Sequence[tuple[str, str]]
    """(name, partitions fingerprint) of each daily job, in turn."""
    per_backfill: int = 1000
    keys_per_job: int = 3650
    """Daily keys from 2015-01-01: a job's backfills go round them."""
    fail_every: int = 100
    log_lines: int = 3
    running: int = 2
    triggers: Sequence[str] = ("trigger_0",)
    evaluations: int = 0
    audit: int = 0
    extra_events: int = 0
    """Events besides a backfill's own (``retried``, spread over the backfills)."""
    range_backfills: int | None = None
    """Backfills in each history range on PostgreSQL (None: all in one, a day's launches)."""

    @property
    def backfills(self) -> int:
        return max(1, self.runs // self.per_backfill)


def build_history(conn: Connection, shape: HistoryShape) -> None:
    """Write the history of ``shape`` into an empty, migrated database (see the module)."""
    # The rows are consistent by construction: their triggers are off (``active_runs`` is
    # written below as they would have written it).
    conn.execute(text("SET LOCAL session_replication_role = replica"))
    conn.execute(text("CREATE TEMP TABLE bench_jobs (n int PRIMARY KEY, name text, fp text)"))
    conn.execute(
        text("INSERT INTO bench_jobs VALUES (:n, :name, :fp)"),
        [{"n": i, "name": name, "fp": fp} for i, (name, fp) in enumerate(shape.jobs)],
    )
    params = {
        "b": shape.backfills,
        "p": shape.per_backfill,
        "nj": len(shape.jobs),
        "k": shape.keys_per_job,
        "fail": shape.fail_every,
        "running": shape.running,
        "epoch": EPOCH,
    }
    _ranges_for(conn, shape.backfills, shape.range_backfills)
    # Indexes built once the rows are in (a sorted build), not row by row.
    indexes = _drop_indexes(conn)
    for statement in _STATEMENTS:
        conn.execute(text(statement), params)
    if shape.log_lines:
        conn.execute(text(_LOGS), {"lines": shape.log_lines})
    if shape.extra_events:
        conn.execute(text(_EXTRA_EVENTS), {"n": shape.extra_events, "b": shape.backfills})
    if shape.evaluations:
        names = list(shape.triggers)
        conn.execute(text(_EVALUATIONS), {"n": shape.evaluations, "names": names})
        conn.execute(text(_LATEST))
    if shape.audit:
        conn.execute(text(_AUDIT), {"n": shape.audit, "epoch": EPOCH})
    for table in _SEQUENCES:
        conn.execute(
            text(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                f"(SELECT COALESCE(MAX(id), 0) + 1 FROM {table}))"
            )
        )
    conn.execute(text("DROP TABLE bench_jobs"))
    conn.execute(text("SET LOCAL maintenance_work_mem = '256MB'"))
    for definition in indexes:
        conn.execute(text(definition))


def _ranges_for(conn: Connection, backfills: int, each: int | None) -> None:
    """Where the history is partitioned (PostgreSQL, migrated): the backfills beyond the range
    made by the migrations in ranges of their own, as daemons make them (a day's launches
    each by default: at 10 million runs a day, 10,000 backfills; ``each`` backfills each), and
    a range ahead for the backfills launched next."""
    if not partitioned(conn):
        return
    made = ranges(conn)
    if each is not None:  # the empty ranges the migrations made ahead are made again
        for r in made[1:]:
            for table in PARTITIONED:
                conn.execute(text(f"DROP TABLE {r.name(table)}"))
        made = made[:1]
    low = made[-1].high
    while low <= backfills:
        high = backfills + 1 if each is None else min(low + each, backfills + 1)
        create_range(conn, Range(low, high))
        low = high
    if low == backfills + 1:  # and the range ahead that the daemons keep (``make_ahead``)
        create_range(conn, Range(low, low + MIN_SPAN))


_BULK = ("slots", "runs", "run_logs", "backfill_events", "trigger_evaluations", "audit_log")


def _drop_indexes(conn: Connection) -> list[str]:
    """Drop the indexes of the bulk tables that back no constraint; their definitions."""
    rows = conn.execute(
        text(
            "SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid) FROM pg_index i "
            "WHERE i.indrelid::regclass::text = ANY(:tables) AND NOT EXISTS "
            "(SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)"
        ),
        {"tables": list(_BULK)},
    ).all()
    for name, _ in rows:
        conn.execute(text(f'DROP INDEX "{name}"'))
    # A partitioned table's index is defined ``ON ONLY`` it: rebuilt on its partitions too.
    return [definition.replace(" ON ONLY ", " ON ") for _, definition in rows]


_SEQUENCES = (
    "backfills",
    "slots",
    "runs",
    "run_logs",
    "backfill_events",
    "trigger_evaluations",
    "audit_log",
)

# Backfill b (1..:b) runs job (b % :nj) over :p consecutive days of that job's keys; its
# partition p (0..:p-1) is slot and run (b - 1) * :p + p + 1.
_DAY = "(((b.id - 1) / :nj) * :p + s.position) % :k"
_STATEMENTS = (
    """
    INSERT INTO backfills (id, job_name, selection_kind, range_start, range_end, keys,
        partitions_fingerprint, first_index, reprocess, "order", max_concurrent_runs,
        run_config, tags, title, description, idempotency_key, request_fingerprint, status,
        error, creator, parent_id, created_at, started_at, ended_at, updated_at, planned,
        total, pending, queued, running, succeeded, failed, canceled, skipped, version,
        trace_parent, asset_target)
    SELECT g, j.name, 'range',
        to_char(date '2015-01-01' + ((((g - 1) / :nj) * :p) % :k)::int, 'YYYY-MM-DD'),
        to_char(date '2015-01-01' + ((((g - 1) / :nj) * :p + :p - 1) % :k)::int, 'YYYY-MM-DD'),
        NULL, j.fp, 0, 'all', 'oldest_first', NULL, NULL,
        ('[["team", "t' || (g % 20) || '"], ["source", "bench"]]')::json, NULL, NULL, NULL,
        md5(g::text), CASE WHEN g > :b - :running THEN 'running' ELSE 'completed_success' END,
        NULL, 'bench', NULL, :epoch + g * interval '1 minute',
        :epoch + g * interval '1 minute',
        CASE WHEN g > :b - :running THEN NULL
            ELSE :epoch + g * interval '1 minute' + interval '50 s' END,
        :epoch + g * interval '1 minute', :p, :p, 0, 0,
        CASE WHEN g > :b - :running THEN 1 ELSE 0 END,
        CASE WHEN g > :b - :running THEN :p - 1 ELSE :p END, 0, 0, 0, 1, NULL, NULL
    FROM generate_series(1, :b) g JOIN bench_jobs j ON j.n = g % :nj
    """,
    """
    INSERT INTO backfill_tags (backfill_id, key, value)
    SELECT id, 'team', 't' || (id % 20) FROM backfills
    UNION ALL SELECT id, 'source', 'bench' FROM backfills
    """,
    f"""
    INSERT INTO slots (id, backfill_id, position, partition_key, status, attempts,
        free_attempts, lost_attempts, skip_reason, next_attempt_at, updated_at)
    SELECT (b.id - 1) * :p + s.position + 1, b.id, s.position,
        to_char(date '2015-01-01' + ({_DAY})::int, 'YYYY-MM-DD'),
        CASE WHEN b.status = 'running' AND s.position = :p - 1 THEN 'running'
            ELSE 'succeeded' END,
        CASE WHEN s.position % :fail = 0 THEN 2 ELSE 1 END, 0, 0, NULL, NULL,
        b.created_at + s.position * interval '10 ms'
    FROM backfills b CROSS JOIN generate_series(0, :p - 1) AS s(position)
    """,
    """
    INSERT INTO runs (id, backfill_id, slot_id, job_name, partition_key, attempt, status,
        failure_reason, error_message, error_traceback, queued_at, started_at, ended_at,
        lease_owner, heartbeat_at, worker, lead_run_id, partition_count)
    SELECT s.id, s.backfill_id, s.id, b.job_name, s.partition_key, 1,
        CASE WHEN s.status = 'running' THEN 'running'
            WHEN s.attempts = 2 THEN 'failed' ELSE 'success' END,
        CASE WHEN s.status <> 'running' AND s.attempts = 2 THEN 'error' END,
        CASE WHEN s.status <> 'running' AND s.attempts = 2
            THEN 'ValueError: the upstream file is missing' END,
        NULL, s.updated_at, s.updated_at,
        CASE WHEN s.status <> 'running' THEN s.updated_at + interval '40 ms' END,
        'bench-daemon',
        s.updated_at, 'worker-1', NULL, 1
    FROM slots s JOIN backfills b ON b.id = s.backfill_id
    """,
    "SELECT setval(pg_get_serial_sequence('runs', 'id'), (SELECT MAX(id) FROM runs))",
    """
    INSERT INTO runs (backfill_id, slot_id, job_name, partition_key, attempt, status,
        failure_reason, error_message, error_traceback, queued_at, started_at, ended_at,
        lease_owner, heartbeat_at, worker, lead_run_id, partition_count)
    SELECT r.backfill_id, r.slot_id, r.job_name, r.partition_key, 2, 'success', NULL, NULL,
        NULL, r.ended_at, r.ended_at, r.ended_at + interval '40 ms', 'bench-daemon',
        r.ended_at, 'worker-1', NULL, 1
    FROM runs r WHERE r.status = 'failed'
    """,
    """
    INSERT INTO backfill_events (backfill_id, kind, at, actor, message)
    SELECT id, 'launched', created_at, 'bench', NULL FROM backfills
    UNION ALL SELECT id, 'started', started_at, NULL, NULL FROM backfills
    UNION ALL SELECT backfill_id, 'run_failed', ended_at, NULL,
        partition_key || ' attempt 1 failed (ERROR): the upstream file is missing'
        FROM runs WHERE status = 'failed'
    UNION ALL SELECT id, 'completed', ended_at, NULL, total || ' succeeded, 0 failed'
        FROM backfills WHERE status = 'completed_success'
    """,
    # What the triggers on runs (off here) would have written: the active runs.
    """
    INSERT INTO active_runs (job_name, partition_key, run_id, backfill_id)
    SELECT job_name, partition_key, id, backfill_id FROM runs
    WHERE status IN ('queued', 'running')
    """,
    """
    INSERT INTO partition_states (job_name, partition_key, status, run_id, updated_at)
    SELECT DISTINCT ON (job_name, partition_key) job_name, partition_key, status, id,
        COALESCE(ended_at, queued_at)
    FROM runs ORDER BY job_name, partition_key, id DESC
    """,
)
_LOGS = """
    INSERT INTO run_logs (run_id, backfill_id, at, level, message)
    SELECT r.id, r.backfill_id, r.started_at + l * interval '1 ms', 'INFO',
        'processing ' || r.partition_key || ': step ' || l || ' of 3, 1250 rows'
    FROM runs r CROSS JOIN generate_series(1, :lines) l
"""
_EVALUATIONS = """
    INSERT INTO trigger_evaluations (trigger_name, outcome, skip_reason, error_message,
        error_traceback, started_at, evaluated_at, duration_seconds, actor, dry_run,
        backfill_ids, requests)
    SELECT (CAST(:names AS text[]))[1 + g % cardinality(CAST(:names AS text[]))],
        'skipped', 'nothing new upstream', NULL, NULL,
        timestamptz '2020-01-01' + g * interval '1 minute',
        timestamptz '2020-01-01' + g * interval '1 minute' + interval '20 ms', 0.02,
        'daemon', false, '[]'::json, '[]'::json
    FROM generate_series(1, :n) g
"""
_EXTRA_EVENTS = """
    INSERT INTO backfill_events (backfill_id, kind, at, actor, message)
    SELECT 1 + g % :b, 'retried', timestamptz '2020-01-01' + g * interval '1 second', 'bench',
        'retried ' || g
    FROM generate_series(1, :n) g
"""
_LATEST = """
    INSERT INTO trigger_latest_evaluations (trigger_name, evaluation_id)
    SELECT trigger_name, MAX(id) FROM trigger_evaluations GROUP BY trigger_name
"""
_AUDIT = """
    INSERT INTO audit_log (at, actor, role, operation, subject, outcome, codes, message,
        request_id, run_id)
    SELECT :epoch + g * interval '1 second', 'token-' || (g % 50), 'operator',
        (ARRAY['launchBackfill', 'cancelBackfill', 'pauseBackfill', 'resumeBackfill',
               'evaluateTrigger'])[1 + g % 5],
        'bf_' || g, 'succeeded', '[]'::json, NULL, md5(g::text), NULL
    FROM generate_series(1, :n) g
"""
