"""Request ids read as random (version 4) UUIDs in hex, and do not repeat."""

from __future__ import annotations

import uuid

from backfiller.web.request_ids import new_request_id


def test_a_request_id_is_a_version_4_uuid_in_hex_and_never_repeats() -> None:
    made = [new_request_id() for _ in range(20_000)]
    for request_id in made:
        parsed = uuid.UUID(hex=request_id)
        assert (parsed.version, parsed.variant) == (4, uuid.RFC_4122)
        assert parsed.hex == request_id  # 32 lower-case hex digits, as uuid4().hex
    assert len(set(made)) == len(made)
