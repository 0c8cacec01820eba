"""The client's GraphQL operations, read from ``operations.graphql`` next to this module.

That file is the one source of truth (``contracts/v1/operations/python_client.graphql`` links
to it, so the contract tests validate it). Each operation is sent alone, with just the
fragments it uses, so the server parses small documents.
"""

from __future__ import annotations

import functools
from importlib import resources

from graphql import parse

from backfiller.operations import split_operations

DOCUMENT = "operations.graphql"


@functools.cache
def operations() -> dict[str, str]:
    text = resources.files("backfiller.client").joinpath(DOCUMENT).read_text(encoding="utf-8")
    return split_operations(parse(text))


def operation(name: str) -> str:
    """The text of one operation, ready to send."""
    return operations()[name]


__all__ = ["operation", "operations", "split_operations"]
