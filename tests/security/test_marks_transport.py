"""``markPartitions`` over HTTP and over a WebSocket, against a live server with tokens: bad
input is the same typed error on both and changes nothing; a viewer is refused; every call is
in the audit log, a mark with its actor and reason."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.security.conftest import (
    DEFS,
    Tokens,
    audit_entries_sync,
    close_client,
    gql,
    row_counts,
)
from tests.security.sockets import Socket
from tests.support import LiveServer

MARK = """mutation($i: MarkPartitionsInput!) { markPartitions(input: $i) {
  marked runningPartitions userErrors { code field } } }"""


def given(
    job: str = "daily_sales",
    partitions: dict[str, Any] | None = None,
    reason: str = "produced out of band",
) -> dict[str, Any]:
    return {
        "i": {
            "target": {"job": job},
            "partitions": partitions or {"keys": ["2024-01-01"]},
            "status": "SUCCEEDED",
            "reason": reason,
        }
    }


BAD = [
    (given(job="no_such_job"), "JOB_NOT_FOUND"),
    (given(partitions={"keys": ["not-a-day"]}), "INVALID_PARTITION_RANGE"),
    (given(partitions={"keys": []}), "EMPTY_SELECTION"),
    (given(reason=" "), "INVALID_ARGUMENT"),
    (given(partitions={"all": False}), "INVALID_ARGUMENT"),
]


@pytest.fixture(scope="module")
def server(shared_database_url: str, tokens: Tokens) -> Iterator[LiveServer]:
    live = LiveServer(shared_database_url, DEFS, auth="token", extra=["--rate-limit", "0"])
    yield live
    close_client(live)
    live.stop()


def test_bad_input_is_the_same_typed_error_over_http_and_a_socket_and_changes_nothing(
    server: LiveServer, tokens: Tokens, shared_database_url: str
) -> None:
    before = row_counts(shared_database_url, ignore=("audit_log",))
    sock = Socket(server, tokens.operator)
    try:
        for variables, code in BAD:
            over_http = gql(server, MARK, variables, tokens.operator).json()["data"]
            over_socket = sock.ask(MARK, variables)["payload"]["data"]
            assert over_http == over_socket, (over_http, over_socket)
            payload = over_http["markPartitions"]
            assert payload["marked"] == 0
            assert code in [e["code"] for e in payload["userErrors"]], payload
        missing = given()
        del missing["i"]["reason"]
        over_http = gql(server, MARK, missing, tokens.operator).json()
        over_socket = sock.ask(MARK, missing)["payload"]
        assert over_http.get("data") is None and over_socket.get("data") is None
        assert [e["message"] for e in over_http["errors"]] == [
            e["message"] for e in over_socket["errors"]
        ]
        assert "reason" in over_http["errors"][0]["message"]
        # A viewer may not mark, on either transport.
        viewer = Socket(server, tokens.viewer)
        refused_http = gql(server, MARK, given(), tokens.viewer).json()
        refused_socket = viewer.ask(MARK, given())["payload"]
        viewer.close()
        for refused in (refused_http, refused_socket):
            codes = [e.get("extensions", {}).get("code") for e in refused.get("errors") or []]
            data = (refused.get("data") or {}).get("markPartitions") or {}
            codes += [e["code"] for e in data.get("userErrors") or []]
            assert "FORBIDDEN" in codes, refused
    finally:
        sock.close()
    assert row_counts(shared_database_url, ignore=("audit_log",)) == before


def test_a_mark_is_audited_with_its_actor_and_reason(
    server: LiveServer, tokens: Tokens, shared_database_url: str
) -> None:
    variables = given(partitions={"keys": ["2024-05-01", "2024-05-02"]}, reason="copied by hand")
    payload = gql(server, MARK, variables, tokens.operator).json()["data"]["markPartitions"]
    assert payload == {"marked": 2, "runningPartitions": [], "userErrors": []}
    entries = [
        e for e in audit_entries_sync(shared_database_url) if e.operation == "markPartitions"
    ]
    done = [e for e in entries if e.message and "copied by hand" in e.message]
    assert len(done) == 1
    assert (done[0].actor, done[0].outcome.value) == ("operator", "succeeded")
    assert done[0].message == "marked 2 partitions of daily_sales succeeded: copied by hand"


RANGES = """{ job(name: "daily_sales") {
  partitionStatusRanges { status startKey endKey count } } }"""


def succeeded_holds(answer: dict[str, Any], key: str) -> bool:
    ranges = answer["data"]["job"]["partitionStatusRanges"]
    return any(r["status"] == "SUCCEEDED" and r["startKey"] <= key <= r["endKey"] for r in ranges)


def test_a_jobs_ranges_read_the_same_over_http_and_a_socket_as_marks_change_them(
    server: LiveServer, tokens: Tokens
) -> None:
    """A job's partition ranges (read again when the job's version changes) answer the same
    on both transports, before and after a mark made on the other one."""
    sock = Socket(server, tokens.operator)
    try:
        mark = given(partitions={"keys": ["2024-07-01"]}, reason="loaded by hand")
        assert sock.ask(MARK, mark)["payload"]["data"]["markPartitions"]["marked"] == 1
        over_http = gql(server, RANGES, token=tokens.viewer).json()
        over_socket = sock.ask(RANGES)["payload"]
        assert over_http == over_socket
        assert succeeded_holds(over_http, "2024-07-01")
        assert not succeeded_holds(over_http, "2024-07-02")

        mark = given(partitions={"keys": ["2024-07-02"]}, reason="loaded by hand")
        done = gql(server, MARK, mark, tokens.operator).json()["data"]["markPartitions"]
        assert done["marked"] == 1
        over_socket = sock.ask(RANGES)["payload"]
        assert over_socket == gql(server, RANGES, token=tokens.viewer).json()
        assert succeeded_holds(over_socket, "2024-07-01")
        assert succeeded_holds(over_socket, "2024-07-02")
    finally:
        sock.close()
