"""The Python client against a real server process: every method, typed results, user errors."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import assert_type

import pytest

import backfiller
from backfiller import (
    AllPartitions,
    BackfillerUserError,
    BackfillRequest,
    Client,
    PartitionKeys,
    PartitionRange,
)
from backfiller.client import (
    Backfill,
    BackfillStatus,
    Job,
    PartitionStatus,
    PartitionStatusRange,
    Preview,
    Run,
    Trigger,
    TriggerEvaluation,
    TriggerOutcome,
    UserErrorDetail,
)
from tests.integration.live_triggers import server

__all__ = ["server"]  # the shared fixture


@pytest.fixture
def client(server: str) -> Iterator[Client]:
    with Client(server) as c:
        yield c


def unique() -> str:
    return uuid.uuid4().hex[:12]


def january(**extra: object) -> BackfillRequest:
    return BackfillRequest(
        job="daily",
        partitions=PartitionRange("2024-01-01", "2024-01-31"),
        **extra,  # type: ignore[arg-type]
    )


def test_the_package_exports_the_client_api() -> None:
    for name in (
        "Client",
        "AsyncClient",
        "BackfillRequest",
        "PartitionRange",
        "PartitionKeys",
        "AllPartitions",
        "SkipReason",
        "trigger",
        "BackfillerUserError",
        "BackfillerConnectionError",
        "BackfillerAPIError",
        "BackfillerAuthError",
    ):
        assert name in backfiller.__all__


def test_launch_backfill_returns_a_typed_backfill(client: Client) -> None:
    tag = unique()
    backfill = client.launch_backfill(
        january(
            title="January rerun",
            description="after the fix",
            tags={"ticket": "DATA-42", "test": tag},
            max_concurrent_runs=3,
            reprocess="FAILED_AND_MISSING",
            order="NEWEST_FIRST",
        )
    )
    assert_type(backfill, Backfill)
    assert backfill.id.startswith("bf_")
    assert backfill.job == "daily"
    assert backfill.partitions == PartitionRange("2024-01-01", "2024-01-31")
    assert backfill.status is BackfillStatus.REQUESTED
    assert not backfill.is_finished
    assert backfill.counts.total == backfill.counts.pending == 31
    assert backfill.counts.percent_done == 0.0
    assert dict(backfill.tags) == {"ticket": "DATA-42", "test": tag}
    assert (backfill.title, backfill.description) == ("January rerun", "after the fix")
    assert (backfill.reprocess, backfill.order) == ("FAILED_AND_MISSING", "NEWEST_FIRST")
    assert backfill.max_concurrent_runs == 3
    assert backfill.run_config is None and backfill.parent_id is None and backfill.error is None
    assert isinstance(backfill.created_at, datetime) and backfill.created_at.tzinfo is not None
    assert backfill.started_at is None and backfill.ended_at is None


def test_every_selection_round_trips(client: Client) -> None:
    keys = client.launch_backfill(
        BackfillRequest(job="letters", partitions=PartitionKeys(["c", "a"]), tags={"t": unique()})
    )
    assert keys.partitions == PartitionKeys(["c", "a"])
    assert keys.counts.total == 2
    everything = client.launch_backfill(
        BackfillRequest(job="letters", partitions=AllPartitions(), tags={"t": unique()})
    )
    assert everything.partitions == AllPartitions()
    assert everything.counts.total == 3


def test_an_idempotency_key_launches_once_and_refuses_another_request(client: Client) -> None:
    key = unique()
    first = client.launch_backfill(january(idempotency_key=key))
    again = client.launch_backfill(january(idempotency_key=key))
    assert again.id == first.id
    with pytest.raises(BackfillerUserError) as refused:
        client.launch_backfill(january(idempotency_key=key, title="something else"))
    [error] = refused.value.errors
    assert error.code == "IDEMPOTENCY_KEY_REUSED"
    assert error.field == ("idempotencyKey",)


def test_a_refused_launch_raises_every_error_with_code_field_and_message(client: Client) -> None:
    with pytest.raises(BackfillerUserError) as unknown:
        client.launch_backfill(BackfillRequest(job="nope", partitions=AllPartitions()))
    assert unknown.value.errors == (
        UserErrorDetail("JOB_NOT_FOUND", ("target", "job"), "no job named 'nope'"),
    )
    assert unknown.value.operation == "PyLaunchBackfill"
    assert str(unknown.value) == "JOB_NOT_FOUND at target.job: no job named 'nope'"
    with pytest.raises(BackfillerUserError) as several:
        client.launch_backfill(january(title="x" * 501, max_concurrent_runs=0))
    assert several.value.codes == ("INVALID_ARGUMENT", "INVALID_ARGUMENT")
    assert [e.field for e in several.value.errors] == [("title",), ("maxConcurrentRuns",)]
    with pytest.raises(BackfillerUserError) as config:
        client.launch_backfill(january(run_config={"x": 1}))
    assert config.value.codes == ("INVALID_RUN_CONFIG",)
    with pytest.raises(BackfillerUserError) as outside:
        client.launch_backfill(
            BackfillRequest(job="daily", partitions=PartitionRange("2023-12-01", "2024-01-02"))
        )
    assert outside.value.errors[0].field is not None
    assert outside.value.errors[0].field[0] == "partitions"


def test_preview_backfill_writes_nothing(client: Client) -> None:
    tag = unique()
    preview = client.preview_backfill(january(tags={"t": tag}))
    assert_type(preview, Preview)
    assert (preview.job, preview.total, preview.runs, preview.skipped) == ("daily", 31, 31, 0)
    assert preview.first_partitions[:2] == ("2024-01-01", "2024-01-02")
    assert preview.skipped_partitions == ()
    assert list(client.list_backfills(tag=("t", tag))) == []
    with pytest.raises(BackfillerUserError):
        client.preview_backfill(BackfillRequest(job="nope", partitions=AllPartitions()))


def test_get_backfill_reads_one_or_none(client: Client) -> None:
    launched = client.launch_backfill(january())
    found = client.get_backfill(launched.id)
    assert_type(found, Backfill | None)
    assert found == launched
    assert client.get_backfill("bf_999999999") is None
    assert client.get_backfill("not-an-id") is None


def test_list_backfills_iterates_every_page_newest_first_with_filters(client: Client) -> None:
    tag = unique()
    launched = [client.launch_backfill(january(tags={"t": tag})) for _ in range(5)]
    other = client.launch_backfill(
        BackfillRequest(job="letters", partitions=AllPartitions(), tags={"t": tag})
    )
    listed = list(client.list_backfills(tag=("t", tag), page_size=2))
    assert [b.id for b in listed] == [other.id] + [b.id for b in reversed(launched)]
    assert [b.id for b in client.list_backfills(tag=("t", tag), job="letters")] == [other.id]
    client.cancel(other.id)
    canceled = client.list_backfills(statuses=[BackfillStatus.CANCELED], tag=("t", tag))
    assert [b.id for b in canceled] == [other.id]
    requested = client.list_backfills(statuses=["REQUESTED"], tag=("t", tag), page_size=100)
    assert len(list(requested)) == 5
    with pytest.raises(ValueError, match="page_size"):
        client.list_backfills(page_size=101)


def test_pause_resume_cancel_and_their_refusals(client: Client) -> None:
    backfill = client.launch_backfill(january())
    assert client.pause(backfill.id).status is BackfillStatus.PAUSED
    assert client.resume(backfill.id).status is BackfillStatus.REQUESTED
    canceled = client.cancel(backfill.id)
    assert canceled.status is BackfillStatus.CANCELED
    assert canceled.is_finished
    assert canceled.counts.canceled == 31
    with pytest.raises(BackfillerUserError) as refused:
        client.pause(backfill.id)
    assert refused.value.codes == ("INVALID_STATE",)
    with pytest.raises(BackfillerUserError) as missing:
        client.resume("bf_999999999")
    assert missing.value.codes == ("BACKFILL_NOT_FOUND",)


def test_events_oldest_or_newest_first_across_pages(client: Client) -> None:
    backfill = client.launch_backfill(january())
    client.pause(backfill.id)
    client.resume(backfill.id)
    client.cancel(backfill.id)
    oldest = [e.kind for e in client.events(backfill.id, page_size=1)]
    assert oldest == ["LAUNCHED", "PAUSED", "RESUMED", "CANCELED"]
    newest = [e.kind for e in client.events(backfill.id, newest_first=True, page_size=3)]
    assert newest == list(reversed(oldest))
    assert all(e.at.tzinfo is not None for e in client.events(backfill.id))


def test_retry_launches_a_child_of_a_finished_backfill(client: Client) -> None:
    parent = client.launch_backfill(january())
    with pytest.raises(BackfillerUserError) as running:
        client.retry(parent.id)
    assert running.value.codes == ("INVALID_STATE",)
    client.cancel(parent.id)
    child = client.retry(parent.id, include=["NOT_RUN", "CANCELED"], idempotency_key=unique())
    assert child.parent_id == parent.id
    assert child.partitions == PartitionKeys([f"2024-01-{d:02d}" for d in range(1, 32)])
    with pytest.raises(BackfillerUserError) as empty:
        client.retry(parent.id)
    assert empty.value.codes == ("EMPTY_SELECTION",)


def test_runs_and_partition_status_ranges(client: Client) -> None:
    backfill = client.launch_backfill(january())
    runs = list(client.runs(backfill.id))
    assert_type(runs, list[Run])
    assert runs == []  # no daemon in this test: nothing ran
    ranges = client.partition_status_ranges(backfill.id)
    assert_type(ranges, list[PartitionStatusRange])
    assert ranges == [
        PartitionStatusRange(PartitionStatus.PENDING, "2024-01-01", "2024-01-31", 0, 31)
    ]
    for call in (client.partition_status_ranges, lambda i: list(client.runs(i))):
        with pytest.raises(BackfillerUserError) as missing:
            call("bf_999999999")
        assert missing.value.codes == ("BACKFILL_NOT_FOUND",)


def test_wait_returns_the_finished_backfill_and_reports_progress(client: Client) -> None:
    backfill = client.launch_backfill(january())
    client.cancel(backfill.id)
    seen: list[Backfill] = []
    final = client.wait(backfill.id, on_progress=seen.append, poll_interval=0.05)
    assert final.status is BackfillStatus.CANCELED
    assert seen == [final]
    waiting = client.launch_backfill(january())
    with pytest.raises(TimeoutError):
        client.wait(waiting.id, poll_interval=0.05, timeout=0.2)
    with pytest.raises(BackfillerUserError) as missing:
        client.wait("bf_999999999")
    assert missing.value.codes == ("BACKFILL_NOT_FOUND",)


def test_jobs_describe_the_definitions(client: Client) -> None:
    jobs = client.jobs()
    assert_type(jobs, list[Job])
    assert [j.name for j in jobs] == ["customer_sync", "daily", "letters"]
    daily = client.job("daily")
    assert daily is not None
    assert daily.description == "A daily job of January 2024."
    assert daily.partitions.kind == "TIME"
    assert daily.partitions.cadence == "daily"
    assert daily.partitions.count == 31
    assert daily.max_retries == 0
    assert client.job("nope") is None


def test_dynamic_partition_keys(client: Client) -> None:
    first, second = unique(), unique()
    assert client.add_dynamic_partitions("customers", [first, second]) == 2
    assert client.add_dynamic_partitions("customers", [first]) == 0
    backfill = client.launch_backfill(
        BackfillRequest(job="customer_sync", partitions=PartitionKeys([second]))
    )
    assert backfill.counts.total == 1
    assert client.delete_dynamic_partitions("customers", [first, second]) == 2
    with pytest.raises(BackfillerUserError) as unknown:
        client.add_dynamic_partitions("nope", ["x"])
    assert unknown.value.codes == ("NOT_FOUND",)
    with pytest.raises(TypeError):
        client.add_dynamic_partitions("customers", "one-string")


def test_triggers_through_the_client(client: Client) -> None:
    dry = client.evaluate_trigger("missing_letters", dry_run=True)
    assert_type(dry, TriggerEvaluation)
    assert dry.outcome is TriggerOutcome.LAUNCHED and dry.dry_run
    assert dry.backfills == ()
    [request] = dry.requests
    assert request.request.job == "letters"
    assert request.preview is not None and request.preview.job == "letters"
    assert request.backfill_id is None and request.errors == ()

    launched = client.evaluate_trigger("launches")
    assert launched.outcome is TriggerOutcome.LAUNCHED
    [backfill] = launched.backfills
    assert backfill.creator == "trigger:launches"
    assert launched.requests[0].backfill_id == backfill.id
    assert launched.requests[0].request == BackfillRequest(
        job="daily",
        partitions=PartitionRange("2024-01-01", "2024-01-07"),
        title=backfill.title,
        tags={"source": "trigger"},
    )

    failed = client.evaluate_trigger("raises")
    assert failed.outcome is TriggerOutcome.FAILED
    assert failed.error_message == "ValueError: the upstream table is unreadable"
    skipped = client.evaluate_trigger("skips")
    assert skipped.skip_reason == "upstream export has not landed"

    triggers = client.triggers()
    assert_type(triggers, list[Trigger])
    assert "every_minute" in [t.name for t in triggers]
    found = client.trigger("launches")
    assert found is not None and found.last_evaluation is not None
    assert found.last_evaluation.id == launched.id
    assert client.trigger("nope") is None
    disabled = client.set_trigger_enabled("every_minute", False)
    assert disabled.enabled is False and disabled.interval_seconds == 60.0
    assert client.set_trigger_enabled("every_minute", True).enabled
    history = list(client.trigger_evaluations("launches", page_size=1))
    assert history[0].id == launched.id

    for call in (
        lambda: client.evaluate_trigger("nope"),
        lambda: client.set_trigger_enabled("nope", True),
        lambda: list(client.trigger_evaluations("nope")),
    ):
        with pytest.raises(BackfillerUserError) as missing:
            call()
        assert missing.value.codes == ("TRIGGER_NOT_FOUND",)


def test_a_trigger_uses_the_client_the_service_hands_it(client: Client) -> None:
    evaluation = client.evaluate_trigger("through_client")
    assert evaluation.outcome is TriggerOutcome.LAUNCHED, evaluation.error_message
    [backfill] = evaluation.backfills
    assert (backfill.job, backfill.title) == ("letters", "via client")


def test_two_clients_evaluating_at_once_launch_one_backfill(server: str) -> None:
    results: list[TriggerEvaluation] = []
    lock = threading.Lock()

    def press() -> None:
        with Client(server) as own:
            found = own.evaluate_trigger("keyed")
        with lock:
            results.append(found)

    threads = [threading.Thread(target=press) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.outcome for r in results] == [TriggerOutcome.LAUNCHED] * 2
    assert results[0].backfills[0].id == results[1].backfills[0].id


def test_a_client_supplied_run_header_is_not_recorded(server: str) -> None:
    # Only a run's own credential says which run asks (see docs/security.md).
    with Client(server, headers={"X-Backfiller-Run-Id": "run_7"}) as as_run:
        backfill = as_run.launch_backfill(january())
    assert backfill.creator is None or "run_7" not in backfill.creator


def test_a_request_too_large_for_the_server_is_a_transport_error(client: Client) -> None:
    huge = {"blob": "x" * 2_000_000}
    with pytest.raises(backfiller.BackfillerAPIError) as refused:
        client.launch_backfill(january(run_config=huge))
    assert refused.value.status_code == 413
