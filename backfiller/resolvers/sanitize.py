"""Text no database can store: refused in arguments, escaped in what the server records."""

from __future__ import annotations

from typing import Any

from backfiller.resolvers.policy import Refusal
from backfiller.schema.common import UserErrorCode


def unstorable_text(value: Any, path: list[str]) -> list[str] | None:
    """The path of a string no database can store (NUL, lone surrogates), if any.

    PostgreSQL refuses NUL in text and JSON; neither database takes text that is not UTF-8.
    Checked on the arguments of every root field, so no resolver meets such a string.
    """
    found = _unstorable_at(value)
    return None if found is None else [*path, *found]


def _storable_text(text: str) -> bool:
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _unstorable_at(value: Any) -> list[str] | None:
    """The path, relative to ``value``, of an unstorable string in it. A list of strings (a
    launch's 9,000 keys) is checked joined, in one pass; item by item only when it fails."""
    if isinstance(value, str):
        return None if _storable_text(value) else []
    if isinstance(value, dict):
        for key, item in value.items():
            found = _unstorable_at(item)
            if found is not None:
                return [str(key), *found]
    elif isinstance(value, list | tuple):
        try:
            if _storable_text("".join(value)):
                return None
        except TypeError:
            pass  # not only strings: item by item
        for index, item in enumerate(value):
            found = _unstorable_at(item)
            if found is not None:
                return [str(index), *found]
    return None


def check_text(kwargs: dict[str, Any]) -> Refusal | None:
    for name, value in kwargs.items():
        found = unstorable_text(value, [name])
        if found is not None:
            field = found[1:] if found[0] == "input" and len(found) > 1 else found
            return Refusal(
                UserErrorCode.INVALID_ARGUMENT,
                "must not contain NUL characters or unpaired UTF-16 surrogates",
                field,
            )
    return None


def storable(text: str | None) -> str | None:
    """``text`` as the database can keep it: NUL and unpaired surrogates escaped."""
    if text is None:
        return None
    return text.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")
