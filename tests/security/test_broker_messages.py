"""Whoever can read or write the broker without the shared key: what they can and cannot do.

Real processes (API server, a daemon and a Celery worker of 2 processes, each of the last two
serving its /metrics) on PostgreSQL, with RabbitMQ and with Redis. Forged, unsigned, replayed,
expired, misrouted and malformed messages (pickle, a JSON list, a scalar, missing fields,
wrong types, an unknown kind, too deep, huge) go to every queue of Backfiller (the daemon's,
a worker process's reply queue, the lease fanout, the task queue). Each is refused, logged
once with its queue and counted by reason, nothing is reconnected, and the backfill running
meanwhile completes with exact counts, each partition executed once (the job records its own
executions). A forged ``end`` does not end a running run; a forged task with forged grants
executes nothing; a run's credential cannot be read off the task queue.

Durations on the development machine (2 cores, shared): about 25 s to start each cluster,
then 10 to 20 s a test.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest

from backfiller.launchers.celery.envelope import BrokerKey
from tests.acceptance.celery.support import (
    CeleryWorker,
    Cluster,
    broker_url,
    cluster,
    executions,
    overlaps,
    owner_of,
)
from tests.acceptance.daemon_support import launch, read, wait_for, wait_status
from tests.conftest import _empty_postgres
from tests.security.broker_support import (
    RAW,
    WRONG_KEY,
    Forger,
    MeasuredWorker,
    control_exchange,
    envelope,
    fake_run,
    json_garbage,
    lease_exchange,
    lease_tap,
    plain_end,
    refused,
    reply_queues,
    since,
    start_measured,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]


class Measured:
    """A cluster whose daemon and worker serve their refusal counts."""

    def __init__(self, c: Cluster, daemon_port: int, worker: MeasuredWorker) -> None:
        self.c = c
        self.daemon_port = daemon_port
        self.worker = worker
        self.key = BrokerKey(c.env["BACKFILLER_BROKER_KEY"])
        self.owner = owner_of(c.daemons[0].output_once_it_says("running with", 60))
        self.daemon_queue = f"backfiller.daemon.{self.owner}"
        self.task_queue = c.env["BACKFILLER_CELERY_QUEUE"]

    def counts(self) -> Counter[tuple[str, str]]:
        return refused(self.daemon_port) + refused(self.worker.metrics_port)

    def replies(self) -> list[str]:
        pids = self.worker.pool()

        def both() -> list[str] | None:
            found = reply_queues(self.c.broker, pids)
            return found if len(found) == 2 else None

        return wait_for("a reply queue per pool process", both, timeout=30, every=0.5)


@pytest.fixture(scope="module", params=["rabbitmq", "redis"])
def broker(request: pytest.FixtureRequest, pg_template_url: str | None) -> str:
    if pg_template_url is None:
        pytest.skip("the Celery launcher's tests run on PostgreSQL")
    return broker_url(str(request.param))


@pytest.fixture(scope="module")
def marks(broker: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("marks")


@pytest.fixture(scope="module")
def measured(pg_template_url: str, broker: str, marks: Path) -> Iterator[Measured]:
    _empty_postgres(pg_template_url)
    with cluster(pg_template_url, broker, marks) as c:
        c.start_server()
        daemon_port, worker = start_measured(c)
        worker.wait_ready()
        yield Measured(c, daemon_port, worker)


def test_a_run_s_credential_cannot_be_read_off_the_task_queue(measured: Measured) -> None:
    """Runs of the ``gpu`` queue wait there (no worker takes it yet): their raw messages hold
    no credential, only its encryption, which the shared key opens; a worker then runs them."""
    c = measured.c
    backfill = launch(c.api, "on_gpu", "2001-02-01", "2001-02-03")
    raw = read_back(c.broker, c.env["BACKFILLER_TEST_GPU_QUEUE"], 3)
    assert len(raw) == 3
    for body in raw:
        # Not "bfr" alone: the sealed credential is base64, in which any three letters may
        # appear by chance (about once in a thousand runs); "_" is not in its alphabet.
        assert b"bfr_" not in body.replace(b"\\", b"")
        (sealed,), _, _ = json.loads(body)
        inner = json.loads(sealed["m"])
        revealed = measured.key.reveal(inner["credential"], inner["run"], inner["attempt"])
        assert revealed.startswith("bfr_")  # the credential is there, for the key's holders
        assert revealed.removeprefix("bfr_").encode() not in body  # nor its secret part
    gpu = CeleryWorker(c.broker, c.env, 1, c.env["BACKFILLER_TEST_GPU_QUEUE"])  # that queue only
    try:
        gpu.wait_ready()
        done = wait_status(c.api, backfill, {"COMPLETED_SUCCESS", "COMPLETED_FAILED"}, 90)
    finally:
        gpu.stop()
    assert done["counts"]["succeeded"] == 3


def settled(check: Callable[[], bool], timeout: float = 60) -> None:
    """Wait until ``check`` holds (the assertion after it says what differs)."""
    with suppress(AssertionError):
        wait_for("the counts", check, timeout=timeout, every=0.5)


def read_back(broker: str, name: str, count: int) -> list[bytes]:
    """The raw bodies of the first ``count`` messages of a queue, put back once read (the
    queue appears with the first task the daemon publishes to it)."""
    from kombu import Connection, Queue

    taken: list[Any] = []
    with Connection(broker, connect_timeout=5) as conn:
        deadline = time.monotonic() + 60
        queue = Queue(name, channel=conn.channel())
        while len(taken) < count and time.monotonic() < deadline:
            try:
                message = queue.get(no_ack=False)
            except conn.channel_errors:  # not declared yet (RabbitMQ closes the channel)
                message, queue = None, Queue(name, channel=conn.channel())
            if message is None:
                time.sleep(0.2)
            else:
                taken.append(message)
        raw = [m.body.encode() if isinstance(m.body, str) else bytes(m.body) for m in taken]
        for message in taken:
            message.requeue()  # back, for a worker to take
    return raw


def test_malformed_forged_and_replayed_messages_are_refused_on_every_queue(
    measured: Measured, marks: Path
) -> None:
    c, key = measured.c, measured.key
    before = measured.counts()
    backfill = launch(c.api, "recorded", "2001-03-01", "2001-03-16", runConfig={"seconds": 0.4})
    wait_for("runs executing", lambda: int(read(c.api, backfill)["counts"]["running"]) > 0, 60)
    reply, other_reply = measured.replies()
    with Forger(c.broker, key) as forge, lease_tap(c.broker, key) as heard:
        _to_the_daemon(forge, measured.daemon_queue, key)
        _to_a_worker(forge, reply, other_reply, key)
        _to_the_leases(forge, heard(), key)
        _to_the_task_queue(forge, measured.task_queue, measured.owner, key)
    done = wait_status(c.api, backfill, {"COMPLETED_SUCCESS", "COMPLETED_FAILED"}, timeout=120)
    assert done["counts"]["succeeded"] == 16 == done["counts"]["total"]
    ran = executions(marks)
    keys = [f"2001-03-{day:02d}" for day in range(1, 17)]
    assert all(len(ran[k]) == 1 for k in keys), {k: ran.get(k) for k in keys}
    assert overlaps(marks) == []
    settled(lambda: since(before, measured.counts()) == forge.expected)
    assert dict(since(before, measured.counts())) == dict(forge.expected)
    daemon, worker = c.daemons[0].output(), measured.worker.output()
    assert "reconnecting" not in daemon and "broker link lost" not in worker
    per_queue = Counter(
        re.findall(r"refused (?:a|an) .*? on (\S+) \((\w+) queue\)", daemon + worker)
    )
    assert per_queue[(measured.daemon_queue, "daemon")] == sum(
        n for (kind, _), n in forge.expected.items() if kind == "daemon"
    )
    assert per_queue[(reply, "worker")] == sum(
        n for (kind, _), n in forge.expected.items() if kind == "worker"
    )


def _to_the_daemon(forge: Forger, queue: str, key: BrokerKey) -> None:
    kind, options = "daemon", {"exchange": control_exchange()}
    forge.garbage(queue, kind, **options)
    beat = {"t": "beat", "run": 1, "attempt": 1}
    forge.sealed(queue, kind, "bad_signature", envelope(beat, queue, WRONG_KEY), **options)
    forge.sealed(queue, kind, "expired", envelope(beat, queue, key, age=600), **options)
    forge.sealed(queue, kind, "expired", envelope(beat, queue, key, age=-3600), **options)
    forge.sealed(queue, kind, "misrouted", envelope(beat, "backfiller.daemon.x", key), **options)
    forge.sealed(queue, kind, "unknown_kind", envelope({**beat, "t": "pwn"}, queue, key), **options)
    missing = {"t": "end", "run": 1, "attempt": 1}
    forge.sealed(queue, kind, "malformed", envelope(missing, queue, key), **options)
    wrong = {**beat, "run": "1; DROP TABLE runs"}
    forge.sealed(queue, kind, "malformed", envelope(wrong, queue, key), **options)
    once = envelope(beat, queue, key)  # a heartbeat of a run the daemon does not hold
    forge.sealed(queue, kind, "", once, **options)
    forge.sealed(queue, kind, "replayed", once, **options)


def _to_a_worker(forge: Forger, queue: str, other: str, key: BrokerKey) -> None:
    kind = "worker"
    forge.garbage(queue, kind)
    grant = {"t": "grant", "run": 1, "attempt": 1, "ok": True, "stop_by": time.time() + 30}
    forge.sealed(queue, kind, "bad_signature", envelope(grant, queue, WRONG_KEY))
    forge.sealed(queue, kind, "expired", envelope(grant, queue, key, age=600))
    forge.sealed(queue, kind, "misrouted", envelope(grant, other, key))
    forge.sealed(queue, kind, "malformed", envelope({**grant, "ok": "yes"}, queue, key))
    forge.sealed(queue, kind, "unknown_kind", envelope({**grant, "t": "exec"}, queue, key))
    cancel = envelope({"t": "cancel", "run": 1, "attempt": 1}, queue, key)  # of no run here
    forge.sealed(queue, kind, "", cancel)
    forge.sealed(queue, kind, "replayed", cancel)


def _to_the_leases(forge: Forger, heard: object, key: BrokerKey) -> None:
    """To the fanout: each of the worker's 2 processes refuses its copy."""
    kind, fanout = "lease", lease_exchange(key)
    forge.garbage("", kind, copies=2, exchange=fanout)
    lease = {"t": "lease", "owner": "nobody", "stop_by": time.time() + 5, "drop": []}
    name = fanout.name
    for reason, message in [
        ("expired", envelope(lease, name, key, age=60)),
        ("malformed", envelope({**lease, "drop": "all"}, name, key)),
        ("bad_signature", envelope(lease, name, WRONG_KEY)),
        ("misrouted", envelope(lease, "backfiller.leases", key)),
    ]:
        forge.sealed("", kind, reason, message, copies=2, exchange=fanout)
    # A lease announcement heard on the fanout, published again as it was.
    body = getattr(heard, "body", b"")
    raw = bytes(body) if not isinstance(body, str) else body.encode()
    forge.raw("", raw, "application/json", exchange=fanout)
    forge.expected[(kind, "replayed")] += 2


def _to_the_task_queue(forge: Forger, queue: str, owner: str, key: BrokerKey) -> None:
    kind = "task"
    for body, content_type, reason in RAW:
        forge.task_body(queue, body, content_type)
        forge.expected[(kind, reason)] += 1
    for value, reason in json_garbage():
        forge.task(queue, [value])
        forge.expected[(kind, reason)] += 1
    forge.task_body(queue, b"[1, 2, 3]", "application/json")  # not Celery's protocol 2
    forge.task(queue, [])  # no runs
    forge.send(queue, [[1], {}, {}])  # no task header: Celery rejects it
    forge.task(queue, [], name="celery.nonexistent")  # a task Celery does not know
    forge.expected.update({(kind, "malformed"): 3, (kind, "unknown_kind"): 1})
    run = fake_run(900_001, queue, owner)
    for reason, args in [
        ("bad_signature", [envelope(run, queue, WRONG_KEY)]),
        ("unsigned", [envelope(run, queue, None)]),
        ("expired", [envelope(run, queue, key, age=8 * 24 * 3600)]),
        ("misrouted", [envelope(run, "elsewhere", key)]),
        ("malformed", [envelope({**run, "job": None}, queue, key)]),
        ("unknown_kind", [envelope({**run, "t": "shell"}, queue, key)]),
    ]:
        forge.task(queue, args)
        forge.expected[(kind, reason)] += 1
    once = [envelope(fake_run(900_002, queue, owner), queue, key)]  # refused by its daemon
    forge.task(queue, once)
    forge.task(queue, once)
    forge.expected[(kind, "replayed")] += 1


def test_a_forged_end_does_not_end_a_running_run(measured: Measured, marks: Path) -> None:
    c = measured.c
    backfill = launch(c.api, "sleepy", "2001-04-01", "2001-04-01", runConfig={"seconds": 4})
    wait_for("the run to start", (marks / "pid-2001-04-01-1").exists, timeout=60)
    (run,) = c.runs(backfill)
    run_id = int(run["id"].removeprefix("run_"))
    queue = measured.daemon_queue
    ended = plain_end(run_id, 1)
    with Forger(c.broker, measured.key) as forge:
        for message in (ended, envelope(ended, queue, WRONG_KEY), envelope(ended, queue, None)):
            forge.send(queue, message, exchange=control_exchange())
    time.sleep(2)  # the run still sleeps for 2 s at least
    assert read(c.api, backfill)["status"] == "RUNNING"
    assert [r["status"] for r in c.runs(backfill)] == ["RUNNING"]
    done = wait_status(c.api, backfill, {"COMPLETED_SUCCESS", "COMPLETED_FAILED"}, timeout=60)
    assert done["status"] == "COMPLETED_SUCCESS"
    assert (marks / "done-2001-04-01-1").exists()  # it ran to its end, then it was recorded


def test_a_forged_task_with_forged_grants_executes_nothing(measured: Measured, marks: Path) -> None:
    """A run for a daemon that does not exist, and answers granting it, unsigned or signed
    with another key: no worker runs it."""
    c = measured.c
    before = measured.counts()
    queue, replies = measured.task_queue, measured.replies()
    run = fake_run(900_100, queue, "ghost-daemon")
    grant = {"t": "grant", "run": 900_100, "attempt": 1, "ok": True,
             "stop_by": time.time() + 60, "owner": "ghost-daemon"}  # fmt: skip
    with Forger(c.broker, measured.key) as forge:
        forge.task(queue, [{k: v for k, v in run.items() if k != "t"}])  # as before sealing
        forge.task(queue, [envelope(run, queue, WRONG_KEY)])
        for reply in replies:
            forge.send(reply, grant)
            forge.send(reply, envelope(grant, reply, WRONG_KEY))
    expected = {
        ("task", "unsigned"): 1,
        ("task", "bad_signature"): 1,
        ("worker", "unsigned"): 2,
        ("worker", "bad_signature"): 2,
    }
    settled(lambda: since(before, measured.counts()) == expected)
    assert dict(since(before, measured.counts())) == expected
    time.sleep(1)
    assert not (marks / "1999-12-31").exists()  # the job would have written it
