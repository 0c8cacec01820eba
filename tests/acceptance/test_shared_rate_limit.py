"""Rate limits hold across API replicas: two ``serve`` processes share one window in Redis."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator

import pytest

from tests.acceptance.celery.support import PatientServer
from tests.support import LAUNCH, LiveServer

pytestmark = pytest.mark.acceptance


def _redis_up() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture
def replicas(database_url: str) -> Iterator[list[LiveServer]]:
    if not _redis_up():
        pytest.skip("Redis is not running on 127.0.0.1")
    env = {
        "BACKFILLER_RATE_LIMIT_URL": "redis://127.0.0.1:6379/0",
        "BACKFILLER_RATE_LIMIT_PREFIX": f"test-{uuid.uuid4().hex[:8]}",
    }
    servers: list[LiveServer] = []
    try:
        for _ in range(2):
            servers.append(
                PatientServer(
                    database_url,
                    "tests.defs.jobs_daemon:definitions",
                    extra=["--rate-limit", "4"],
                    env=env,
                )
            )
        yield servers
    finally:
        for server in servers:
            server.stop()


def test_a_token_s_launch_rate_is_shared_by_every_replica(replicas: list[LiveServer]) -> None:
    codes = []
    for i in range(6):  # alternating replicas: 3 launches each
        server = replicas[i % 2]
        answer = server.graphql(
            LAUNCH,
            {
                "input": {
                    "target": {"job": "noop"},
                    "partitions": {"keys": [f"2020-01-{i + 1:02d}"]},
                }
            },
        ).json()["data"]["launchBackfill"]
        codes.append([e["code"] for e in answer["userErrors"]])
    assert codes == [[], [], [], [], ["RATE_LIMITED"], ["RATE_LIMITED"]]
