"""Shared fixtures: a real database (SQLite, or PostgreSQL when
``BACKFILLER_TEST_DATABASE_URL`` is set), services, schema execution and live servers."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import create_engine, text

from backfiller.config import Settings
from backfiller.definitions.loading import Definitions
from backfiller.examples.quickstart import definitions as example_definitions
from backfiller.storage import Database
from backfiller.storage.metadata import metadata
from backfiller.storage.migrations import upgrade_database
from bench.databases import scratch_postgres
from tests.support import FrozenClock, GraphQLRunner

if TYPE_CHECKING:
    from tests.operations.receiver import Receiver

PG_ENV = "BACKFILLER_TEST_DATABASE_URL"


def pytest_report_header() -> str:
    url = os.environ.get(PG_ENV)
    return f"backfiller test database: {'PostgreSQL ' + url if url else 'SQLite'}"


@pytest.fixture(scope="session")
def pg_template_url() -> Iterator[str | None]:
    """A fresh PostgreSQL database for this test session (dropped at the end)."""
    base = os.environ.get(PG_ENV)
    if not base:
        yield None
        return
    with scratch_postgres(base, "bf_test") as url:
        upgrade_database(url)
        yield url


# Empties every table and restarts every sequence, as a fresh database has them, in one round
# trip. DELETE rather than TRUNCATE: a test leaves a few rows in a few tables, and TRUNCATE
# gives each of the tables and their indexes new files (about 60 ms a test, against 15).
_EMPTY_POSTGRES = (
    "DO $$ DECLARE s regclass; BEGIN "
    + " ".join(f'DELETE FROM "{t.name}";' for t in reversed(metadata.sorted_tables))
    + " FOR s IN SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE c.relkind = 'S' AND n.nspname = current_schema() LOOP"
    " EXECUTE format('ALTER SEQUENCE %s RESTART', s); END LOOP; END $$"
)


def _empty_postgres(url: str) -> None:
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text(_EMPTY_POSTGRES))
    engine.dispose()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One SQLite file migrated to the newest revision, once per test session.

    Each test gets a copy: copying a file costs far less than running every migration.
    """
    path = tmp_path_factory.mktemp("template") / "backfiller.db"
    upgrade_database(f"sqlite:///{path}")
    for suffix in ("-wal", "-shm"):  # the migrations close their engine: nothing is pending
        assert not path.with_name(path.name + suffix).exists()
    return path


@pytest.fixture
def database_url(tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A migrated, empty database for one test."""
    pg_url: str | None = request.getfixturevalue("pg_template_url")
    if pg_url is not None:
        _empty_postgres(pg_url)
        return pg_url
    template: Path = request.getfixturevalue("sqlite_template")
    path = tmp_path / "backfiller.db"
    shutil.copyfile(template, path)
    return f"sqlite:///{path}"


@pytest.fixture(scope="module")
def module_database_url(
    tmp_path_factory: pytest.TempPathFactory, pg_template_url: str | None
) -> str:
    """A migrated, empty database for one test module (a server or daemon started once for
    the module uses it). A module that uses it must not also use ``database_url``, which
    empties PostgreSQL's."""
    if pg_template_url is not None:
        _empty_postgres(pg_template_url)
        return pg_template_url
    url = f"sqlite:///{tmp_path_factory.mktemp('module') / 'backfiller.db'}"
    upgrade_database(url)
    return url


@pytest.fixture
def is_postgres(pg_template_url: str | None) -> bool:
    return pg_template_url is not None


@pytest.fixture
async def database(database_url: str) -> AsyncIterator[Database]:
    db = Database(database_url)
    yield db
    await db.dispose()


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(datetime(2026, 6, 15, 12, 0, tzinfo=UTC))


@pytest.fixture
def definitions() -> Definitions:
    return example_definitions


@pytest.fixture
def settings() -> Settings:
    return Settings()


@pytest.fixture
def gql(
    database: Database, definitions: Definitions, settings: Settings, clock: FrozenClock
) -> GraphQLRunner:
    """Run GraphQL operations through ``schema.execute`` against the real database."""
    return GraphQLRunner(database, definitions, settings, clock)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A real webhook receiver on 127.0.0.1 (``tests/operations/receiver.py``)."""
    from tests.operations.receiver import Receiver

    found = Receiver()
    yield found
    found.close()


# Modules whose behaviour does not depend on the database behind the server: the clients, the
# docs run against `backfiller dev` (SQLite by design), packaging, the CLI's wording, the REST
# fuzzing of the HTTP layer, the edges of the server and daemon. They run in the SQLite suite
# only (`make test-postgres` deselects them), so the PostgreSQL suite spends its time on what
# PostgreSQL changes.
ANY_DATABASE = frozenset(
    {
        "backfiller/examples/test_quickstart.py",  # a user's test: its own SQLite file
        "tests/acceptance/test_cli_client.py",
        "tests/acceptance/test_docs_run.py",
        "tests/acceptance/test_first_hour.py",
        "tests/acceptance/test_go_client.py",
        "tests/acceptance/test_java_client.py",
        "tests/acceptance/test_packaging.py",
        "tests/acceptance/test_rest_fuzz.py",
        "tests/acceptance/test_typescript_client.py",
        "tests/acceptance/celery/test_redis_transport.py",  # Redis alone, no database
        # The HTTP and socket layers, the metrics ports, the logs, the rate limiter and the
        # webhook client: what they guard is decided before any statement reaches a database.
        "tests/integration/test_http.py",
        "tests/operations/test_logs.py",
        "tests/operations/test_metrics_access.py",
        "tests/security/test_log_lines.py",
        # Who may call what: decided by the token's role before the operation runs.
        "tests/security/test_matrix.py",
        "tests/security/test_metrics_ports.py",
        "tests/security/test_parsing_holes.py",
        "tests/security/test_rate_buckets.py",
        "tests/security/test_sockets.py",
        "tests/security/test_webhook_bounds.py",
        "tests/security/test_webhook_egress.py",
    }
)


# Tiers that never reach the test database (`make test-unit`: pure functions, the import map,
# the SDL contract; a unit test that needs storage opens its own SQLite file): once is enough.
DATABASE_FREE_TIERS = ("tests/unit/", "tests/contract/")


# The longest modules (test time in both suites, `--durations` of a full run), run first: each
# suite hands whole modules to its pytest-xdist processes in collection order, and a long
# module handed out last (the webhooks', say, collected after every acceptance module) kept one
# process busy after the other had finished. A module not listed keeps its place after them.
LONGEST_FIRST = (
    "tests/acceptance/test_execution_guarantees.py",
    "tests/operations/test_webhooks.py",
    "tests/acceptance/test_daemon_chaos.py",
    "tests/acceptance/test_daemon_e2e.py",
    "tests/acceptance/celery/test_celery_launcher.py",
    "tests/acceptance/test_docs_run.py",
    "tests/acceptance/celery/test_celery_worker_cut.py",
    "tests/acceptance/test_fair_share.py",
    "tests/security/test_log_lines.py",
    "tests/acceptance/celery/test_celery_observability.py",
    "tests/acceptance/test_packaging.py",
    "tests/acceptance/test_ranged_runs_e2e.py",
    "tests/acceptance/celery/test_celery_daemon_cuts_redis.py",
    "tests/security/test_fuzz.py",
    "tests/acceptance/celery/test_celery_daemon_cuts_rabbitmq.py",
    "tests/security/test_broker_messages.py",
    "tests/security/test_matrix.py",
    "tests/browser/test_pages.py",
    "tests/acceptance/celery/test_celery_republish.py",
    "tests/browser/test_steering.py",
    "tests/acceptance/test_assets_e2e.py",
    "tests/integration/test_http.py",
    "tests/operations/test_json_everywhere.py",
    "tests/integration/test_query_plans.py",
    "tests/security/test_sockets.py",
    "tests/integration/test_triggers_live.py",
)


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    root = Path(str(config.rootpath))
    rank = {path: place for place, path in enumerate(LONGEST_FIRST)}
    items.sort(
        key=lambda item: rank.get(
            Path(str(item.fspath)).relative_to(root).as_posix(), len(LONGEST_FIRST)
        )
    )
    for item in items:
        if "acceptance" in str(item.fspath):
            item.add_marker(pytest.mark.acceptance)
        path = Path(str(item.fspath)).relative_to(root).as_posix()
        if path in ANY_DATABASE or path.startswith(DATABASE_FREE_TIERS):
            item.add_marker(pytest.mark.any_database)
        # Skipped before its fixtures (a server, daemons) are set up for nothing.
        needs = item.get_closest_marker("postgresql_only")
        if needs is not None and not os.environ.get(PG_ENV):
            item.add_marker(pytest.mark.skip(reason=needs.args[0]))


RANGES_BASE = 1_000_000
"""Backfill ids of the ranges a test makes (``history_ranges``): above any other test's."""


@pytest.fixture
def only_postgres(is_postgres: bool) -> None:
    """Skip on SQLite: the history's ranges are PostgreSQL's partitions (SQLite keeps plain
    tables)."""
    if not is_postgres:
        pytest.skip("SQLite keeps plain tables")


@pytest.fixture
def history_ranges(database_url: str, is_postgres: bool) -> Iterator[Callable[[int], None]]:
    """``split(n)``: on PostgreSQL, the history's ranges become those of the next ``n``
    backfills launched (a range of their own, closed as soon as they are launched, so that
    retention may drop it) and a range ahead for the backfills after them; on SQLite, nothing.
    After the test, the ranges are as migration 0049 makes them on an empty database."""
    if not is_postgres:
        yield lambda n: None
        return
    from backfiller.storage.history_partitions import PARTITIONED, Range, create_range, ranges

    engine = create_engine(database_url)

    def reset(to: list[Range]) -> None:
        with engine.begin() as conn:
            for r in ranges(conn):
                for table in PARTITIONED:
                    conn.execute(text(f"DROP TABLE {r.name(table)}"))
            for r in to:
                create_range(conn, r)

    def split(n: int) -> None:
        first = RANGES_BASE + 1
        reset([Range(first, first + n), Range(first + n, first + n + 1000)])
        with engine.begin() as conn:
            conn.execute(text("SELECT setval('backfills_id_seq', :v)"), {"v": RANGES_BASE})

    yield split
    reset([Range(0, 1), Range(1, 1001)])
    engine.dispose()
