"""The client's GraphQL operations, read from ``operations.graphql`` next to this module.

That file is the one source of truth (``contracts/v1/operations/python_client.graphql`` links
to it, so the contract tests validate it). Each operation is sent alone, with just the
fragments it uses, so the server parses small documents.
"""

from __future__ import annotations

import functools
from importlib import resources

from graphql import (
    DocumentNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    Node,
    OperationDefinitionNode,
    parse,
    print_ast,
)
from graphql.language import Visitor, visit

DOCUMENT = "operations.graphql"


class _Spreads(Visitor):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def enter_fragment_spread(self, node: FragmentSpreadNode, *_args: object) -> None:
        self.names.add(node.name.value)


def _spreads(node: Node) -> set[str]:
    visitor = _Spreads()
    visit(node, visitor)
    return visitor.names


def split_operations(document: DocumentNode) -> dict[str, str]:
    """Each named operation of ``document`` printed with the fragments it needs."""
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    found: dict[str, str] = {}
    for definition in document.definitions:
        if not isinstance(definition, OperationDefinitionNode) or definition.name is None:
            continue
        needed: list[str] = []
        todo = sorted(_spreads(definition))
        while todo:
            name = todo.pop()
            if name in needed:
                continue
            needed.append(name)
            todo.extend(sorted(_spreads(fragments[name]) - set(needed)))
        parts = [print_ast(definition)] + [print_ast(fragments[n]) for n in sorted(needed)]
        found[definition.name.value] = "\n\n".join(parts)
    return found


@functools.cache
def operations() -> dict[str, str]:
    text = resources.files("backfiller.client").joinpath(DOCUMENT).read_text(encoding="utf-8")
    return split_operations(parse(text))


def operation(name: str) -> str:
    """The text of one operation, ready to send."""
    return operations()[name]
