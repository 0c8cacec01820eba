"""The public inputs built in one step (schema/input_values.py) equal strawberry's own
conversion of the same values, as graphql-core coerces them from a client's JSON."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from graphql import GraphQLInputObjectType, coerce_input_value
from strawberry.types.arguments import convert_argument
from strawberry.types.base import StrawberryObjectDefinition

from backfiller.api import schema
from backfiller.schema.admin import CreateApiTokenInput
from backfiller.schema.input_values import _Builder
from backfiller.schema.inputs import BackfillFilter, LaunchBackfillInput, RetryBackfillInput

FULL_LAUNCH = {
    "target": {"assets": {"names": ["a", "b"], "downstream": True}},
    "partitions": {"keys": ["2024-01-01", "2024-01-02"]},
    "reprocess": "FAILED_AND_MISSING",
    "order": "NEWEST_FIRST",
    "maxConcurrentRuns": 3,
    "runConfig": {"nested": {"list": [1, 2.5, None, "x"]}, "flag": True},
    "tags": [{"key": "team", "value": "data"}, {"key": "why", "value": "fix"}],
    "title": "t",
    "description": None,
    "idempotencyKey": "k-1",
    "notify": [
        {
            "url": "https://example.com/hook",
            "events": ["LAUNCHED", "COMPLETED_FAILED"],
            "format": "SLACK",
        },
        {"url": "https://example.com/other"},
    ],
}
CASES = [
    ("LaunchBackfillInput", LaunchBackfillInput, FULL_LAUNCH),
    (
        "LaunchBackfillInput",
        LaunchBackfillInput,
        {"target": {"job": "daily"}, "partitions": {"range": {"start": "a", "end": "b"}}},
    ),
    (
        "LaunchBackfillInput",
        LaunchBackfillInput,
        {"target": {"job": "daily"}, "partitions": {"all": True}, "tags": []},
    ),
    ("RetryBackfillInput", RetryBackfillInput, {"id": "bf_1", "include": ["FAILED"]}),
    (
        "BackfillFilter",
        BackfillFilter,
        {"statuses": ["RUNNING"], "tag": {"key": "a", "value": "b"}},
    ),
    ("BackfillFilter", BackfillFilter, {}),
    (
        "CreateApiTokenInput",
        CreateApiTokenInput,
        {"name": "ci", "role": "OPERATOR", "expiresAt": "2030-01-01T00:00:00Z", "jobs": ["daily"]},
    ),
]


def coerced(name: str, raw: dict[str, Any]) -> Any:
    """``raw`` (a client's JSON) as graphql-core gives it to a resolver."""
    input_type = schema._schema.get_type(name)
    assert isinstance(input_type, GraphQLInputObjectType)
    return coerce_input_value(raw, input_type)


@contextmanager
def strawberrys_own_conversion() -> Iterator[None]:
    """Every input class without its one-step builder, for the span of the block."""
    saved: list[tuple[StrawberryObjectDefinition, Any]] = []
    for concrete in schema.schema_converter.type_map.values():
        definition = concrete.definition
        if isinstance(definition, StrawberryObjectDefinition) and definition.is_input:
            saved.append((definition, definition.from_input))
            definition.from_input = None
    try:
        yield
    finally:
        for definition, from_input in saved:
            definition.from_input = from_input


@pytest.mark.parametrize(("name", "cls", "raw"), CASES)
def test_an_input_built_in_one_step_equals_strawberrys_conversion(
    name: str, cls: type, raw: dict[str, Any]
) -> None:
    value = coerced(name, raw)
    registry, config = schema.schema_converter.scalar_registry, schema.config
    ours = convert_argument(value, cls, registry, config)
    with strawberrys_own_conversion():
        theirs = convert_argument(value, cls, registry, config)
    assert type(ours) is cls
    assert ours == theirs
    assert repr(ours) == repr(theirs)  # nested classes, enums, UNSET and None alike


# Every input type of the public schema, listed by hand: a new one must be added here (and
# gets its one-step builder from ``build_inputs_directly`` like these).
INPUT_TYPES = {
    "AssetSelectionInput",
    "BackfillFilter",
    "BackfillTargetInput",
    "CancelBackfillInput",
    "CreateApiTokenInput",
    "DynamicPartitionsInput",
    "EvaluateTriggerInput",
    "LaunchBackfillInput",
    "MarkPartitionsInput",
    "NotifyInput",
    "PartitionRangeInput",
    "PartitionSelectionInput",
    "PauseBackfillInput",
    "ResumeBackfillInput",
    "RetryBackfillInput",
    "RevokeApiTokenInput",
    "SetTeamLimitInput",
    "SetTriggerEnabledInput",
    "TagInput",
    "UpdateApiTokenInput",
    "UpdateBackfillInput",
}


def test_every_input_class_builds_in_one_step() -> None:
    built: dict[str, bool] = {}
    for concrete in schema.schema_converter.type_map.values():
        definition = concrete.definition
        if isinstance(definition, StrawberryObjectDefinition) and definition.is_input:
            built[definition.name] = isinstance(definition.from_input, _Builder)
    assert built == dict.fromkeys(INPUT_TYPES, True)


def test_a_list_given_as_the_default_is_copied_each_time() -> None:
    # graphql-core may hand every request the same default list: a value built from it must
    # not share it.
    value = coerced("LaunchBackfillInput", FULL_LAUNCH)
    registry, config = schema.schema_converter.scalar_registry, schema.config
    first = convert_argument(value, LaunchBackfillInput, registry, config)
    assert isinstance(first, LaunchBackfillInput)
    assert first.partitions.keys is not value["partitions"]["keys"]
    assert first.partitions.keys == value["partitions"]["keys"]
