"""The asyncio client against a real server process: the same calls as the sync client."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import assert_type

import pytest

from backfiller import (
    AllPartitions,
    AsyncClient,
    BackfillerUserError,
    BackfillRequest,
    PartitionKeys,
    PartitionRange,
)
from backfiller.client import Backfill, BackfillStatus, Run, TriggerEvaluation, TriggerOutcome
from tests.integration.live_triggers import server

__all__ = ["server"]  # the shared fixture


@pytest.fixture
async def client(server: str) -> AsyncIterator[AsyncClient]:
    async with AsyncClient(server) as c:
        yield c


async def test_the_async_client_launches_lists_steers_and_waits(client: AsyncClient) -> None:
    assert await client.api_version() == "v1"
    tag = uuid.uuid4().hex
    request = BackfillRequest(
        job="daily", partitions=PartitionRange("2024-01-01", "2024-01-10"), tags={"t": tag}
    )
    preview = await client.preview_backfill(request)
    assert preview.total == 10
    launched = [await client.launch_backfill(request) for _ in range(3)]
    assert_type(launched[0], Backfill)
    listed = [b.id async for b in client.list_backfills(tag=("t", tag), page_size=2)]
    assert listed == [b.id for b in reversed(launched)]
    first = launched[0].id
    assert (await client.pause(first)).status is BackfillStatus.PAUSED
    assert (await client.resume(first)).status is BackfillStatus.REQUESTED
    assert (await client.cancel(first)).status is BackfillStatus.CANCELED
    assert await client.get_backfill(first) is not None
    assert await client.get_backfill("bf_999999999") is None
    runs = [r async for r in client.runs(first)]
    assert_type(runs, list[Run])
    assert runs == []
    ranges = await client.partition_status_ranges(first)
    assert sum(r.count for r in ranges) == 10

    progress: list[BackfillStatus] = []

    async def record(backfill: Backfill) -> None:
        progress.append(backfill.status)

    final = await client.wait(first, on_progress=record, poll_interval=0.05)
    assert final.status is BackfillStatus.CANCELED
    assert progress == [BackfillStatus.CANCELED]
    with pytest.raises(TimeoutError):
        await client.wait(launched[1].id, poll_interval=0.05, timeout=0.2)
    child = await client.retry(first, include=["NOT_RUN"])
    assert child.parent_id == first

    with pytest.raises(BackfillerUserError) as refused:
        await client.launch_backfill(BackfillRequest(job="nope", partitions=AllPartitions()))
    assert refused.value.codes == ("JOB_NOT_FOUND",)


async def test_the_async_client_reads_jobs_partitions_and_triggers(client: AsyncClient) -> None:
    assert [j.name for j in await client.jobs()] == ["customer_sync", "daily", "letters"]
    assert (await client.job("letters")) is not None
    assert await client.add_dynamic_partitions("customers", ["acme"]) == 1
    assert await client.delete_dynamic_partitions("customers", ["acme"]) == 1

    evaluation = await client.evaluate_trigger("missing_letters")
    assert_type(evaluation, TriggerEvaluation)
    assert evaluation.outcome is TriggerOutcome.LAUNCHED
    assert evaluation.backfills[0].partitions == PartitionKeys(["a", "b", "c"])
    dry = await client.evaluate_trigger("launches", dry_run=True)
    assert dry.dry_run and dry.backfills == ()
    assert "launches" in [t.name for t in await client.triggers()]
    trigger = await client.trigger("missing_letters")
    assert trigger is not None and trigger.last_evaluation is not None
    assert (await client.set_trigger_enabled("every_minute", False)).enabled is False
    history = [e.id async for e in client.trigger_evaluations("missing_letters")]
    assert history == [evaluation.id]
    with pytest.raises(BackfillerUserError):
        await client.evaluate_trigger("nope")
