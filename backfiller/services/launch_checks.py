"""The checks of a launch request that need neither its job nor the database (pure): sizes,
blank and NUL-bearing text, tags, partition keys and the run config's size."""

from __future__ import annotations

import json
from collections.abc import Sequence

from backfiller import domain
from backfiller.domain.fair_share import MAX_PRIORITY, MIN_PRIORITY
from backfiller.planning import Selection
from backfiller.services.launch_types import LaunchProblem, LaunchRequest, ProblemCode, problem

MAX_TITLE = 500
MAX_DESCRIPTION = 10_000
MAX_TAGS = 50
MAX_TAG_KEY = 200
MAX_TAG_VALUE = 1_000
MAX_IDEMPOTENCY_KEY = 200
MAX_CONCURRENT_RUNS = 10_000
MAX_RUN_CONFIG_BYTES = 256 * 1024
MAX_KEY_LENGTH = 200


def _text_problems(value: str, limit: int, *path: str) -> list[LaunchProblem]:
    if len(value) > limit:
        return [problem(ProblemCode.INVALID_ARGUMENT, f"must be at most {limit} characters", *path)]
    if "\x00" in value:
        return [problem(ProblemCode.INVALID_ARGUMENT, "must not contain NUL characters", *path)]
    return []


def _tag_problems(tags: Sequence[tuple[str, str]]) -> list[LaunchProblem]:
    problems: list[LaunchProblem] = []
    if len(tags) > MAX_TAGS:
        problems.append(problem(ProblemCode.INVALID_ARGUMENT, f"at most {MAX_TAGS} tags", "tags"))
    seen: set[str] = set()
    for i, (key, value) in enumerate(tags):
        where = ("tags", str(i))
        if not key.strip():
            problems.append(
                problem(ProblemCode.INVALID_ARGUMENT, "tag key must not be blank", *where, "key")
            )
        problems += _text_problems(key, MAX_TAG_KEY, *where, "key")
        problems += _text_problems(value, MAX_TAG_VALUE, *where, "value")
        if key in seen:
            problems.append(
                problem(ProblemCode.INVALID_ARGUMENT, f"tag {key!r} is given twice", *where, "key")
            )
        seen.add(key)
    return problems


def _malformed_key(key: str) -> bool:
    return len(key) > MAX_KEY_LENGTH or "\x00" in key


def _selection_problems(selection: Selection) -> list[LaunchProblem]:
    malformed = "not a well-formed partition key"
    keys = selection.keys
    # Checked as a whole first (a list of thousands); the culprit is looked for only if any.
    if keys and (max(map(len, keys)) > MAX_KEY_LENGTH or "\x00" in "".join(keys)):
        for i, key in enumerate(keys):
            if _malformed_key(key):
                code = ProblemCode.INVALID_PARTITION_RANGE
                return [problem(code, malformed, "partitions", "keys", str(i))]
    problems: list[LaunchProblem] = []
    if selection.kind is domain.SelectionKind.RANGE:
        for name, bound in (("start", selection.range_start), ("end", selection.range_end)):
            if bound is not None and _malformed_key(bound):
                code = ProblemCode.INVALID_PARTITION_RANGE
                problems.append(problem(code, malformed, "partitions", "range", name))
    return problems


def limit_problems(max_concurrent_runs: int | None, priority: int | None) -> list[LaunchProblem]:
    """A backfill's ``max_concurrent_runs`` and ``priority`` out of bounds (at launch and in
    ``updateBackfill``)."""
    problems: list[LaunchProblem] = []
    if max_concurrent_runs is not None and not 1 <= max_concurrent_runs <= MAX_CONCURRENT_RUNS:
        message = f"must be between 1 and {MAX_CONCURRENT_RUNS}"
        problems.append(problem(ProblemCode.INVALID_ARGUMENT, message, "max_concurrent_runs"))
    if priority is not None and not MIN_PRIORITY <= priority <= MAX_PRIORITY:
        message = f"must be between {MIN_PRIORITY} and {MAX_PRIORITY}"
        problems.append(problem(ProblemCode.INVALID_ARGUMENT, message, "priority"))
    return problems


def update_problems(
    max_concurrent_runs: int | None,
    priority: int | None,
    title: str | None,
    description: str | None,
) -> list[LaunchProblem]:
    """What ``updateBackfill`` may not set: the launch's own rules for these fields."""
    problems = limit_problems(max_concurrent_runs, priority)
    if title is not None:
        problems += _text_problems(title, MAX_TITLE, "title")
    if description is not None:
        problems += _text_problems(description, MAX_DESCRIPTION, "description")
    return problems


def scalar_problems(request: LaunchRequest) -> list[LaunchProblem]:
    """The checks that need neither the job nor the database (pure)."""
    problems: list[LaunchProblem] = []
    if request.title is not None:
        problems += _text_problems(request.title, MAX_TITLE, "title")
    if request.description is not None:
        problems += _text_problems(request.description, MAX_DESCRIPTION, "description")
    if request.idempotency_key is not None:
        key = request.idempotency_key
        if not key.strip():
            problems.append(
                problem(ProblemCode.INVALID_ARGUMENT, "must not be blank", "idempotency_key")
            )
        problems += _text_problems(key, MAX_IDEMPOTENCY_KEY, "idempotency_key")
    problems += limit_problems(request.max_concurrent_runs, request.priority)
    problems += _tag_problems(request.tags)
    problems += _selection_problems(request.selection)
    if request.run_config is not None:
        try:
            size = len(json.dumps(request.run_config))
        except (TypeError, ValueError):
            size = MAX_RUN_CONFIG_BYTES + 1
        if size > MAX_RUN_CONFIG_BYTES:
            message = f"must be at most {MAX_RUN_CONFIG_BYTES} bytes as JSON"
            problems.append(problem(ProblemCode.INVALID_RUN_CONFIG, message, "run_config"))
    return problems


__all__ = ["MAX_KEY_LENGTH", "limit_problems", "scalar_problems", "update_problems"]
