"""JSON Schemas derived from the public GraphQL contract, for the REST endpoint's OpenAPI document.

Request bodies come from GraphQL input types; response bodies from the selection sets of the
fixed operations that the REST routes execute. Nothing here is written twice by hand, so the
document cannot drift from what the routes answer.
"""

from __future__ import annotations

from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLScalarType,
    GraphQLSchema,
    InlineFragmentNode,
    SelectionSetNode,
)
from graphql.pyutils import Undefined

JsonSchema = dict[str, Any]

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

_SCALARS: dict[str, JsonSchema] = {
    "String": {"type": "string"},
    "ID": {"type": "string"},
    "Int": {"type": "integer", "minimum": INT32_MIN, "maximum": INT32_MAX},
    "Float": {"type": "number"},
    "Boolean": {"type": "boolean"},
    "DateTime": {"type": "string", "format": "date-time"},
    "JSON": {},
}


def ref(name: str) -> JsonSchema:
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: JsonSchema) -> JsonSchema:
    if not schema:  # "any value" already admits null
        return schema
    return {"anyOf": [schema, {"type": "null"}]}


class SchemaBuilder:
    """Collects named component schemas while it converts GraphQL types."""

    def __init__(self, schema: GraphQLSchema, document: DocumentNode) -> None:
        self.schema = schema
        self.components: dict[str, JsonSchema] = {}
        self.fragments: dict[str, FragmentDefinitionNode] = {
            d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
        }
        # Fragments rendered as named components: fragment name -> component name.
        self.named_fragments: dict[str, str] = {}

    # -- scalars and enums ---------------------------------------------------------------------

    def scalar(self, scalar: GraphQLScalarType) -> JsonSchema:
        return dict(_SCALARS.get(scalar.name, {}))

    def enum(self, enum: GraphQLEnumType) -> JsonSchema:
        if enum.name not in self.components:
            schema: JsonSchema = {"type": "string", "enum": list(enum.values)}
            if enum.description:
                schema["description"] = enum.description
            self.components[enum.name] = schema
        return ref(enum.name)

    # -- inputs --------------------------------------------------------------------------------

    def input_type(self, type_: GraphQLInputType) -> JsonSchema:
        """A GraphQL input type as JSON Schema, as GraphQL input coercion accepts it."""
        if isinstance(type_, GraphQLNonNull):
            return self._input_named_or_list(type_.of_type)
        return nullable(self._input_named_or_list(type_))

    def _input_named_or_list(self, type_: Any) -> JsonSchema:
        if isinstance(type_, GraphQLList):
            item = self.input_type(type_.of_type)
            # GraphQL coerces a lone value into a list of one: say so.
            return {"anyOf": [{"type": "array", "items": item}, item]}
        if isinstance(type_, GraphQLScalarType):
            return self.scalar(type_)
        if isinstance(type_, GraphQLEnumType):
            return self.enum(type_)
        if isinstance(type_, GraphQLInputObjectType):
            if type_.name not in self.components:
                self.components[type_.name] = {}  # break cycles
                self.components[type_.name] = self.input_object(type_)
            return ref(type_.name)
        raise TypeError(f"not an input type: {type_!r}")

    def input_object(
        self, type_: GraphQLInputObjectType, omit: frozenset[str] = frozenset()
    ) -> JsonSchema:
        """An input object as a JSON object schema; ``omit`` drops fields (taken from the URL)."""
        properties: dict[str, JsonSchema] = {}
        required: list[str] = []
        for name, field in type_.fields.items():
            if name in omit:
                continue
            if type_.is_one_of:
                prop = self._input_named_or_list(
                    field.type.of_type if isinstance(field.type, GraphQLNonNull) else field.type
                )
            else:
                prop = self.input_type(field.type)
                if isinstance(field.type, GraphQLNonNull) and field.default_value is Undefined:
                    required.append(name)
            if field.description:
                prop = {**prop, "description": field.description}
            properties[name] = prop
        schema: JsonSchema = {
            "type": "object",
            "properties": properties,
            "additionalProperties": False,
        }
        if required:
            schema["required"] = required
        if type_.is_one_of:
            schema["minProperties"] = 1
            schema["maxProperties"] = 1
        if type_.description:
            schema["description"] = type_.description
        return schema

    # -- outputs -------------------------------------------------------------------------------

    def name_fragment(self, fragment: str, component: str) -> None:
        """Render spreads of ``fragment`` as a reference to the component ``component``."""
        self.named_fragments[fragment] = component
        definition = self.fragments[fragment]
        parent = self.schema.get_type(definition.type_condition.name.value)
        assert isinstance(parent, GraphQLObjectType | GraphQLInterfaceType)
        self.components[component] = self.selection(parent, definition.selection_set)

    def output_type(
        self, type_: GraphQLOutputType, selection: SelectionSetNode | None
    ) -> JsonSchema:
        if isinstance(type_, GraphQLNonNull):
            return self._output_named_or_list(type_.of_type, selection)
        return nullable(self._output_named_or_list(type_, selection))

    def _output_named_or_list(self, type_: Any, selection: SelectionSetNode | None) -> JsonSchema:
        if isinstance(type_, GraphQLList):
            return {"type": "array", "items": self.output_type(type_.of_type, selection)}
        if isinstance(type_, GraphQLScalarType):
            return self.scalar(type_)
        if isinstance(type_, GraphQLEnumType):
            return self.enum(type_)
        if isinstance(type_, GraphQLObjectType | GraphQLInterfaceType):
            assert selection is not None, f"{type_.name} needs a selection"
            return self.selection(type_, selection)
        raise TypeError(f"unsupported output type: {type_!r}")

    def selection(
        self, parent: GraphQLObjectType | GraphQLInterfaceType, selection: SelectionSetNode
    ) -> JsonSchema:
        """The JSON shape that executing ``selection`` on ``parent`` produces."""
        properties: dict[str, JsonSchema] = {}
        refs: list[JsonSchema] = []
        for node in selection.selections:
            if isinstance(node, FieldNode):
                name = node.alias.value if node.alias else node.name.value
                if node.name.value == "__typename":
                    properties[name] = {"type": "string"}
                    continue
                field = parent.fields[node.name.value]
                prop = self.output_type(field.type, node.selection_set)
                if field.description and "$ref" not in prop:
                    prop = {**prop, "description": field.description}
                properties[name] = prop
            elif isinstance(node, FragmentSpreadNode):
                name = node.name.value
                if name in self.named_fragments:
                    refs.append(ref(self.named_fragments[name]))
                    continue
                inner = self.selection(parent, self.fragments[name].selection_set)
                properties.update(inner.get("properties", {}))
            elif isinstance(node, InlineFragmentNode):
                inner = self.selection(parent, node.selection_set)
                properties.update(inner.get("properties", {}))
        own: JsonSchema = {"type": "object", "properties": properties, "required": list(properties)}
        if not refs:
            return own
        if not properties:
            return refs[0] if len(refs) == 1 else {"allOf": refs}
        return {"allOf": [*refs, own]}

    def operation_field(
        self, document: DocumentNode, operation: str, path: list[str]
    ) -> JsonSchema:
        """The schema of the value at ``path`` in the ``data`` of ``operation``."""
        from graphql import OperationDefinitionNode, OperationType

        for definition in document.definitions:
            if (
                isinstance(definition, OperationDefinitionNode)
                and definition.name is not None
                and definition.name.value == operation
            ):
                break
        else:
            raise KeyError(operation)
        root = (
            self.schema.mutation_type
            if definition.operation is OperationType.MUTATION
            else self.schema.query_type
        )
        assert root is not None
        parent: Any = root
        selection: SelectionSetNode | None = definition.selection_set
        type_: Any = None
        for step in path:
            assert selection is not None
            node = next(
                n
                for n in selection.selections
                if isinstance(n, FieldNode) and (n.alias or n.name).value == step
            )
            type_ = parent.fields[node.name.value].type
            selection = node.selection_set
            named = type_
            while isinstance(named, GraphQLNonNull | GraphQLList):
                named = named.of_type
            parent = named
        if isinstance(type_, GraphQLNonNull):
            type_ = type_.of_type
        return self._output_named_or_list(type_, selection)
