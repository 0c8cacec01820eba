"""Splitting a GraphQL document into standalone operations, each with the fragments it uses.

Shared by the Python client (which sends its operations one at a time) and the REST endpoint
(which runs fixed operations): the server then parses small documents.
"""

from __future__ import annotations

from graphql import (
    DocumentNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    Node,
    OperationDefinitionNode,
    print_ast,
)
from graphql.language import Visitor, visit


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


__all__ = ["split_operations"]
