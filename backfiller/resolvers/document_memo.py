"""What the server worked out for a parsed document, remembered for the next request of it.

Keyed by the document object: the parse cache (``ParserCache``) hands back the same object
for the same text, so the document is never hashed (graphql-core hashes a node by hashing all
of it, every time: strawberry's validation cache did that at every request). The ``size``
most recent entries are kept, each holding its document, so an object's id is never
another's while its entry lives. ``size`` 0 keeps nothing.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")


class DocumentMemo:
    """Figures per (document, key); see the module's docstring."""

    def __init__(self, size: int = 512) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[int, Hashable], tuple[Any, Any]] = OrderedDict()

    def get(self, document: Any, key: Hashable, work: Callable[[], tuple[T, bool]]) -> T:
        """The figure ``key`` of ``document``: remembered, or ``work()``, which also says
        whether it may be remembered."""
        entry = (id(document), key)
        found = self._entries.get(entry)
        if found is not None and found[0] is document:
            self._entries.move_to_end(entry)
            remembered: T = found[1]
            return remembered
        value, constant = work()
        if constant and self.size > 0:
            self._entries[entry] = (document, value)
            if len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return value
