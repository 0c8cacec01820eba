"""Dataclasses pickled by position: for the messages that cross a process boundary per run.

A dataclass with ``slots=True`` pickles through the ``__getstate__`` and ``__setstate__`` that
``dataclasses`` writes for it, which look the fields up again for every object: for the local
launcher's pipe messages (several per run, both ways) that was a fifth of a worker's CPU.
:func:`by_position` gives the class a ``__reduce__`` that hands pickle the field values in
order, and unpickling calls the class with them, as ``cls(*values)``.
"""

from __future__ import annotations

import operator
from dataclasses import fields
from typing import Any, TypeVar

C = TypeVar("C", bound=type)


def by_position(cls: C) -> C:
    """Pickle the dataclass ``cls`` as ``cls(*field values)`` (every field must be in
    ``__init__``, in order). Apply it above ``@dataclass``."""
    names = [f.name for f in fields(cls)]
    if not all(f.init for f in fields(cls)):
        raise TypeError(f"{cls.__name__}: every field must be an __init__ argument")
    if len(names) == 1:
        (name,) = names

        def __reduce__(self: Any) -> tuple[Any, ...]:
            return (cls, (getattr(self, name),))

    else:
        values = operator.attrgetter(*names)

        def __reduce__(self: Any) -> tuple[Any, ...]:
            return (cls, values(self))

    cls.__reduce__ = __reduce__  # type: ignore[method-assign,assignment]
    return cls
