"""Schema extensions' hooks worked out once per extension class, not at every request.

For every request and each of its four stages (operation, parsing, validation, execution),
strawberry looks at every schema extension to find out whether it has a hook for the stage
and of which kind, then wraps the hook in a new ``contextlib`` context manager (a new
decorated function each time, with its name and docstring copied over). With the public
schema's eight extensions that was several percent of a launch's server time. What it finds
depends on the extension's class alone, so here it is found once per class and stage, and a
request only makes the context managers (``contextmanager(hook)(extension)``, exactly what
strawberry's ``contextmanager(MethodType(hook, extension))()`` makes). Entering and leaving
them, in order and with the same exceptions, is strawberry's own code. An extension's
results (``get_results``) are asked for only when its class has its own.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from strawberry.extensions import SchemaExtension
from strawberry.extensions.context import (
    ExecutingContextManager,
    OperationContextManager,
    ParsingContextManager,
    ValidationContextManager,
    WrappedHook,
)
from strawberry.extensions.runner import SchemaExtensionsRunner
from strawberry.types import ExecutionContext
from strawberry.utils.await_maybe import await_maybe

_Plan = tuple[Callable[[SchemaExtension], Any], bool]
"""How to make a stage's context manager from an extension, and whether it is async."""

_PLANS: dict[tuple[type, str], _Plan | None] = {}


def _plan_of(hook: Callable[..., Any], stage: str) -> _Plan | None:
    """The plan of an extension class's (callable) ``hook`` for ``stage``: None when it is
    ``SchemaExtension``'s own, which does nothing."""
    if hook is getattr(SchemaExtension, stage):
        return None
    if inspect.isgeneratorfunction(hook):
        return contextlib.contextmanager(hook), False
    if inspect.isasyncgenfunction(hook):
        return contextlib.asynccontextmanager(hook), True
    if inspect.iscoroutinefunction(hook):

        @contextlib.asynccontextmanager
        async def awaited(extension: SchemaExtension) -> AsyncIterator[None]:
            await hook(extension)
            yield

        return awaited, True

    @contextlib.contextmanager
    def called(extension: SchemaExtension) -> Iterator[None]:
        hook(extension)
        yield

    return called, False


class _RememberedHooks:
    """A stage's context manager whose hooks come from the plans of the extensions' classes."""

    HOOK_NAME: str

    def get_hook(self, extension: SchemaExtension) -> WrappedHook | None:
        key = (type(extension), self.HOOK_NAME)
        try:
            plan = _PLANS[key]
        except KeyError:
            hook = getattr(type(extension), self.HOOK_NAME)
            if not callable(hook):  # strawberry refuses it, as ever (never remembered)
                return super().get_hook(extension)  # type: ignore[misc,no-any-return]
            plan = _PLANS[key] = _plan_of(hook, self.HOOK_NAME)
        if plan is None:
            return None
        make, is_async = plan
        return WrappedHook(extension, functools.partial(make, extension), is_async)


class _Operation(_RememberedHooks, OperationContextManager):
    pass


class _Parsing(_RememberedHooks, ParsingContextManager):
    pass


class _Validation(_RememberedHooks, ValidationContextManager):
    pass


class _Executing(_RememberedHooks, ExecutingContextManager):
    pass


class RememberingExtensionsRunner(SchemaExtensionsRunner):
    """strawberry's runner of schema extensions, with hooks worked out once per class (give
    it from ``Schema.create_extensions_runner``)."""

    def operation(self) -> OperationContextManager:
        return _Operation(self.extensions)

    def parsing(self) -> ParsingContextManager:
        return _Parsing(self.extensions)

    def validation(self) -> ValidationContextManager:
        return _Validation(self.extensions)

    def executing(self) -> ExecutingContextManager:
        return _Executing(self.extensions)

    async def get_extensions_results(self, ctx: ExecutionContext) -> dict[str, Any]:
        """strawberry's, without awaiting ``SchemaExtension.get_results`` (an empty dict)
        for every extension that keeps it, at every request."""
        data: dict[str, Any] = {}
        for extension in self.extensions:
            if type(extension).get_results is not _NO_RESULTS:
                data.update(await await_maybe(extension.get_results()))
        data.update(ctx.extensions_results)
        return data


_NO_RESULTS = SchemaExtension.get_results
