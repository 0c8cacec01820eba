"""Resolvers of jobs, runs and dynamic partitions."""

from __future__ import annotations

import strawberry

from backfiller.definitions.jobs import JobDefinition
from backfiller.definitions.partitions import PartitionsKind as StoredKind
from backfiller.ids import encode_cursor, parse_run_id
from backfiller.resolvers.commands import MAX_KEY_LENGTH, user_error
from backfiller.resolvers.context import Info, check_page_size
from backfiller.resolvers.pages import cursor_value, page_info
from backfiller.resolvers.translate import run_from_record, run_state
from backfiller.schema.backfills import Run, RunConnection, RunEdge
from backfiller.schema.common import JSON, Tag, UserError, UserErrorCode
from backfiller.schema.enums import PartitionsKind, RunStatus
from backfiller.schema.inputs import DynamicPartitionsInput
from backfiller.schema.jobs import BackfillPolicy, Job, PartitionsDefinition, RetryPolicy
from backfiller.schema.payloads import DynamicPartitionsPayload
from backfiller.storage.repositories import DynamicPartitionRepository, RunReads

MAX_DYNAMIC_KEYS_PER_CALL = 10_000


def _kind(kind: StoredKind) -> PartitionsKind:
    match kind:
        case StoredKind.TIME:
            return PartitionsKind.TIME
        case StoredKind.STATIC:
            return PartitionsKind.STATIC
        case StoredKind.DYNAMIC:
            return PartitionsKind.DYNAMIC


def job_from_definition(job: JobDefinition) -> Job:
    described = job.partitions.describe()
    return Job(
        name=job.name,
        description=job.description,
        partitions=PartitionsDefinition(
            kind=_kind(described.kind),
            cadence=described.cadence,
            start=described.start,
            end=described.end,
            timezone=described.timezone,
            cron=described.cron,
            key_format=described.fmt,
            dynamic_name=described.dynamic_name,
            _job=job.name,
        ),
        retry_policy=RetryPolicy(
            max_retries=job.retry.max_retries, delay_seconds=job.retry.delay_seconds
        ),
        max_concurrent_runs=job.max_concurrent_runs,
        timeout_seconds=job.timeout_seconds,
        config_schema=JSON(job.config.json_schema) if job.config.json_schema else None,
        tags=[Tag(key=k, value=v) for k, v in job.tags.items()],
        backfill_policy=(
            BackfillPolicy(
                single_run=job.backfill_policy.max_partitions_per_run is None,
                max_partitions_per_run=job.backfill_policy.partitions_per_run,
            )
            if job.backfill_policy is not None
            else None
        ),
    )


def list_jobs(info: Info) -> list[Job]:
    return [job_from_definition(j) for j in info.context.definitions.job_list]


def get_job(info: Info, name: str) -> Job | None:
    job = info.context.definitions.get_job(name)
    return job_from_definition(job) if job else None


async def get_run(info: Info, id: strawberry.ID) -> Run | None:
    pk = parse_run_id(id)
    if pk is None:
        return None
    async with info.context.database.read() as session:
        record = await RunReads(session).get(pk)
    return run_from_record(record) if record else None


async def list_runs(
    info: Info,
    first: int = 50,
    after: str | None = None,
    job: str | None = None,
    partition_key: str | None = None,
    statuses: list[RunStatus] | None = None,
) -> RunConnection:
    limit = check_page_size(first, info.context.services.settings)
    before = cursor_value("run", after)
    async with info.context.database.read() as session:
        records = await RunReads(session).page(
            limit + 1,
            before,
            statuses=[run_state(s) for s in statuses] if statuses else None,
            job_name=job,
            partition_key=partition_key,
        )
    edges = [
        RunEdge(cursor=encode_cursor("run", r.id), node=run_from_record(r)) for r in records[:limit]
    ]
    return RunConnection(
        edges=edges,
        page_info=page_info(edges, len(records) > limit, after),
    )


def _dynamic_errors(info: Info, input: DynamicPartitionsInput) -> list[UserError]:
    names = {
        j.partitions.describe().dynamic_name
        for j in info.context.definitions.job_list
        if j.partitions.kind is StoredKind.DYNAMIC
    }
    if input.name not in names:
        return [
            user_error(
                UserErrorCode.NOT_FOUND,
                f"no dynamic partitions definition is named {input.name!r}",
                ["name"],
            )
        ]
    if not input.keys:
        return [user_error(UserErrorCode.EMPTY_SELECTION, "no keys given", ["keys"])]
    if len(input.keys) > MAX_DYNAMIC_KEYS_PER_CALL:
        return [
            user_error(
                UserErrorCode.INVALID_ARGUMENT,
                f"at most {MAX_DYNAMIC_KEYS_PER_CALL} keys per call",
                ["keys"],
            )
        ]
    for i, key in enumerate(input.keys):
        if not key or len(key) > MAX_KEY_LENGTH or "\x00" in key or key != key.strip():
            return [
                user_error(
                    UserErrorCode.INVALID_ARGUMENT,
                    f"a key must be 1 to {MAX_KEY_LENGTH} characters, without "
                    "NUL or surrounding spaces",
                    ["keys", str(i)],
                )
            ]
    return []


async def add_dynamic_partitions(
    info: Info, input: DynamicPartitionsInput
) -> DynamicPartitionsPayload:
    errors = _dynamic_errors(info, input)
    if errors:
        return DynamicPartitionsPayload(name=input.name, keys_changed=0, user_errors=errors)
    async with info.context.database.write() as session:
        added = await DynamicPartitionRepository(session).add(
            input.name, input.keys, info.context.now()
        )
    return DynamicPartitionsPayload(name=input.name, keys_changed=added, user_errors=[])


async def delete_dynamic_partitions(
    info: Info, input: DynamicPartitionsInput
) -> DynamicPartitionsPayload:
    errors = _dynamic_errors(info, input)
    if errors:
        return DynamicPartitionsPayload(name=input.name, keys_changed=0, user_errors=errors)
    async with info.context.database.write() as session:
        deleted = await DynamicPartitionRepository(session).delete(input.name, input.keys)
    return DynamicPartitionsPayload(name=input.name, keys_changed=deleted, user_errors=[])
