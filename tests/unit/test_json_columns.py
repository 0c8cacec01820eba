"""JSON columns of the API's backfill reads, decoded when returned."""

from __future__ import annotations

from backfiller.storage.backfill_reads import JsonArray, json_value


def test_null_text_is_not_decoded() -> None:
    assert json_value(None) is None
    assert json_value("null") is None
    assert json_value('{"currency": "EUR"}') == {"currency": "EUR"}


def test_an_array_is_decoded_once_when_first_read() -> None:
    built: list[object] = []

    def build(item: object) -> str:
        built.append(item)
        return str(item).upper()

    keys = JsonArray('["a", "b", "c"]', build)
    assert built == []  # nothing decoded until read
    assert len(keys) == 3 and keys[0] == "A" and list(keys[1:]) == ["B", "C"]
    assert list(keys) == ["A", "B", "C"]
    assert built == ["a", "b", "c"]  # once
    assert list(JsonArray(None, build)) == [] and list(JsonArray("[]", build)) == []
