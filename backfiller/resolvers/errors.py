"""Masking of unexpected errors: no traceback or SQL in any response, a request id instead."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from graphql import ExecutionResult as GraphQLExecutionResult
from graphql import GraphQLError
from strawberry.extensions import SchemaExtension
from strawberry.types.execution import ExecutionResult

logger = logging.getLogger("backfiller.api")


class MaskUnexpectedErrors(SchemaExtension):
    """Replace every error that is not a known-safe one by a generic message and a request id.

    Syntax and validation errors, and ``PublicError`` raised by resolvers, are shown as they
    are. Anything else is logged, with its traceback, under the request id that the response
    carries (``extensions.requestId``).
    """

    def on_operation(self) -> Iterator[None]:
        yield
        self._mask_result(self.execution_context.result)

    def on_stream_result(self, result: Any) -> Iterator[None]:
        """Each result sent on a WebSocket (a subscription's events, a query's answer)."""
        self._mask_result(result)
        yield

    def _mask_result(self, result: object) -> None:
        if not isinstance(result, GraphQLExecutionResult | ExecutionResult) or not result.errors:
            return
        context = self.execution_context.context
        request_id = getattr(context, "request_id", "") or ""
        result.errors = [self._mask(e, request_id) for e in result.errors]

    @staticmethod
    def _mask(error: GraphQLError, request_id: str) -> GraphQLError:
        from backfiller.resolvers.context import PublicError

        if error.extensions and error.extensions.get("code") == "INTERNAL_ERROR":
            return error  # masked already (a stream's last result passes twice)
        original = error.original_error
        if original is None or isinstance(original, PublicError):
            return error
        if isinstance(original, GraphQLError) and original.original_error is None:
            return error
        logger.error(
            "unexpected error in request %s at %s", request_id, error.path, exc_info=original
        )
        return GraphQLError(
            "Internal server error.",
            nodes=error.nodes,
            source=error.source,
            positions=error.positions,
            path=error.path,
            extensions={"code": "INTERNAL_ERROR", "requestId": request_id},
        )
