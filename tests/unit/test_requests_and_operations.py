"""BackfillRequest (the public Python request), trigger declarations, and the client's
operation document."""

from __future__ import annotations

import dataclasses
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from graphql import FragmentDefinitionNode, parse

from backfiller import (
    AllPartitions,
    BackfillRequest,
    PartitionKeys,
    PartitionRange,
    SkipReason,
    TriggerContext,
    trigger,
)
from backfiller.definitions.triggers import TriggerDefinition, TriggerResult
from backfiller_client._operations import operations, split_operations

REPO = Path(__file__).resolve().parents[2]


def test_a_request_maps_to_the_launch_input_field_by_field() -> None:
    request = BackfillRequest(
        job="daily_sales",
        partitions=PartitionRange("2024-01-01", "2024-01-31"),
        reprocess="ALL",
        order="NEWEST_FIRST",
        max_concurrent_runs=4,
        run_config={"nested": {"a": [1, 2]}},
        tags={"ticket": "DATA-42"},
        title="January",
        description="rerun",
        idempotency_key="k1",
    )
    assert request.as_graphql_input() == {
        "target": {"job": "daily_sales"},
        "partitions": {"range": {"start": "2024-01-01", "end": "2024-01-31"}},
        "reprocess": "ALL",
        "order": "NEWEST_FIRST",
        "maxConcurrentRuns": 4,
        "runConfig": {"nested": {"a": [1, 2]}},
        "tags": [{"key": "ticket", "value": "DATA-42"}],
        "title": "January",
        "description": "rerun",
        "idempotencyKey": "k1",
    }
    minimal = BackfillRequest(job="j", partitions=AllPartitions())
    assert minimal.as_graphql_input() == {
        "target": {"job": "j"},
        "partitions": {"all": True},
        "reprocess": "MISSING",
        "order": "OLDEST_FIRST",
        "tags": [],
    }
    keys = BackfillRequest(job="j", partitions=PartitionKeys(k for k in ("b", "a")))
    assert keys.as_graphql_input()["partitions"] == {"keys": ["b", "a"]}


def test_a_request_is_frozen_and_does_not_share_the_callers_mappings() -> None:
    config: dict[str, Any] = {"a": {"b": 1}}
    tags = {"t": "1"}
    request = BackfillRequest(job="j", partitions=AllPartitions(), run_config=config, tags=tags)
    config["a"]["b"] = 2
    tags["t"] = "2"
    assert request.run_config == {"a": {"b": 1}}
    assert request.tags == {"t": "1"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.job = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        request.tags["t"] = "3"  # type: ignore[index]
    assert dataclasses.replace(request, title="x").title == "x"


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"job": ""}, TypeError),
        ({"partitions": ["2024-01-01"]}, TypeError),
        ({"reprocess": "SOMETIMES"}, ValueError),
        ({"order": "RANDOM"}, ValueError),
        ({"max_concurrent_runs": True}, TypeError),
        ({"max_concurrent_runs": "4"}, TypeError),
        ({"run_config": [1]}, TypeError),
        ({"tags": {"a": 1}}, TypeError),
        ({"title": 3}, TypeError),
    ],
)
def test_a_request_of_the_wrong_shape_is_refused_at_once(
    kwargs: dict[str, Any], error: type[Exception]
) -> None:
    given: dict[str, Any] = {"job": "j", "partitions": AllPartitions(), **kwargs}
    with pytest.raises(error):
        BackfillRequest(**given)


def test_partition_keys_refuse_a_single_string() -> None:
    with pytest.raises(TypeError):
        PartitionKeys("2024-01-01")
    with pytest.raises(TypeError):
        PartitionKeys([1, 2])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        PartitionRange("2024-01-01", None)  # type: ignore[arg-type]


def test_trigger_declarations() -> None:
    @trigger
    def plain(context: TriggerContext) -> TriggerResult:
        """Docstring as description."""
        return SkipReason("no")

    assert isinstance(plain, TriggerDefinition)
    assert (plain.name, plain.description, plain.interval_seconds) == (
        "plain",
        "Docstring as description.",
        None,
    )
    assert plain.timeout_seconds == 60.0

    @trigger(name="renamed", interval_seconds=30, timeout_seconds=5, description="d")
    def other(context: TriggerContext) -> TriggerResult:
        return SkipReason("no")

    assert (other.name, other.interval_seconds, other.timeout_seconds) == ("renamed", 30.0, 5.0)
    for bad in ({"interval_seconds": 0}, {"timeout_seconds": 0}, {"name": "no spaces"}):
        with pytest.raises(ValueError):
            trigger(**bad)(plain.fn)


def test_the_operation_document_ships_in_the_package_and_is_the_contracts_one() -> None:
    packaged = resources.files("backfiller_client").joinpath("operations.graphql")
    assert packaged.is_file()
    contract = REPO / "contracts" / "v1" / "operations" / "python_client.graphql"
    assert contract.resolve() == (
        REPO / "clients" / "python" / "backfiller_client" / "operations.graphql"
    )
    assert contract.read_text() == packaged.read_text()


def test_each_operation_is_sent_with_only_the_fragments_it_uses() -> None:
    found = operations()
    assert "PyLaunchBackfill" in found and "PyEvaluateTrigger" in found
    launch = found["PyLaunchBackfill"]
    assert "fragment PyBackfill on Backfill" in launch
    assert "fragment PyUserError on UserError" in launch
    assert "PyJob" not in launch
    # Fragments of fragments are included too.
    evaluate = found["PyEvaluateTrigger"]
    for name in ("PyTriggerEvaluation", "PyBackfill", "PyPreview", "PyUserError"):
        assert f"fragment {name} on" in evaluate
    split = split_operations(
        "fragment A on Q { x ...B } # a comment: ...C\n"
        'fragment B on Q { y(s: "{ ...D") ... on R { w } } query One { ...A } query Two { z }'
    )
    assert "fragment B on Q" in split["One"] and "fragment" not in split["Two"]
    # Every operation the client sends parses, with each fragment it spreads defined once.
    for text in found.values():
        document = parse(text)
        names = [
            d.name.value for d in document.definitions if isinstance(d, FragmentDefinitionNode)
        ]
        assert len(names) == len(set(names))
