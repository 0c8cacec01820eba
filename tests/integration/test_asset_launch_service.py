"""Asset launches through the launch service (``services.asset_launching``), against the real
database: a trigger's ``BackfillRequest(assets=...)`` launches an asset backfill and its
evaluation keeps the target; a job-scoped token may not launch, preview or retry one."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy import func, select

from backfiller import AssetSelection, BackfillRequest, PartitionRange, trigger
from backfiller.definitions.loading import Definitions
from backfiller.domain.roles import Role
from backfiller.examples import quickstart
from backfiller.examples.assets import ASSETS
from backfiller.resolvers.access import Principal
from backfiller.services.backend import Backend
from backfiller.services.trigger_evaluation import evaluate_trigger_now
from backfiller.services.trigger_requests import from_json, to_json
from backfiller.storage import Database
from backfiller.storage.records import BackfillRecord
from backfiller.storage.repositories import BackfillRepository
from tests.support import LAUNCH, FrozenClock, GraphQLRunner

MARCH = PartitionRange("2024-03-01", "2024-03-31")


@trigger
def visits_of_march(context: object) -> BackfillRequest:
    return BackfillRequest(
        assets=AssetSelection(["daily_visits"], downstream=True), partitions=MARCH
    )


DEFS = Definitions(jobs=quickstart.definitions.jobs, assets=ASSETS, triggers=[visits_of_march])


async def _backfills(database: Database) -> int:
    async with database.read() as session:
        return int((await session.execute(select(func.count(BackfillRecord.id)))).scalar_one())


async def test_a_trigger_launches_an_asset_backfill(
    database: Database, gql: GraphQLRunner, clock: FrozenClock
) -> None:
    backend = Backend(database, DEFS, gql.settings, clock)
    dry = await evaluate_trigger_now(backend, visits_of_march, actor=None, dry_run=True)
    [entry] = dry.requests
    assert entry["request"]["assets"] == {
        "names": ["daily_visits"],
        "upstream": False,
        "downstream": True,
    }
    assert [line[0] for line in entry["preview"]["assets"]] == [
        "daily_visits",
        "monthly_report",
        "visits_summary",
    ]
    assert from_json(entry) == from_json(to_json(from_json(entry)))  # stored form round-trips
    assert await _backfills(database) == 0

    launched = await evaluate_trigger_now(backend, visits_of_march, actor=None, dry_run=False)
    [entry] = launched.requests
    assert entry["problems"] == []
    async with database.read() as session:
        record = await BackfillRepository(session).get(entry["backfill_id"])
    assert record is not None and record.asset_target is not None
    assert [p["name"] for p in record.asset_target["parts"]] == [
        "daily_visits",
        "monthly_report",
        "visits_summary",
    ]
    assert record.total == 31 + 1 + 1
    assert record.creator == "trigger:visits_of_march"


PREVIEW = """
mutation($input: LaunchBackfillInput!) {
  previewBackfill(input: $input) { preview { total } userErrors { code message field } }
}
"""
RETRY = """
mutation($id: ID!) {
  retryBackfill(input: {id: $id, include: [NOT_RUN]}) { backfill { id } userErrors { code } }
}
"""
ASSET_INPUT = {
    "target": {"assets": {"names": ["raw_events"], "downstream": True}},
    "partitions": {"range": {"start": "2024-03-01", "end": "2024-03-02"}},
}


async def test_a_job_scoped_token_cannot_launch_assets(
    gql: GraphQLRunner, database: Database
) -> None:
    admin = await gql(LAUNCH, {"input": ASSET_INPUT})
    assert admin["launchBackfill"]["userErrors"] == []
    pk = admin["launchBackfill"]["backfill"]["id"]
    await gql(
        "mutation($id: ID!) { cancelBackfill(input: {id: $id}) { userErrors { code } } }",
        {"id": pk},
    )
    before = await _backfills(database)

    scoped = replace(
        gql, principal=Principal("scoped", Role.OPERATOR, jobs=frozenset({"daily_sales"}))
    )
    forbidden = [
        {
            "code": "FORBIDDEN",
            "message": "this token may not launch asset 'raw_events'",
            "field": ["target", "assets", "names"],
        }
    ]
    launch = await scoped(LAUNCH, {"input": ASSET_INPUT})
    assert launch["launchBackfill"] == {"backfill": None, "userErrors": forbidden}
    preview = await scoped(PREVIEW, {"input": ASSET_INPUT})
    assert preview["previewBackfill"] == {"preview": None, "userErrors": forbidden}
    retry = await scoped(RETRY, {"id": pk})
    assert retry["retryBackfill"] == {"backfill": None, "userErrors": [{"code": "FORBIDDEN"}]}
    assert await _backfills(database) == before
