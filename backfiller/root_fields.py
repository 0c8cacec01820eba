"""Schema extensions whose per-field hook acts on root fields only.

A strawberry schema extension that implements ``resolve`` becomes a graphql-core middleware:
it wraps every field of every request, down to the last string of a page of 100 backfills.
The hooks of this API (access checks, operation metrics) act on root fields only. A
:class:`RootFieldExtension` says so by construction: its ``resolve`` passes every field below
the root straight on and calls :meth:`RootFieldExtension.resolve_root` for root fields, and a
subclass may not override ``resolve``. The executor
(:class:`~backfiller.resolvers.plain_fields.PlainFieldsMixin`) reads plain fields below
the root without the middleware only when :func:`root_fields_only` holds for every middleware.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from strawberry.extensions import SchemaExtension


class RootFieldExtension(SchemaExtension):
    """A schema extension with a per-field hook for root fields only (``resolve_root``)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.resolve is not RootFieldExtension.resolve:
            raise TypeError(f"{cls.__name__} overrides resolve: override resolve_root")

    def resolve(
        self, _next: Callable[..., Any], root: Any, info: Any, *args: Any, **kwargs: Any
    ) -> Any:
        if info.path.prev is not None:
            return _next(root, info, *args, **kwargs)
        return self.resolve_root(_next, root, info, *args, **kwargs)

    def resolve_root(
        self, _next: Callable[..., Any], root: Any, info: Any, *args: Any, **kwargs: Any
    ) -> Any:
        """The hook of a root field (``info.path.prev`` is None): by default, nothing."""
        return _next(root, info, *args, **kwargs)


def root_fields_only(middlewares: Iterable[Any]) -> bool:
    """Whether every middleware leaves the fields below the root alone."""
    return all(isinstance(m, RootFieldExtension) for m in middlewares)


__all__ = ["RootFieldExtension", "root_fields_only"]
