"""A node-count cost limit on connections, so one request cannot ask for millions of objects.

The estimate multiplies down the tree: ``backfills(first: 100) { runs(first: 100) }`` may
return 100 backfills and 100 x 100 runs, a cost of 10,100. A connection is a field whose type
is named ``...Connection`` and that takes ``first``; without ``first`` its default counts.
Other lists count as one (they are small or bounded by the definitions).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLField,
    GraphQLInterfaceType,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLSyntaxError,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    VariableNode,
    Visitor,
    get_named_type,
    visit,
)
from strawberry.extensions import SchemaExtension

from backfiller.resolvers.context import PublicError
from backfiller.resolvers.document_memo import DocumentMemo

MAX_FRAGMENT_DEPTH = 50
MAX_DIGITS = sys.get_int_max_str_digits() or 4300
_LONG_NUMBER = re.compile(rf"[0-9]{{{MAX_DIGITS + 1}}}")


LIMIT_MESSAGES = (
    "exceeds maximum operation depth",
    "aliases found",
    "Document contains more than",
    "the query may return about",
    "selects more than",
)


class QueryCostLimiter(SchemaExtension):
    """Refuse, before executing anything, an operation whose estimated node count is too big.

    Also refuses, right after parsing, a document whose fragments expand to too many fields
    (a "fragment bomb": F0 spreads F1 twice, F1 spreads F2 twice, ...), before validation
    rules that walk every expansion get to it; and gives every refusal of a limit the code
    ``QUERY_TOO_COMPLEX``, syntax errors ``GRAPHQL_PARSE_FAILED`` and other validation errors
    ``GRAPHQL_VALIDATION_FAILED``.
    """

    def __init__(
        self, max_cost: int, max_fields: int = 10_000, memo: DocumentMemo | None = None
    ) -> None:
        self.max_cost = max_cost
        self.max_fields = max_fields
        self.memo = memo or DocumentMemo(0)

    def on_parse(self) -> Iterator[None]:
        yield
        document = self.execution_context.graphql_document
        if document is None:
            return
        query = self.execution_context.query
        if query and _LONG_NUMBER.search(query) and _has_long_number(document):
            raise PublicError(
                f"a number in the document has more than {MAX_DIGITS} digits",
                code="INVALID_ARGUMENT",
            )
        if self.max_fields <= 0:
            return
        size = self.memo.get(
            document, ("size", None), lambda: (expanded_size(document, self.max_fields), True)
        )
        if size > self.max_fields:
            raise PublicError(
                f"the document selects more than {self.max_fields} fields once its fragments "
                "are expanded",
                code="QUERY_TOO_COMPLEX",
            )

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context
        document = context.graphql_document
        if document is not None and self.max_cost > 0:
            schema, variables = context.schema._schema, context.variables or {}
            cost = self.memo.get(
                document,
                ("cost", context.operation_name),
                lambda: estimate_cost(schema, document, context.operation_name, variables),
            )
            if cost > self.max_cost:
                raise PublicError(
                    f"the query may return about {cost} objects; the limit is {self.max_cost}: "
                    "ask for smaller pages (`first`) or fewer nested connections",
                    code="QUERY_TOO_COMPLEX",
                )
        yield


class _LongNumbers(Visitor):
    def __init__(self) -> None:
        super().__init__()
        self.found = False

    def enter_int_value(self, node: IntValueNode, *_: Any) -> None:
        self.found = self.found or len(node.value.lstrip("-")) > MAX_DIGITS


def _has_long_number(document: Any) -> bool:
    """Whether a literal of the document is an integer longer than the interpreter converts
    (only looked for when the text holds such a run of digits: rare)."""
    visitor = _LongNumbers()
    visit(document, visitor)
    return visitor.found


def tag_error_codes(errors: list[GraphQLError]) -> None:
    """Give parse, validation and limit errors a stable ``extensions.code``.

    Called by the schema on errors before execution (``PublicSchema.process_errors``).
    """
    for error in errors:
        if (error.extensions or {}).get("code"):
            continue
        if any(m in error.message for m in LIMIT_MESSAGES):
            code = "QUERY_TOO_COMPLEX"
        elif isinstance(error, GraphQLSyntaxError):
            code = "GRAPHQL_PARSE_FAILED"
        elif error.original_error is None or (
            isinstance(error.original_error, GraphQLError)
            and error.original_error.original_error is None
        ):
            code = "GRAPHQL_VALIDATION_FAILED"
        else:
            continue
        error.extensions = {**(error.extensions or {}), "code": code}


def expanded_size(document: Any, cap: int) -> int:
    """How many fields the document selects with every fragment spread expanded (memoized)."""
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    memo: dict[str, int] = {}

    def size(selection_set: SelectionSetNode | None, depth: int) -> int:
        if selection_set is None or depth > MAX_FRAGMENT_DEPTH:
            return 0
        total = 0
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                total += 1 + size(selection.selection_set, depth + 1)
            elif isinstance(selection, InlineFragmentNode):
                total += size(selection.selection_set, depth + 1)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                if name not in memo:
                    memo[name] = 0  # cycles are refused by validation; count them once
                    fragment = fragments.get(name)
                    if fragment is not None:
                        memo[name] = size(fragment.selection_set, depth + 1)
                total += memo[name]
            if total > cap:
                return total
        return total

    return sum(
        size(d.selection_set, 0)
        for d in document.definitions
        if isinstance(d, OperationDefinitionNode)
    )


def estimate_cost(
    schema: GraphQLSchema,
    document: Any,
    operation_name: str | None,
    variables: Mapping[str, Any],
) -> tuple[int, bool]:
    """The cost, and whether it is the same whatever the variables (none went into it)."""
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    for definition in document.definitions:
        if not isinstance(definition, OperationDefinitionNode):
            continue
        if operation_name is not None and (
            definition.name is None or definition.name.value != operation_name
        ):
            continue
        root = schema.get_root_type(definition.operation)
        if root is None:
            return 0, True
        defaults = {
            v.variable.name.value: v.default_value
            for v in definition.variable_definitions or ()
            if v.default_value is not None
        }
        walker = _Walker(schema, fragments, variables, defaults)
        cost = walker.unit(definition.selection_set, root, 0)
        return cost, not walker.read_variables
    return 0, True


class _Walker:
    """Cost is linear in the multiplier, so each selection set is costed once per unit.

    Fragments are memoized: a fragment bomb (fragments spreading each other many times)
    costs linear work here, and its exponential estimate is then refused.
    """

    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: Mapping[str, FragmentDefinitionNode],
        variables: Mapping[str, Any],
        defaults: Mapping[str, Any],
    ) -> None:
        self.schema = schema
        self.fragments = fragments
        self.variables = variables
        self.defaults = defaults
        self.memo: dict[str, int] = {}
        self.read_variables = False

    def cost(
        self, selection_set: SelectionSetNode, parent: Any, multiplier: int, depth: int
    ) -> int:
        return multiplier * self.unit(selection_set, parent, depth)

    def unit(self, selection_set: SelectionSetNode, parent: Any, depth: int) -> int:
        if depth > MAX_FRAGMENT_DEPTH:
            return 0
        total = 0
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                total += self._field(selection, parent, depth)
            elif isinstance(selection, InlineFragmentNode):
                target = parent
                if selection.type_condition is not None:
                    target = self.schema.get_type(selection.type_condition.name.value)
                total += self.unit(selection.selection_set, target, depth + 1)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                if name not in self.memo:
                    self.memo[name] = 0  # a cycle (refused by validation anyway) counts 0
                    fragment = self.fragments.get(name)
                    if fragment is not None:
                        target = self.schema.get_type(fragment.type_condition.name.value)
                        self.memo[name] = self.unit(fragment.selection_set, target, depth + 1)
                total += self.memo[name]
        return total

    def _field(self, node: FieldNode, parent: Any, depth: int) -> int:
        if node.selection_set is None:
            return 0
        if not isinstance(parent, GraphQLObjectType | GraphQLInterfaceType):
            # A union or an unknown type: count its selections as they are.
            return self.unit(node.selection_set, parent, depth + 1)
        definition: GraphQLField | None = parent.fields.get(node.name.value)
        if definition is None:
            return 0
        child = get_named_type(definition.type)
        if child.name.endswith("Connection") and "first" in definition.args:
            size = self._first(node, definition)
            return size + self.cost(node.selection_set, child, size, depth + 1)
        return self.unit(node.selection_set, child, depth + 1)

    def _first(self, node: FieldNode, definition: GraphQLField) -> int:
        for argument in node.arguments or ():
            if argument.name.value != "first":
                continue
            value = argument.value
            if isinstance(value, IntValueNode):
                return _clamp(value.value)
            if isinstance(value, VariableNode):
                self.read_variables = True
                name = value.name.value
                if name in self.variables:
                    return _clamp(self.variables[name])
                default = self.defaults.get(name)
                if isinstance(default, IntValueNode):
                    return _clamp(default.value)
            return 0
        return _clamp(definition.args["first"].default_value)


def _clamp(value: object) -> int:
    try:
        number: int = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return 0
    return max(0, min(number, 10**9))
