"""A Prometheus counter made on first use: importing the module that declares one does not
import prometheus_client (a worker or a daemon without metrics never pays for it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class LazyCounter:
    """``Counter(name, documentation, labels)`` of the default registry, made by the first
    :meth:`get` of the process."""

    def __init__(self, name: str, documentation: str, labels: Sequence[str]) -> None:
        self.name = name
        self._documentation = documentation
        self._labels = list(labels)
        self._counter: Any = None

    def get(self) -> Any:
        if self._counter is None:
            from prometheus_client import Counter

            self._counter = Counter(self.name, self._documentation, self._labels)
        return self._counter
