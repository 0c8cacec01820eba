"""Jobs: the Python callables a backfill runs once per partition."""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from backfiller.definitions.partitions import PartitionsDefinition
from backfiller.definitions.policies import BackfillPolicy
from backfiller.domain import DEFAULT_LOST_WORKER_RETRIES
from backfiller.domain.fair_share import MAX_PRIORITY, MIN_PRIORITY

if TYPE_CHECKING:
    from backfiller.client import Client

JOB_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,199}$")
QUEUE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,199}$")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often a failed run of a partition is attempted again.

    Args:
        max_retries: attempts after the first one (0 means one attempt in all).
        delay_seconds: wait before each retry.
    """

    max_retries: int = 0
    delay_seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.delay_seconds < 0:
            raise ValueError("RetryPolicy values must not be negative")


@dataclass(frozen=True, slots=True)
class RunContext:
    """What a job function receives for one run of one partition (or of a range).

    A ranged run (a job with a ``backfill_policy``) covers ``partition_keys``, consecutive
    partitions in key order; ``partition_key`` is the first of them and
    ``partition_start``/``partition_end`` span the whole range.
    """

    job_name: str
    partition_key: str
    partition_start: datetime | None
    partition_end: datetime | None
    run_id: str
    attempt: int
    run_config: Mapping[str, Any]
    tags: Mapping[str, str]
    backfill_id: str
    log: logging.Logger
    client_factory: Callable[[], Client] | None = None
    partition_keys: tuple[str, ...] = ()
    """Every partition this run covers (just ``partition_key`` unless the run is ranged)."""

    def __post_init__(self) -> None:
        if not self.partition_keys:
            object.__setattr__(self, "partition_keys", (self.partition_key,))

    @property
    def client(self) -> Client:
        """A client of the public API, pointed at the service that launched this run."""
        if self.client_factory is None:
            raise RuntimeError("this run has no service URL to talk to")
        return self.client_factory()


class JobFunction(Protocol):
    def __call__(self, context: RunContext, /) -> object: ...


class ConfigSchema:
    """Validates a run config against a JSON schema or a dataclass type."""

    def __init__(self, spec: Mapping[str, Any] | type | None) -> None:
        self.spec = spec
        if spec is None:
            self.json_schema: dict[str, Any] | None = None
        elif isinstance(spec, Mapping):
            import jsonschema

            jsonschema.Draft202012Validator.check_schema(dict(spec))
            self.json_schema = dict(spec)
        elif dataclasses.is_dataclass(spec):
            self.json_schema = _schema_of_dataclass(spec)
        else:
            raise TypeError("config must be a JSON schema (a mapping) or a dataclass type")

    def errors(self, value: object) -> list[tuple[list[str], str]]:
        """Every problem with ``value``, as (path, message) pairs; empty when valid."""
        if self.json_schema is None:
            if value in (None, {}):
                return []
            return [([], "this job takes no run config")]
        import jsonschema

        validator = jsonschema.Draft202012Validator(self.json_schema)
        found = sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.path)))
        return [([str(p) for p in e.path], e.message) for e in found]


_JSON_TYPES: dict[Any, str] = {
    int: "integer",
    float: "number",
    str: "string",
    bool: "boolean",
    "int": "integer",
    "float": "number",
    "str": "string",
    "bool": "boolean",
}


def _schema_of_dataclass(cls: Any) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for f in dataclasses.fields(cls):
        kind = _JSON_TYPES.get(f.type)
        properties[f.name] = {"type": kind} if kind else {}
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


@dataclass(frozen=True)
class JobDefinition:
    """A partitioned job: declared with :func:`job`."""

    name: str
    fn: JobFunction
    partitions: PartitionsDefinition
    retry: RetryPolicy = RetryPolicy()
    max_concurrent_runs: int | None = None
    timeout_seconds: float | None = None
    lost_worker_retries: int = DEFAULT_LOST_WORKER_RETRIES
    """Attempts lost with their worker or daemon that are retried (apart from ``retry``)."""
    config: ConfigSchema = field(default_factory=lambda: ConfigSchema(None))
    tags: Mapping[str, str] = field(default_factory=dict)
    description: str | None = None
    queue: str | None = None
    """The Celery queue its runs go to (the Celery launcher only; None: the default queue)."""
    backfill_policy: BackfillPolicy | None = None
    """Ranged runs (``single_run()``, ``multi_run(N)``); None: one run per partition."""
    priority: int = 0
    """The priority of its backfills when a launch names none (higher is claimed first)."""

    def __call__(self, context: RunContext) -> object:
        return self.fn(context)


def job(  # long: one check per parameter, then the definition
    *,
    partitions: PartitionsDefinition,
    name: str | None = None,
    retry: RetryPolicy | None = None,
    max_concurrent_runs: int | None = None,
    timeout_seconds: float | None = None,
    lost_worker_retries: int = DEFAULT_LOST_WORKER_RETRIES,
    config: Mapping[str, Any] | type | None = None,
    tags: Mapping[str, str] | None = None,
    description: str | None = None,
    queue: str | None = None,
    backfill_policy: BackfillPolicy | None = None,
    priority: int = 0,
) -> Callable[[JobFunction], JobDefinition]:
    """Declare a partitioned job over a function that takes a :class:`RunContext`.

    ``queue`` names the Celery queue its runs go to with the Celery launcher, so that heavy
    jobs run on the workers that listen on it (``backfiller worker --queues gpu``).
    ``backfill_policy`` (``single_run()`` or ``multi_run(N)``) makes a backfill run chunks of
    consecutive partitions, one run each (see docs/ranged-runs.md). ``priority`` is its
    backfills' priority when a launch names none (see docs/execution.md, "Priority and fair
    share").

    Example:
        >>> @job(partitions=DailyPartitions(start="2024-01-01"))
        ... def daily_report(context: RunContext) -> None: ...
    """

    def decorate(fn: JobFunction) -> JobDefinition:
        job_name: str = name or str(getattr(fn, "__name__", ""))
        if not JOB_NAME.match(job_name):
            raise ValueError(f"invalid job name {job_name!r}")
        if max_concurrent_runs is not None and max_concurrent_runs < 1:
            raise ValueError("max_concurrent_runs must be at least 1")
        if timeout_seconds is not None and timeout_seconds <= 0:
            raise ValueError("timeout_seconds must be positive")
        if lost_worker_retries < 0:
            raise ValueError("lost_worker_retries must not be negative")
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise TypeError("priority must be an int")
        if not MIN_PRIORITY <= priority <= MAX_PRIORITY:
            raise ValueError(f"priority must be between {MIN_PRIORITY} and {MAX_PRIORITY}")
        if queue is not None and not QUEUE_NAME.match(queue):
            raise ValueError(f"invalid queue name {queue!r}")
        doc = description if description is not None else (fn.__doc__ or "").strip() or None
        return JobDefinition(
            name=job_name,
            fn=fn,
            partitions=partitions,
            retry=retry or RetryPolicy(),
            max_concurrent_runs=max_concurrent_runs,
            timeout_seconds=timeout_seconds,
            lost_worker_retries=lost_worker_retries,
            config=ConfigSchema(config),
            tags=dict(tags or {}),
            description=doc,
            queue=queue,
            backfill_policy=backfill_policy,
            priority=priority,
        )

    return decorate


def job_names(jobs: Sequence[JobDefinition]) -> list[str]:
    return [j.name for j in jobs]
