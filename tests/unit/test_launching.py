"""The launch service's validation and the translations around it, with no database.

The jobs below have computed key spaces (daily, static), so validating never reads storage:
the ``Database`` is built (lazily) and never connected.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import strawberry

from backfiller import domain
from backfiller.config import Settings
from backfiller.definitions.requests import BackfillRequest, PartitionKeys, PartitionRange
from backfiller.examples.quickstart import definitions
from backfiller.planning import Selection
from backfiller.resolvers.commands import public_field, request_from_input, user_error_of
from backfiller.schema.common import TagInput, UserErrorCode
from backfiller.schema.enums import BackfillOrder, Reprocess
from backfiller.schema.inputs import (
    BackfillTargetInput,
    LaunchBackfillInput,
    PartitionRangeInput,
    PartitionSelectionInput,
)
from backfiller.services.backend import Backend
from backfiller.services.launch_checks import scalar_problems
from backfiller.services.launch_types import (
    ASSETS_JOB,
    AssetRequest,
    LaunchPlan,
    LaunchPreview,
    LaunchProblem,
    LaunchRequest,
    ProblemCode,
    fingerprint_of,
    new_backfill,
)
from backfiller.services.launching import validate_launch
from backfiller.services.trigger_evaluation import launch_request_of
from backfiller.services.trigger_requests import EvaluatedRequest, from_json, to_json
from backfiller.storage import Database

JANUARY = Selection(domain.SelectionKind.RANGE, "2026-01-01", "2026-01-31")
NOW = datetime(2026, 6, 15, 12, tzinfo=UTC)


@pytest.fixture
async def backend(tmp_path: Path) -> AsyncIterator[Backend]:
    path = tmp_path / "never.db"
    database = Database(f"sqlite:///{path}", inline=False)
    yield Backend(database, definitions, Settings(max_partitions_per_backfill=100), lambda: NOW)
    await database.dispose()
    assert not path.exists()  # validating read nothing


def request(**changes: Any) -> LaunchRequest:
    given: dict[str, Any] = {"job": "daily_sales", "selection": JANUARY}
    return LaunchRequest(**(given | changes))


def problems_of(
    found: LaunchPlan | list[LaunchProblem],
) -> list[tuple[str, tuple[str, ...] | None]]:
    assert isinstance(found, list)
    return [(p.code.value, p.field) for p in found]


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"title": "x" * 501}, [("invalid_argument", ("title",))]),
        ({"description": "a\x00b"}, [("invalid_argument", ("description",))]),
        (
            {"idempotency_key": " "},
            [("invalid_argument", ("idempotency_key",))],
        ),
        ({"max_concurrent_runs": 0}, [("invalid_argument", ("max_concurrent_runs",))]),
        ({"max_concurrent_runs": 10_001}, [("invalid_argument", ("max_concurrent_runs",))]),
        (
            {"tags": (("a", "1"), ("a", "2"))},
            [("invalid_argument", ("tags", "1", "key"))],
        ),
        ({"tags": ((" ", "1"),)}, [("invalid_argument", ("tags", "0", "key"))]),
        ({"tags": tuple((str(i), "v") for i in range(51))}, [("invalid_argument", ("tags",))]),
        (
            {"selection": Selection(domain.SelectionKind.KEYS, keys=("ok", "x" * 201, "y" * 201))},
            [("invalid_partition_range", ("partitions", "keys", "1"))],
        ),
        (
            {"selection": Selection(domain.SelectionKind.RANGE, "a\x00", "b\x00")},
            [
                ("invalid_partition_range", ("partitions", "range", "start")),
                ("invalid_partition_range", ("partitions", "range", "end")),
            ],
        ),
        ({"run_config": {"big": "x" * 300_000}}, [("invalid_run_config", ("run_config",))]),
        ({}, []),
    ],
)
def test_scalar_problems(changes: dict[str, Any], expected: list[Any]) -> None:
    assert [(p.code.value, p.field) for p in scalar_problems(request(**changes))] == expected


async def test_an_unknown_job_comes_first_with_the_other_problems(backend: Backend) -> None:
    found = await validate_launch(backend, request(job="nope", title="x" * 501), creator=None)
    assert problems_of(found) == [("job_not_found", ("job",)), ("invalid_argument", ("title",))]


async def test_a_missing_job_is_named(backend: Backend) -> None:
    found = await validate_launch(backend, request(job=None), creator=None)
    assert isinstance(found, list) and found[0].message == "a target job is required"


async def test_the_run_config_is_checked_against_the_jobs_schema(backend: Backend) -> None:
    bad = request(
        job="region_report",
        selection=Selection(domain.SelectionKind.ALL),
        run_config={"currency": "GBP"},
    )
    found = await validate_launch(backend, bad, creator=None)
    assert problems_of(found) == [("invalid_run_config", ("run_config", "currency"))]


async def test_selection_problems_keep_their_field(backend: Backend) -> None:
    backwards = Selection(domain.SelectionKind.RANGE, "2026-01-31", "2026-01-01")
    found = await validate_launch(backend, request(selection=backwards), creator=None)
    assert problems_of(found) == [("invalid_partition_range", ("partitions", "range"))]


async def test_the_servers_cap_on_partitions(backend: Backend) -> None:
    year = Selection(domain.SelectionKind.RANGE, "2025-01-01", "2025-12-31")
    found = await validate_launch(backend, request(selection=year), creator=None)
    assert problems_of(found) == [("range_too_large", ("partitions",))]


async def test_a_valid_request_becomes_the_row_to_insert(backend: Backend) -> None:
    given = request(tags=(("team", "ops"),), max_concurrent_runs=3, idempotency_key="k1")
    plan = await validate_launch(backend, given, creator="ann")
    assert isinstance(plan, LaunchPlan)
    new = plan.new
    assert (new.job_name, new.total, new.first_index > 0) == ("daily_sales", 31, True)
    assert (new.tags, new.max_concurrent_runs, new.creator) == ([("team", "ops")], 3, "ann")
    assert new.request_fingerprint == fingerprint_of(given, "daily_sales")


async def test_only_a_request_with_an_idempotency_key_has_its_fingerprint_made(
    backend: Backend,
) -> None:
    """It is compared only when the key is used again: a launch without one (a 9,000-key list
    costs a tenth of its launch in the fingerprint's JSON) stores none."""
    plan = await validate_launch(backend, request(), creator="ann")
    assert isinstance(plan, LaunchPlan)
    assert plan.new.request_fingerprint == ""


async def test_one_builder_makes_the_rows_of_jobs_assets_and_retries(backend: Backend) -> None:
    """``new_backfill`` is the one builder: a job's row names its job; an asset launch's has
    no job (``kind`` ASSETS) and its fingerprint keeps the stored spelling; a retry passes
    its own fingerprint."""
    assets = request(
        job=None, assets=AssetRequest(("daily_visits",), downstream=True), idempotency_key="k"
    )
    plan = await validate_launch(backend, assets, creator="ann")
    assert isinstance(plan, LaunchPlan) and plan.assets is not None
    new = plan.new
    assert (new.kind, new.job_name, new.total) == (domain.BackfillKind.ASSETS, "", 33)
    assert new.asset_target == plan.assets.target.to_json()
    assert (
        new.request_fingerprint
        == fingerprint_of(assets, ASSETS_JOB)
        != fingerprint_of(assets, "daily_visits")
    )
    job = definitions.get_job("daily_sales")
    assert job is not None
    retry = new_backfill(
        request(selection=Selection(domain.SelectionKind.KEYS, keys=("2026-01-02",))),
        job=job,
        partitions_fingerprint="p",
        first_index=0,
        total=1,
        creator=None,
        parent_id=7,
        fingerprint="mine",
    )
    assert (retry.kind, retry.job_name, retry.keys, retry.parent_id) == (
        domain.BackfillKind.JOB,
        "daily_sales",
        ["2026-01-02"],
        7,
    )
    assert (retry.request_fingerprint, retry.asset_target) == ("mine", None)


def test_the_fingerprint_tells_requests_apart() -> None:
    assert fingerprint_of(request(), "j") == fingerprint_of(request(), "j")
    assert fingerprint_of(request(), "j") != fingerprint_of(request(title="t"), "j")
    assert fingerprint_of(request(), "j") != fingerprint_of(
        request(order=domain.Order.NEWEST_FIRST), "j"
    )


def test_a_public_input_becomes_the_private_request() -> None:
    given = LaunchBackfillInput(
        target=BackfillTargetInput(job="daily_sales"),
        partitions=PartitionSelectionInput(
            range=PartitionRangeInput(start="2026-01-01", end="2026-01-31")
        ),
        reprocess=Reprocess.ALL,
        order=BackfillOrder.NEWEST_FIRST,
        tags=[TagInput(key="k", value="v")],
        idempotency_key="key",
    )
    assert request_from_input(given) == LaunchRequest(
        job="daily_sales",
        selection=JANUARY,
        reprocess=domain.Reprocess.ALL,
        order=domain.Order.NEWEST_FIRST,
        tags=(("k", "v"),),
        idempotency_key="key",
    )


def test_all_false_is_refused_while_translating() -> None:
    given = LaunchBackfillInput(
        target=BackfillTargetInput(job="daily_sales"),
        partitions=PartitionSelectionInput(all=False),
    )
    [error] = request_from_input(given)  # type: ignore[misc]
    assert (error.code, error.field) == (UserErrorCode.INVALID_ARGUMENT, ["partitions", "all"])


def test_unset_fields_are_absent() -> None:
    given = LaunchBackfillInput(
        target=BackfillTargetInput(job=strawberry.UNSET),
        partitions=PartitionSelectionInput(all=True),
        title=strawberry.UNSET,
    )
    found = request_from_input(given)
    assert isinstance(found, LaunchRequest)
    assert (found.job, found.title, found.selection.kind) == (None, None, domain.SelectionKind.ALL)


@pytest.mark.parametrize(
    ("private", "public"),
    [
        (("job",), ["target", "job"]),
        (("run_config", "currency"), ["runConfig", "currency"]),
        (("max_concurrent_runs",), ["maxConcurrentRuns"]),
        (("idempotency_key",), ["idempotencyKey"]),
        (("tags", "0", "key"), ["tags", "0", "key"]),
        (("partitions", "range", "start"), ["partitions", "range", "start"]),
        (None, None),
    ],
)
def test_field_paths_are_named_as_the_api_names_them(
    private: tuple[str, ...] | None, public: list[str] | None
) -> None:
    assert public_field(private) == public


def test_every_problem_code_has_a_public_code() -> None:
    for code in ProblemCode:
        assert user_error_of(LaunchProblem(code, "m", None)).code.name == code.name


def test_a_trigger_request_is_the_same_launch_request() -> None:
    asked = BackfillRequest(
        job="region_report",
        partitions=PartitionKeys(["emea"]),
        reprocess="FAILED_AND_MISSING",
        run_config={"currency": "EUR"},
        tags={"a": "b"},
    )
    assert launch_request_of(asked) == LaunchRequest(
        job="region_report",
        selection=Selection(domain.SelectionKind.KEYS, keys=("emea",)),
        reprocess=domain.Reprocess.FAILED_AND_MISSING,
        run_config={"currency": "EUR"},
        tags=(("a", "b"),),
    )
    ranged = launch_request_of(
        BackfillRequest("daily_sales", PartitionRange("2026-01-01", "2026-01-31"))
    )
    assert ranged.selection == JANUARY


def test_stored_trigger_requests_read_back_as_written() -> None:
    entry = EvaluatedRequest(
        request(tags=(("a", "b"),), run_config={"n": [1, 2]}, title="t"),
        preview=LaunchPreview(
            "daily_sales",
            31,
            30,
            1,
            ("2026-01-02",),
            (("2026-01-01", domain.SkipReason.ALREADY_SUCCEEDED),),
        ),
        problems=(LaunchProblem(ProblemCode.IDEMPOTENCY_KEY_REUSED, "used", ("idempotency_key",)),),
        backfill_id=4,
    )
    stored = to_json(entry)
    assert stored["version"] == 1 and stored["request"]["reprocess"] == "missing"
    assert from_json(stored) == entry
    with pytest.raises(ValueError, match="version"):
        from_json({**stored, "version": 99})
