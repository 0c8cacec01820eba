"""The public schema is a contract: committed, frozen per release, and only ever grows."""

from __future__ import annotations

from pathlib import Path

import pytest
from graphql import (
    GraphQLInputObjectType,
    GraphQLSchema,
    build_schema,
    find_breaking_changes,
    parse,
    validate,
)

from backfiller.api import schema as live_schema

REPO = Path(__file__).resolve().parents[2]
CONTRACTS = REPO / "contracts"
RELEASES = sorted(p for p in CONTRACTS.iterdir() if (p / "schema.graphql").exists())
OPERATION_FILES = sorted(CONTRACTS.glob("v*/operations/*.graphql"))


def current_sdl() -> str:
    return live_schema.as_str() + "\n"


def test_committed_schema_matches_the_code() -> None:
    committed = (REPO / "schema.graphql").read_text()
    assert committed == current_sdl(), (
        "schema.graphql is stale: run `make schema` and commit it (and check that the change "
        "only adds to the v1 contract)"
    )


def one_of_breaks(old: GraphQLSchema, new: GraphQLSchema) -> list[str]:
    """Changes to @oneOf that graphql-core's ``find_breaking_changes`` does not report."""
    problems: list[str] = []
    for name, old_type in old.type_map.items():
        if not isinstance(old_type, GraphQLInputObjectType) or name.startswith("__"):
            continue
        new_type = new.type_map.get(name)
        if not isinstance(new_type, GraphQLInputObjectType):
            continue
        if old_type.is_one_of != new_type.is_one_of:
            problems.append(f"{name}: @oneOf {'removed' if old_type.is_one_of else 'added'}")
    return problems


def breaking_changes(old_sdl: str, new_sdl: str) -> list[str]:
    old, new = build_schema(old_sdl), build_schema(new_sdl)
    found = [f"{c.type.name}: {c.description}" for c in find_breaking_changes(old, new)]
    return found + one_of_breaks(old, new)


@pytest.mark.parametrize("release", RELEASES, ids=lambda p: p.name)
def test_no_breaking_change_against_a_frozen_release(release: Path) -> None:
    frozen = (release / "schema.graphql").read_text()
    assert breaking_changes(frozen, current_sdl()) == []


def test_the_checker_catches_what_it_must() -> None:
    base = """
    directive @oneOf on INPUT_OBJECT
    input Sel @oneOf { a: String, b: Int }
    enum Color { RED GREEN }
    type Query { f(s: Sel!): Color, g: String }
    """
    assert breaking_changes(base, base) == []
    without_one_of = base.replace("input Sel @oneOf", "input Sel")
    assert breaking_changes(base, without_one_of) == ["Sel: @oneOf removed"]
    removed_field = base.replace(", g: String", "")
    assert any("g was removed" in c for c in breaking_changes(base, removed_field))
    grown = base.replace("g: String", "g: String, h: Int")
    assert breaking_changes(base, grown) == []


@pytest.mark.parametrize("path", OPERATION_FILES, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_first_party_operations_still_validate(path: Path) -> None:
    document = parse(path.read_text())
    errors = validate(live_schema._schema, document)
    assert errors == [], [e.message for e in errors]


def test_every_release_keeps_its_operation_documents() -> None:
    for release in RELEASES:
        assert (release / "operations").is_dir(), f"{release.name} has no operations/ folder"
