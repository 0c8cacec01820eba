"""``Job.partitionStatusRanges`` from the database's islands of one status equals the fold of
every state one by one, whatever the states: gaps, keys outside the space, spaces whose keys
are not in code-point order, many jobs in one request."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest
from sqlalchemy import insert

from backfiller.definitions.loading import Definitions
from backfiller.domain import RunState
from backfiller.planning import fold_statuses
from backfiller.resolvers.job_ranges import fold_segments
from backfiller.resolvers.translate import partition_status_of_run
from backfiller.schema.enums import PartitionStatus
from backfiller.storage import Database
from backfiller.storage.records import PartitionStateRecord
from tests.support import FrozenClock, GraphQLRunner

RANGES = """query($name: String!) { job(name: $name) {
  partitions { count } partitionStatusRanges { status startKey endKey startIndex count } } }"""
JOBS = "{ jobs { name partitionStatusRanges { status startKey endKey startIndex count } } }"
STATES = [RunState.SUCCESS, RunState.FAILED, RunState.RUNNING, RunState.QUEUED]


async def _store(database: Database, job: str, states: dict[str, RunState]) -> None:
    now = datetime(2026, 6, 1, tzinfo=UTC)
    rows = [
        {"job_name": job, "partition_key": k, "status": s, "run_id": i, "updated_at": now}
        for i, (k, s) in enumerate(states.items())
    ]
    async with database.write() as session:
        await session.execute(insert(PartitionStateRecord), rows)


def _expected(definitions: Definitions, job: str, states: dict[str, RunState], now: datetime):  # type: ignore[no-untyped-def]
    definition = definitions.get_job(job)
    assert definition is not None
    space = definition.partitions.key_space(now)
    known = sorted(
        (i, partition_status_of_run(s).value)
        for k, s in states.items()
        if (i := space.index_of(k)) is not None
    )
    return [
        {
            "status": r.status,
            "startKey": space.key_at(r.start),
            "endKey": space.key_at(r.start + r.count - 1),
            "startIndex": r.start,
            "count": r.count,
        }
        for r in fold_statuses(known, len(space), PartitionStatus.PENDING.value)
    ]


def _random_states(keys: list[str], rng: random.Random, runs: int) -> dict[str, RunState]:
    """Runs of one status over consecutive keys, with holes, and a key that is no partition."""
    states: dict[str, RunState] = {}
    at = 0
    while at < len(keys):
        length = rng.randint(1, 40)
        if rng.random() < 0.3:
            at += length  # never ran
            continue
        status = rng.choice(STATES[:runs])
        for key in keys[at : at + length]:
            states[key] = status
        at += length
    states[keys[len(keys) // 2] + "x"] = RunState.FAILED  # outside the space
    return states


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_a_time_jobs_ranges_are_the_fold_of_its_states(
    gql: GraphQLRunner, database: Database, definitions: Definitions, seed: int
) -> None:
    space = definitions.get_job("daily_sales").partitions.key_space(gql.clock())  # type: ignore[union-attr]
    keys = space.keys(0, len(space))
    states = _random_states(keys, random.Random(seed), runs=2 + seed % 3)
    await _store(database, "daily_sales", states)
    data = await gql(RANGES, {"name": "daily_sales"})
    assert data["job"]["partitionStatusRanges"] == _expected(
        definitions, "daily_sales", states, gql.clock()
    )


async def test_a_space_out_of_key_order_is_folded_state_by_state(
    gql: GraphQLRunner, database: Database, definitions: Definitions
) -> None:
    # region_report's keys are emea, amer, apac: not in code-point order.
    states = {"emea": RunState.SUCCESS, "apac": RunState.SUCCESS, "zz": RunState.FAILED}
    await _store(database, "region_report", states)
    data = await gql(RANGES, {"name": "region_report"})
    assert data["job"]["partitionStatusRanges"] == _expected(
        definitions, "region_report", states, gql.clock()
    )
    assert [r["status"] for r in data["job"]["partitionStatusRanges"]] == [
        "SUCCEEDED",
        "PENDING",
        "SUCCEEDED",
    ]


async def test_every_job_in_one_request(
    gql: GraphQLRunner, database: Database, definitions: Definitions
) -> None:
    rng = random.Random(7)
    stored: dict[str, dict[str, RunState]] = {}
    for job in ("daily_sales", "hourly_events"):
        space = definitions.get_job(job).partitions.key_space(gql.clock())  # type: ignore[union-attr]
        keys = space.keys(max(0, len(space) - 3000), len(space))
        stored[job] = _random_states(keys, rng, runs=4)
        await _store(database, job, stored[job])
    data = await gql(JOBS)
    by_name = {j["name"]: j["partitionStatusRanges"] for j in data["jobs"]}
    for defined in definitions.job_list:
        assert by_name[defined.name] == _expected(
            definitions, defined.name, stored.get(defined.name, {}), gql.clock()
        )


def test_segments_fold_with_the_unknown_between_them() -> None:
    folded = fold_segments([(5, 2, "a"), (0, 2, "a"), (2, 3, "a"), (9, 4, "b")], 11, "p")
    assert [(r.status, r.start, r.count) for r in folded] == [
        ("a", 0, 7),
        ("p", 7, 2),
        ("b", 9, 2),
    ]


async def test_the_ranges_follow_the_runs_of_the_job(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    """Read between the claim, the end and a second run: each read sees the change (the
    process keeps a job's islands while the job's version stays)."""
    from backfiller.daemon.ticks import DaemonState, launch_runs, plan_backfills
    from backfiller.launchers import InlineLauncher
    from tests.integration.test_daemon_ticks import drive

    async def statuses() -> list[tuple[str, int]]:
        data = await gql(RANGES, {"name": "daily_sales"})
        return [(r["status"], r["count"]) for r in data["job"]["partitionStatusRanges"]][:2]

    launch = """mutation { launchBackfill(input: {target: {job: "daily_sales"},
        partitions: {range: {start: "2024-01-01", end: "2024-01-03"}}}) { backfill { id } } }"""
    assert (await statuses())[0][0] == "PENDING"
    await gql(launch)
    state, launcher = DaemonState(), InlineLauncher(definitions)
    await plan_backfills(database, definitions, clock, state)
    await launch_runs(database, definitions, clock, launcher, state)
    assert (await statuses())[0] == ("QUEUED", 3)  # claimed; the results not written yet
    await drive(database, definitions, clock, launcher, state)
    assert (await statuses())[0] == ("SUCCEEDED", 3)
