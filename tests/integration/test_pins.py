"""The one pinner (``services.selections.PinCache``): a stored backfill pinned to its key spaces
as of its launch, kept while the definitions stay the same, pinned again after the TTL over
dynamic partitions, and a typed :class:`Unpinnable` (never an exception, never a string) when
the definitions no longer fit. Launches store what a backfill runs in ``kind``."""

from __future__ import annotations

from datetime import datetime

from backfiller.config import Settings
from backfiller.definitions.loading import Definitions
from backfiller.domain import BackfillKind, SelectionKind
from backfiller.examples import quickstart
from backfiller.examples.assets import ASSETS
from backfiller.planning import Selection
from backfiller.services.backend import Backend
from backfiller.services.launch_types import AssetRequest, LaunchRequest
from backfiller.services.launching import Launched, create_backfill, validate_launch
from backfiller.services.selections import PinCache, Pinned, PinnedAssets, Unpinnable
from backfiller.storage import Database
from backfiller.storage.records import BackfillRecord
from backfiller.storage.repositories import DynamicPartitionRepository
from tests.support import FrozenClock

DEFS = Definitions(jobs=quickstart.definitions.jobs, assets=ASSETS)


async def _launch(backend: Backend, request: LaunchRequest) -> BackfillRecord:
    plan = await validate_launch(backend, request, creator=None)
    assert not isinstance(plan, list), plan
    launched = await create_backfill(backend, plan.new)
    assert isinstance(launched, Launched)
    return launched.record


async def _customers(database: Database, keys: list[str], now: datetime) -> None:
    async with database.write() as session:
        await DynamicPartitionRepository(session).add("customers", keys, now)


async def test_a_job_backfill_is_pinned_once_then_again_after_its_dynamic_keys_change(
    database: Database, clock: FrozenClock
) -> None:
    backend = Backend(database, DEFS, Settings(), clock)
    await _customers(database, ["acme", "globex"], clock())
    record = await _launch(
        backend,
        LaunchRequest(job="customer_sync", selection=Selection(SelectionKind.ALL)),
    )
    assert (record.kind, record.job_name) == (BackfillKind.JOB, "customer_sync")
    kept, fresh = PinCache(dynamic_ttl=3600), PinCache(dynamic_ttl=0)
    first = await kept.pin(database, DEFS, record)
    assert isinstance(first, Pinned)
    assert (first.job.name, first.resolved.total, first.space.keys(0, 10)) == (
        "customer_sync",
        2,
        ["acme", "globex"],
    )
    assert await kept.pin(database, DEFS, record) is first
    async with database.write() as session:
        await DynamicPartitionRepository(session).delete("customers", ["globex"])
    assert await kept.pin(database, DEFS, record) is first  # within the TTL
    gone = await fresh.pin(database, DEFS, record)
    assert gone == Unpinnable(
        "the job now has 1 partitions, fewer than the 2 launched",
        "the partitions of the backfill vanished: "
        "the job now has 1 partitions, fewer than the 2 launched",
    )


async def test_a_job_gone_from_the_definitions_is_unpinnable(
    database: Database, clock: FrozenClock
) -> None:
    backend = Backend(database, DEFS, Settings(), clock)
    record = await _launch(
        backend,
        LaunchRequest(job="daily_sales", selection=Selection(SelectionKind.ALL)),
    )
    pinned = await backend.pins.pin(database, DEFS, record)
    assert isinstance(pinned, Pinned)
    without = Definitions(jobs=[j for j in DEFS.jobs if j.name != "daily_sales"])
    assert await backend.pins.pin(database, without, record) == Unpinnable(
        "job 'daily_sales' is no longer in the definitions",
        "job 'daily_sales' is no longer in the definitions",
    )


async def test_an_asset_backfill_has_its_kind_and_is_pinned_per_graph(
    database: Database, clock: FrozenClock
) -> None:
    backend = Backend(database, DEFS, Settings(), clock)
    request = LaunchRequest(
        job=None,
        selection=Selection(SelectionKind.RANGE, "2024-03-01", "2024-03-03"),
        assets=AssetRequest(("daily_visits",), downstream=True),
    )
    record = await _launch(backend, request)
    assert (record.kind, record.job_name) == (BackfillKind.ASSETS, "")
    pinned = await backend.pins.pin_assets(database, DEFS, record)
    assert isinstance(pinned, PinnedAssets)
    assert pinned.graph is DEFS.asset_graph
    assert list(pinned.spaces) == ["daily_visits", "monthly_report", "visits_summary"]
    assert await backend.pins.pin_assets(database, DEFS, record) is pinned
    reloaded = Definitions(jobs=DEFS.jobs)
    assert await backend.pins.pin_assets(database, reloaded, record) == Unpinnable(
        "asset 'daily_visits' is no longer in the definitions",
        "asset 'daily_visits' is no longer in the definitions",
    )
