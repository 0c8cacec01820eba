"""Hostile messages on the broker, for the tests of ``launchers/celery/envelope.py`` and
``poison.py``: a forger's toolbox (raw messages of any content type, envelopes signed with the
right key, a wrong one or none), the queues of one cluster, and the refusal counts its daemon
and worker serve on their metrics ports.

The envelopes are made here by hand, not with ``envelope.seal``, so that the tests also pin
the format on the wire.
"""

from __future__ import annotations

import json
import pickle
import re
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from backfiller.launchers.celery.app import control_exchange
from backfiller.launchers.celery.envelope import BrokerKey
from tests.acceptance.celery.support import DEFINITIONS, CeleryWorker, Cluster
from tests.support import HTTP, LiveProcess, free_port

CONTROL = "backfiller.control"
LEASES = "backfiller.leases"
__all__ = ["control_exchange"]


def lease_exchange(key: BrokerKey) -> Any:
    """The lease fanout of the deployment whose key is ``key``."""
    from kombu import Exchange

    return Exchange(f"{LEASES}.{key.id}", type="fanout", durable=False)


TASK = "backfiller.run"
WRONG_KEY = BrokerKey("not-the-cluster-key-" + "w" * 44)
REFUSED = re.compile(
    r'^backfiller_broker_messages_refused_total\{queue_kind="(\w+)",reason="(\w+)"\} (\S+)$',
    re.M,
)
Tally = Counter[tuple[str, str]]


def envelope(
    body: dict[str, Any], to: str, key: BrokerKey | None, *, age: float = 0.0
) -> dict[str, Any]:
    """``body`` sealed as a daemon or worker would, ``age`` seconds ago (negative: ahead),
    signed with ``key`` (None: unsigned)."""
    text = json.dumps({**body, "ts": time.time() - age, "to": to}, separators=(",", ":"))
    sealed: dict[str, Any] = {"bf": 1, "m": text}
    if key is not None:
        sealed["s"] = key.sign(text)
    return sealed


def plain_end(run: int, attempt: int) -> dict[str, Any]:
    """A worker's ``end`` as it travelled before messages were sealed."""
    return {"t": "end", "run": run, "attempt": attempt, "outcome": "SUCCESS", "error": None,
            "trace": None, "worker": "forger:1", "at": time.time(), "lines": []}  # fmt: skip


def fake_run(run: int, queue: str, owner: str, job: str = "recorded") -> dict[str, Any]:
    """A task's argument for a run that no daemon submitted."""
    return {"t": "run", "run": run, "attempt": 1, "backfill": 1, "job": job,
            "partition": "1999-12-31", "config": {}, "tags": {}, "start": None, "end": None,
            "timeout": None, "owner": owner, "grace": 1.0, "partitions": []}  # fmt: skip


RAW = [
    (pickle.dumps({"t": "end", "run": 1}), "application/x-python-serialize", "undecodable"),
    (b"\x80\x04\x95 not json", "application/octet-stream", "undecodable"),
    (b"{not json", "application/json", "undecodable"),
    (b"[" * 100_000 + b"]" * 100_000, "application/json", "undecodable"),  # too deep
]
"""Bodies that are not JSON, or that no parser should follow: (bytes, content type, reason)."""


def json_garbage() -> list[tuple[Any, str]]:
    """JSON values that are not a sealed message of Backfiller: (value, reason)."""
    huge = {"bf": 1, "m": "x" * 4_000_000, "s": "0" * 64}
    return [
        ([1, 2, 3], "malformed"),
        ("a string", "malformed"),
        (42, "malformed"),
        (plain_end(1, 1), "unsigned"),
        (huge, "bad_signature"),
    ]


@dataclass
class Forger:
    """Publishes to one cluster's queues, and keeps the tally of what should be refused."""

    broker: str
    key: BrokerKey
    expected: Tally = field(default_factory=Counter)
    _conn: Any = None
    _producer: Any = None

    def __enter__(self) -> Forger:
        from kombu import Connection, Producer

        self._conn = Connection(self.broker, connect_timeout=5)
        self._producer = Producer(self._conn.channel())
        return self

    def __exit__(self, *exc: object) -> None:
        self._conn.release()

    def raw(self, queue: str, body: bytes, content_type: str, **options: Any) -> None:
        """Any bytes, to ``queue`` (through the default exchange, unless ``exchange=``)."""
        binary = content_type != "application/json"
        exchange = options.get("exchange")
        if exchange is not None and not isinstance(exchange, str):
            options["declare"] = [exchange]  # Redis routes by the type it was declared with
        self._producer.publish(
            body,
            routing_key=queue,
            content_type=content_type,
            content_encoding="binary" if binary else "utf-8",
            **options,
        )

    def send(self, queue: str, value: Any, **options: Any) -> None:
        self.raw(queue, json.dumps(value).encode(), "application/json", **options)

    def task(self, queue: str, args: list[Any], name: str = TASK) -> None:
        """A Celery task message (protocol 2) with ``args``, as a daemon would publish it."""
        self.task_body(queue, json.dumps([args, {}, {}]).encode(), "application/json", name)

    def task_body(self, queue: str, body: bytes, content_type: str, name: str = TASK) -> None:
        task_id = f"forged-{uuid.uuid4().hex[:8]}"
        headers = {"lang": "py", "task": name, "id": task_id, "root_id": task_id, "retries": 0,
                   "argsrepr": "[]", "kwargsrepr": "{}", "origin": "forger"}  # fmt: skip
        self.raw(queue, body, content_type, headers=headers)

    def garbage(self, queue: str, kind: str, copies: int = 1, **options: Any) -> None:
        """Every undecodable and unusable message, to ``queue``: each refused ``copies``
        times (a fanout reaches each worker process)."""
        for body, content_type, reason in RAW:
            self.raw(queue, body, content_type, **options)
            self.expected[(kind, reason)] += copies
        for value, reason in json_garbage():
            self.send(queue, value, **options)
            self.expected[(kind, reason)] += copies

    def sealed(
        self, queue: str, kind: str, reason: str, message: Any, copies: int = 1, **options: Any
    ) -> None:
        """One sealed message, refused for ``reason`` (or accepted: reason ``""``)."""
        self.send(queue, message, **options)
        if reason:
            self.expected[(kind, reason)] += copies


def queue_names(broker: str) -> list[str]:
    """Every queue bound to the control exchange (Redis) or declared (RabbitMQ)."""
    if broker.startswith("redis"):
        import redis

        members = redis.Redis.from_url(broker).smembers(f"_kombu.binding.{CONTROL}")
        texts = (m.decode() if isinstance(m, bytes) else str(m) for m in members)
        return [text.split("\x06\x16")[-1] for text in texts]
    listed = subprocess.run(
        ["rabbitmqctl", "list_queues", "name", "--quiet", "--no-table-headers"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return listed.stdout.split()


def reply_queues(broker: str, pids: list[int]) -> list[str]:
    """The reply queues of the worker processes ``pids`` (``backfiller.worker.<host>.<pid>.*``)."""
    found = []
    for name in queue_names(broker):
        parts = name.split(".")
        if not name.startswith("backfiller.worker.") or parts[-1] == "leases":
            continue
        if parts[-2].isdigit() and int(parts[-2]) in pids:
            found.append(name)
    return sorted(found)


def refused(port: int) -> Tally:
    """``backfiller_broker_messages_refused_total`` as a metrics port serves it."""
    text = HTTP.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    return Counter({(kind, why): int(float(n)) for kind, why, n in REFUSED.findall(text)})


def since(before: Tally, after: Tally) -> Tally:
    return Counter({k: v - before[k] for k, v in after.items() if v != before[k]})


class MeasuredWorker(CeleryWorker):
    """``backfiller worker`` serving its own /metrics (its pool processes' refusals too)."""

    def __init__(self, broker: str, env: dict[str, str], queues: str, port: int) -> None:
        self.metrics_port = port
        args = ["worker", "--definitions", DEFINITIONS, "--concurrency", "2"]
        args += ["--loglevel", "INFO", "--queues", queues, "--metrics-port", str(port)]
        LiveProcess.__init__(self, args, env={**env, "BACKFILLER_BROKER_URL": broker})


def start_measured(c: Cluster) -> tuple[int, MeasuredWorker]:
    """A daemon and a worker of ``c`` (2 processes), each serving its metrics: the daemon's
    port, and the worker."""
    daemon_port = free_port()
    c.start_daemon("--metrics-port", str(daemon_port))
    worker = MeasuredWorker(c.broker, c.env, c.env["BACKFILLER_CELERY_QUEUE"], free_port())
    c.workers.append(worker)
    return daemon_port, worker


@contextmanager
def lease_tap(broker: str, key: BrokerKey) -> Iterator[Callable[[], Any]]:
    """A queue of the test's own on the lease fanout (what every worker process hears): a
    function that waits for its next message."""
    from kombu import Connection, Consumer, Queue

    heard: list[Any] = []
    with Connection(broker, connect_timeout=5) as conn:
        queue = Queue(
            f"test-tap-{uuid.uuid4().hex[:8]}",
            exchange=lease_exchange(key),
            durable=False,
            auto_delete=True,
        )
        with Consumer(conn.channel(), [queue], on_message=heard.append, no_ack=True):

            def next_message() -> Any:
                deadline = time.monotonic() + 10
                while not heard and time.monotonic() < deadline:
                    with suppress(TimeoutError, OSError):
                        conn.drain_events(timeout=0.2)
                assert heard, "no lease announcement heard"
                return heard.pop(0)

            yield next_message
