"""Every query the API runs reads an index at a million rows, on PostgreSQL.

A database of a million runs, slots, log lines, backfill events, trigger evaluations and audit
entries (``bench/history_rows.py``, in SQL, analyzed), then every query operation of the
first-party clients (``contracts/v1/operations``) and the reads their filters lead to, run
through the schema with every statement they send recorded; each recorded statement is
explained (``EXPLAIN (FORMAT JSON)``, with its own parameters) and no plan may read one of
those tables by a sequential scan.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from graphql import OperationDefinitionNode, OperationType, parse
from sqlalchemy import create_engine, event, text

from backfiller.config import Settings
from backfiller.definitions.loading import Definitions
from backfiller.examples.quickstart import definitions as example_definitions
from backfiller.storage import Database
from backfiller.storage.engine import sync_database_url
from backfiller.storage.history_partitions import PARTITIONED, is_partition
from backfiller.storage.migrations import upgrade_database
from bench.databases import scratch_postgres
from bench.history_rows import HistoryShape, build_history
from tests.support import REPO, FrozenClock, GraphQLRunner

pytestmark = pytest.mark.skipif(
    not os.environ.get("BACKFILLER_TEST_DATABASE_URL"), reason="the plans are PostgreSQL's"
)

ROWS = 1_000_000
WATCHED = {"runs", "slots", "run_logs", "backfill_events", "trigger_evaluations", "audit_log"}
OPERATIONS = REPO / "contracts" / "v1" / "operations"


def _shape() -> HistoryShape:
    daily = example_definitions.get_job("daily_sales")
    assert daily is not None
    return HistoryShape(
        runs=ROWS,
        jobs=[("daily_sales", daily.partitions.fingerprint())]
        + [(f"job_{i}", "none") for i in range(9)],
        log_lines=1,
        triggers=("missing_sales_days", *(f"trigger_{i}" for i in range(9))),
        evaluations=ROWS,
        audit=ROWS,
        extra_events=ROWS,
    )


@pytest.fixture(scope="module")
def history_url() -> Iterator[str]:
    with scratch_postgres(os.environ["BACKFILLER_TEST_DATABASE_URL"], "bf_plans") as url:
        upgrade_database(url)
        engine = create_engine(sync_database_url(url))
        try:
            with engine.begin() as conn:
                build_history(conn, _shape())
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text("ANALYZE"))
        finally:
            engine.dispose()
        yield url


def _queries() -> list[tuple[str, str]]:
    """(name, document) of every query operation of the first-party clients."""
    found: list[tuple[str, str]] = []
    for path in sorted(OPERATIONS.glob("*.graphql")):
        document = parse(path.read_text())
        for definition in document.definitions:
            if (
                isinstance(definition, OperationDefinitionNode)
                and definition.operation is OperationType.QUERY
                and definition.name is not None
            ):
                found.append((f"{path.stem}:{definition.name.value}", path.read_text()))
    return found


# The reads the operations' filters lead to, beside the operations as the clients send them.
EXTRA = {
    "runs by job": '{ runs(first: 50, job: "daily_sales") { edges { node { id } } } }',
    "runs by partition": (
        '{ runs(first: 50, partitionKey: "2016-03-01") { edges { node { id } } } }'
    ),
    "runs by status": "{ runs(first: 50, statuses: [FAILED, RUNNING]) { edges { node { id } } } }",
    "runs": "{ runs(first: 50) { edges { node { id partitionKeys } } } }",
    "audit": "{ auditLog(first: 50) { edges { node { operation } } } }",
    "audit by actor": '{ auditLog(first: 50, actor: "token-7") { edges { node { operation } } } }',
    "audit by operation": (
        '{ auditLog(first: 50, operation: "pauseBackfill") { edges { node { operation } } } }'
    ),
    "backfills by statuses": (
        "{ backfills(first: 50, filter: {statuses: [RUNNING, CANCELED]}) "
        "{ edges { node { id } } } }"
    ),
    "backfills by tag": (
        '{ backfills(first: 50, filter: {tag: {key: "team", value: "t3"}}) '
        "{ edges { node { id } } } }"
    ),
    "backfills by job": (
        '{ backfills(first: 50, filter: {job: "daily_sales"}) { edges { node { id } } } }'
    ),
}


def _variables(operation: str, backfill: str, run: str) -> dict[str, Any]:
    name = "missing_sales_days" if "Trigger" in operation else "daily_sales"
    if "Asset" in operation:
        name = "raw_orders"
    return {
        "id": run if "RunLogs" in operation else backfill,
        "first": 50,
        "lastRuns": 2000,
        "after": None,
        "name": name,
        "job": "daily_sales",
        "partitionKey": "2016-03-01",
        "statuses": ["FAILED", "SUCCESS"],
        "newestFirst": True,
        "filter": {"statuses": ["COMPLETED_SUCCESS", "RUNNING"]},
    }


EMPTY = {
    f"{table}_{part}"
    for table in PARTITIONED
    for part in ("b0", "default", f"b{_shape().backfills + 1}")
}
"""The history's partitions that this history leaves empty: the migrations' first range and
the ``DEFAULT`` partition (its backfills are all in the range the migrations made ahead), and
the range ahead of it (``bench.history_rows``): scanning one reads nothing."""


def _table(name: str) -> str:
    """The table of a relation: a partition's (``storage.history_partitions``), or itself."""
    return name.rsplit("_", 1)[0] if is_partition(name) else name


def _seq_scans(plan: Any) -> set[str]:
    """The watched tables a plan (a node of ``EXPLAIN (FORMAT JSON)``) reads sequentially."""
    found: set[str] = set()
    if isinstance(plan, dict):
        name = str(plan.get("Relation Name"))
        if plan.get("Node Type") == "Seq Scan" and name not in EMPTY and _table(name) in WATCHED:
            found.add(name)
        for value in plan.values():
            found |= _seq_scans(value)
    elif isinstance(plan, list):
        for value in plan:
            found |= _seq_scans(value)
    return found


async def test_every_query_of_the_api_reads_an_index_at_a_million_rows(
    history_url: str, tmp_path: Path
) -> None:
    database = Database(history_url)
    statements: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith(("SELECT", "WITH")):
            statements.append((statement, parameters))

    event.listen(database.write_engine.sync_engine, "before_cursor_execute", record)
    definitions: Definitions = example_definitions
    gql = GraphQLRunner(database, definitions, Settings(), FrozenClock(datetime.now(UTC)))
    plans: dict[str, set[str]] = {}
    explained = 0
    engine = create_engine(sync_database_url(history_url))
    try:
        backfill = "bf_990"
        run = "run_989500"
        documents = [(n, d, _variables(n, backfill, run)) for n, d in _queries()]
        documents += [(n, d, {}) for n, d in EXTRA.items()]
        with engine.connect() as conn:
            for empty in EMPTY:
                assert conn.execute(text(f"SELECT count(*) FROM {empty}")).scalar_one() == 0
            for name, document, variables in documents:
                statements.clear()
                operation = name.split(":")[-1] if ":" in name else None
                result = await gql.schema.execute(
                    document,
                    variable_values=variables,
                    context_value=gql.context(),
                    operation_name=operation,
                )
                assert not result.errors, (name, result.errors)
                for statement, parameters in statements:
                    explained += 1
                    plan = conn.exec_driver_sql(
                        "EXPLAIN (FORMAT JSON) " + statement, parameters
                    ).scalar_one()
                    scans = _seq_scans(plan)
                    if scans:
                        plans[f"{name}: {statement[:160]}"] = scans
    finally:
        engine.dispose()
        await database.dispose()
    assert explained > len(documents)  # the reads were seen
    assert plans == {}
