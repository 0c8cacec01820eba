"""Which strings no database can store, and where they are: the path names the item."""

from __future__ import annotations

import pytest

from backfiller.resolvers.sanitize import unstorable_text

KEYS = [f"2024-01-{d:02}" for d in range(1, 29)]


@pytest.mark.parametrize(
    ("value", "found"),
    [
        ("plain", None),
        ("a\x00b", ["input"]),
        ("lone \ud800", ["input"]),
        ({"title": "ok", "tags": [{"key": "k", "value": "v"}]}, None),
        (
            {"title": "ok", "tags": [{"key": "k", "value": "v\x00"}]},
            ["input", "tags", "0", "value"],
        ),
        (KEYS, None),
        ([*KEYS, "bad\x00"], ["input", "28"]),
        ([*KEYS[:3], "\udfff", *KEYS[3:]], ["input", "3"]),
        # A high and a low surrogate in two items do not make a pair when joined.
        (["a\ud83d", "\ude00b"], ["input", "0"]),
        ([1, "x", None, {"k": "\x00"}], ["input", "3", "k"]),
        ((), None),
        ({"partitions": {"keys": KEYS}}, None),
    ],
)
def test_the_first_unstorable_string_is_found_at_its_path(value: object, found: object) -> None:
    assert unstorable_text(value, ["input"]) == found
