"""What a trigger's function can read: partition statuses, its previous evaluations, and a
client of the service (``context.client``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, assert_never

from backfiller import domain
from backfiller.config import Settings
from backfiller.definitions.triggers import (
    PartitionRunStatus,
    PartitionStatuses,
    PreviousEvaluation,
)
from backfiller.ids import backfill_id
from backfiller.services.backend import Backend
from backfiller.services.selections import key_space_of
from backfiller.storage.repositories import PartitionStateRepository
from backfiller.storage.trigger_records import TriggerEvaluationRecord, TriggerOutcome

if TYPE_CHECKING:
    from backfiller.client import Client


def _run_status(state: domain.RunState) -> PartitionRunStatus:
    match state:
        case domain.RunState.QUEUED:
            return "QUEUED"
        case domain.RunState.RUNNING:
            return "RUNNING"
        case domain.RunState.SUCCESS:
            return "SUCCEEDED"
        case domain.RunState.FAILED:
            return "FAILED"
        case domain.RunState.CANCELED:
            return "CANCELED"
        case domain.RunState.SKIPPED:
            return "SKIPPED"
        case _:
            assert_never(state)


async def read_partition_statuses(backend: Backend, job_name: str) -> PartitionStatuses:
    """Every partition of a job and the outcome of its latest run, from storage."""
    job = backend.definitions.get_job(job_name)
    if job is None:
        raise LookupError(f"no job named {job_name!r}")
    space = await key_space_of(job.partitions, backend.clock(), backend.database)
    async with backend.database.read() as session:
        latest = await PartitionStateRepository(session).all_of_job(job_name)
    return PartitionStatuses(
        job=job_name,
        keys=tuple(space.keys(0, len(space))),
        latest={k: _run_status(s) for k, s in latest.items()},
    )


def service_url(settings: Settings) -> str:
    """Where this server answers, for the clients handed to the triggers it evaluates."""
    if settings.public_url:
        return settings.public_url
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
    return f"http://{host}:{settings.port}"


def client_factory_for(url: str | None, token: str | None) -> Callable[[], Client] | None:
    """What builds ``context.client`` for a trigger: a client of ``url`` (None: no client)."""
    if not url:
        return None
    base = url

    def build() -> Client:
        # Imported here: the client brings httpx (and rich, through httpx's CLI), several MB
        # that an API process without trigger clients never needs.
        from backfiller.client import Client

        return Client(base, token=token)

    return build


def _outcome_name(outcome: TriggerOutcome) -> Literal["LAUNCHED", "SKIPPED", "FAILED"]:
    match outcome:
        case TriggerOutcome.LAUNCHED:
            return "LAUNCHED"
        case TriggerOutcome.SKIPPED:
            return "SKIPPED"
        case TriggerOutcome.FAILED:
            return "FAILED"
        case _:
            assert_never(outcome)


def previous_evaluation(record: TriggerEvaluationRecord) -> PreviousEvaluation:
    """A stored evaluation as the trigger's function sees it."""
    return PreviousEvaluation(
        outcome=_outcome_name(record.outcome),
        evaluated_at=record.evaluated_at,
        dry_run=record.dry_run,
        skip_reason=record.skip_reason,
        error_message=record.error_message,
        backfill_ids=tuple(backfill_id(i) for i in record.backfill_ids),
    )


__all__ = [
    "client_factory_for",
    "previous_evaluation",
    "read_partition_statuses",
    "service_url",
]
