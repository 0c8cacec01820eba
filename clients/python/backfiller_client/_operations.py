"""The client's GraphQL operations, read from ``operations.graphql`` next to this module.

That file is the one source of truth (``contracts/v1/operations/python_client.graphql`` links
to it, so the contract tests validate it). Each operation is sent alone, with just the
fragments it uses, so the server parses small documents.

The client does not depend on a GraphQL library: the document is split with the few rules of
GraphQL's syntax that matter here (top-level definitions, ``#`` comments, ``...Name`` spreads).
The contract tests parse the same file with graphql-core and validate it against the schema.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

DOCUMENT = "operations.graphql"

_STRING = r'"(?:[^"\\\n]|\\.)*"'
_COMMENT = re.compile(rf"#[^\n]*|{_STRING}")
_BRACE = re.compile(rf"{_STRING}|[{{}}]")
_HEAD = re.compile(r"\s*(query|mutation|subscription|fragment)\s+([_A-Za-z]\w*)")
_SPREAD = re.compile(r"\.\.\.\s*(?!on\b)([_A-Za-z]\w*)")


def _definitions(text: str) -> list[tuple[str, str, str]]:
    """(kind, name, text) of each named top-level definition, comments removed."""
    text = _COMMENT.sub(lambda m: m[0] if m[0].startswith('"') else "", text)
    found: list[tuple[str, str, str]] = []
    position = 0
    while text[position:].strip():
        head = _HEAD.match(text, position)
        if head is None:
            raise ValueError(f"not a named definition at: {text[position : position + 40]!r}")
        depth, end = 0, None
        for token in _BRACE.finditer(text, head.end()):
            depth += {"{": 1, "}": -1}.get(token[0], 0)
            if depth == 0 and token[0] == "}":
                end = token.end()
                break
        if end is None:
            raise ValueError(f"{head[2]} has no closing brace")
        found.append((head[1], head[2], text[head.start(1) : end]))
        position = end
    return found


def _spreads(body: str) -> set[str]:
    return set(_SPREAD.findall(re.sub(_STRING, '""', body)))


def split_operations(text: str) -> dict[str, str]:
    """Each named operation of the document ``text`` with the fragments it needs."""
    definitions = _definitions(text)
    fragments = {name: body for kind, name, body in definitions if kind == "fragment"}
    found: dict[str, str] = {}
    for kind, name, body in definitions:
        if kind == "fragment":
            continue
        needed: list[str] = []
        todo = sorted(_spreads(body))
        while todo:
            spread = todo.pop()
            if spread in needed:
                continue
            needed.append(spread)
            todo.extend(sorted(_spreads(fragments[spread]) - set(needed)))
        found[name] = "\n\n".join([body] + [fragments[n] for n in sorted(needed)])
    return found


@functools.cache
def operations() -> dict[str, str]:
    package = __name__.rpartition(".")[0]
    text = resources.files(package).joinpath(DOCUMENT).read_text(encoding="utf-8")
    return split_operations(text)


def operation(name: str) -> str:
    """The text of one operation, ready to send."""
    return operations()[name]
