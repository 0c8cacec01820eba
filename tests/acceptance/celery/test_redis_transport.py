"""A reader of a daemon's queue on Redis, SIGKILLed at any instant, loses no message (issue 31).

kombu's Redis transport takes a message off its list and records it as held in two commands; a
reader killed between the two loses it. The daemons read their queues through
``launchers.celery.redis_transport``, which does both in one step. Here readers of one queue (the
daemon's own code: ``reader_options``, ``Taker``, ``give_back_unacked``) are SIGKILLed at
random instants while a publisher keeps sending, and every message must be either handled by a
reader (it wrote the message's number down before acknowledging it) or still on the broker for
the next reader. Handled twice is allowed (killed between writing and acknowledging: the
daemon's inbox takes a message twice as once); lost is not.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.celery.support import broker_url

pytestmark = [pytest.mark.acceptance]

READER = """
import os, sys, time
from kombu import Connection
from backfiller.launchers.celery.acks import give_back_unacked, reader_options
from backfiller.launchers.celery.app import owner_queue
from backfiller.launchers.celery.redis_transport import Taker

url, owner, log, until_empty = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
out = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)

def handle(message):
    os.write(out, b"%d\\n" % message.decode()["n"])
    message.ack()

with Connection(url, **reader_options(url)) as conn:
    channel = conn.channel()
    queue = owner_queue(owner)(channel)
    queue.declare()
    give_back_unacked(channel, queue.name)
    taker = Taker(channel, queue, handle)
    os.write(out, b"ready\\n")
    while taker.take(0.2) or not until_empty:
        pass
"""

MESSAGES = 2_000
KILLS = 10


def _handled(log: Path) -> list[int]:
    if not log.exists():
        return []
    return [int(line) for line in log.read_text().split() if line.isdigit()]


def _ready(log: Path) -> int:
    return log.read_text().count("ready") if log.exists() else 0


def _reader(url: str, owner: str, log: Path, until_empty: bool) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", READER, url, owner, str(log), "1" if until_empty else "0"],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def test_readers_killed_at_any_instant_lose_no_message(tmp_path: Path) -> None:
    from kombu import Connection, Producer

    from backfiller.launchers.celery.app import control_exchange, owner_queue

    url = broker_url("redis")
    owner = f"take-test-{uuid.uuid4().hex[:8]}"
    log = tmp_path / "handled"
    chance = random.Random(31)

    with Connection(url) as conn:
        queue = owner_queue(owner)(conn.channel())
        queue.declare()

        def publish() -> None:
            with Connection(url) as publishing:
                producer = Producer(publishing.channel(), exchange=control_exchange())
                for n in range(MESSAGES):
                    producer.publish({"n": n}, routing_key=queue.name, serializer="json")
                    if n % 30 == 0:  # over about 10 s: the readers also wait, empty-handed
                        time.sleep(0.1)

        publisher = threading.Thread(target=publish)
        publisher.start()
        try:
            for _ in range(KILLS):
                ready = _ready(log)
                reader = _reader(url, owner, log, until_empty=False)
                deadline = time.monotonic() + 30
                while _ready(log) == ready and time.monotonic() < deadline:
                    time.sleep(0.005)
                time.sleep(chance.uniform(0.0, 0.3))  # at any instant
                reader.send_signal(signal.SIGKILL)
                reader.wait()
        finally:
            publisher.join()
        last = _reader(url, owner, log, until_empty=True)
        assert last.wait(timeout=60) == 0
        queue.delete()

    handled = _handled(log)
    lost = sorted(set(range(MESSAGES)) - set(handled))
    assert lost == [], f"{len(lost)} messages lost, the first: {lost[:10]}"
    assert len(handled) - len(set(handled)) <= KILLS  # at most one handled twice per kill


def test_what_is_not_a_kombu_message_is_dropped_and_leaves_no_record() -> None:
    """Written straight onto a daemon's queue: not JSON, a JSON list, an object without
    properties, a message with a delivery tag but no routing key (which could not be given
    back). Each is dropped and leaves no record, and the message behind them is delivered.
    (A kombu message whose body does not open is the guard's to drop: test_broker_messages.)"""
    from kombu import Connection, Producer

    from backfiller.launchers.celery.acks import REDIS_UNACKED, reader_options
    from backfiller.launchers.celery.app import control_exchange, owner_queue
    from backfiller.launchers.celery.redis_transport import Taker

    url = broker_url("redis")
    owner = f"take-test-{uuid.uuid4().hex[:8]}"
    with Connection(url, **reader_options(url)) as conn:
        channel = conn.channel()
        queue = owner_queue(owner)(channel)
        queue.declare()
        unroutable = '{"body": "e30=", "properties": {"delivery_tag": "unroutable-tag",'
        unroutable += ' "body_encoding": "base64", "delivery_info": {}}}'
        with channel.conn_or_acquire() as client:
            client.lpush(queue.name, "not json", "[1, 2]", '{"body": 1}', unroutable)
        Producer(channel, exchange=control_exchange()).publish(
            {"n": 7}, routing_key=queue.name, serializer="json"
        )
        received: list[Any] = []

        def handle(message: Any) -> None:
            received.append(message.decode())
            message.ack()

        taker = Taker(channel, queue, handle)
        while taker.take(0.2):
            pass
        with channel.conn_or_acquire() as client:
            left = client.hkeys(REDIS_UNACKED["unacked_key"])
        queue.delete()
    assert received == [{"n": 7}]
    assert b"unroutable-tag" not in left
