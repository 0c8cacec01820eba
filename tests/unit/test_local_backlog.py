"""How many runs the local launcher holds: about 0.25 s of work per worker, at most 64 per
worker on SQLite and 512 on PostgreSQL (``launchers.local.launcher``)."""

from __future__ import annotations

import pytest

from backfiller.launchers import LocalLauncher

DEFINITIONS = "tests.defs.jobs_daemon:definitions"


@pytest.mark.parametrize(
    ("database_url", "most"),
    [
        (None, 64),
        ("sqlite:///backfiller.db", 64),
        ("postgresql+psycopg://postgres@127.0.0.1:5432/test", 512),
        ("postgresql://postgres@127.0.0.1:5432/test", 512),
    ],
)
def test_the_backlog_is_a_quarter_second_of_work_within_the_databases_bound(
    database_url: str | None, most: int
) -> None:
    launcher = LocalLauncher(DEFINITIONS, 2, database_url=database_url)
    assert launcher.max_active == 2 * most
    assert launcher._target_active() == 2 * 2  # pace unknown: one waiting per worker
    launcher.state.mean_run_seconds = 0.01  # 10 ms runs: 25 a worker make 0.25 s
    assert launcher._target_active() == 2 * (1 + 25)
    launcher.state.mean_run_seconds = 0.0001  # 0.1 ms runs: the database's bound
    assert launcher._target_active() == min(2 * most, 2 * (1 + most))
