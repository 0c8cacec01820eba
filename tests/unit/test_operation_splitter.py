"""The one GraphQL document splitter (the client's) serves the REST endpoint too."""

from __future__ import annotations

from pathlib import Path

from graphql import OperationDefinitionNode, build_schema, parse, validate

from backfiller.web.rest import load_operations

REPO = Path(__file__).resolve().parents[2]


def test_every_rest_operation_stands_alone_and_validates_against_the_schema() -> None:
    loaded = load_operations(REPO / "contracts" / "v1" / "operations" / "rest.graphql")
    schema = build_schema((REPO / "schema.graphql").read_text())
    names = {
        d.name.value
        for d in loaded.document.definitions
        if isinstance(d, OperationDefinitionNode) and d.name is not None
    }
    assert names and set(loaded.texts) == names
    for name, text in loaded.texts.items():
        # Validation fails on a missing fragment and on an unused one alike.
        assert validate(schema, parse(text)) == [], name
