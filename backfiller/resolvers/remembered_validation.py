"""Validation remembered per parsed document (with ``graphql_cache``, instead of strawberry's
``ValidationCache``).

A document's validation errors depend on the schema, the document and the rules only, so a
document seen before is not validated again. strawberry's ``ValidationCache`` keys an
``lru_cache`` by the document itself, and graphql-core hashes a document by hashing every node
of it, at every request; here the parse cache's same object for the same text is the key
(``DocumentMemo``), with the schema and the rule classes beside it.
"""

from __future__ import annotations

from collections.abc import Iterator

from strawberry.extensions import SchemaExtension
from strawberry.schema.schema import validate_document

from backfiller.resolvers.document_memo import DocumentMemo


class RememberedValidation(SchemaExtension):
    """Validates a document once per schema and rules (see the module's docstring)."""

    def __init__(self, memo: DocumentMemo) -> None:
        super().__init__()
        self.memo = memo

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        schema, document = context.schema._schema, context.graphql_document
        rules = tuple(context.validation_rules)
        if document is not None:
            context.pre_execution_errors = self.memo.get(
                document,
                ("validation", id(schema), rules),
                lambda: (validate_document(schema, document, rules), True),
            )
        yield
