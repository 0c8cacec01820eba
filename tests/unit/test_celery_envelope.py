"""Sealed messages (``launchers/celery/envelope.py``): what opens, what is refused and why."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backfiller.launchers.celery import broker_key_problem, use_broker_key
from backfiller.launchers.celery import envelope as env
from backfiller.launchers.celery.envelope import BrokerKey, Opener, Refused
from backfiller.observability import redaction

KEY = "k" * 64
RUN = {"run": 7, "attempt": 2, "backfill": 1, "job": "j", "partition": "p", "config": {},
       "tags": {}, "start": None, "end": None, "timeout": None, "owner": "d",
       "credential": "bfr_the-run-s-own-secret"}  # fmt: skip


@pytest.fixture(autouse=True)
def keyed() -> Iterator[None]:
    env.configure(BrokerKey(KEY))
    yield
    env.reset()


def refusal(envelope: Any, **options: Any) -> str:
    with pytest.raises(Refused) as refused:
        Opener().open(envelope, **options)
    return refused.value.reason


def test_a_sealed_message_opens_once_and_its_credential_travels_encrypted() -> None:
    sealed = env.seal(RUN, to="queue", kind="run")
    assert "bfr_" not in json.dumps(sealed)
    opener = Opener()
    body = opener.open(sealed, routed={"queue"})
    assert body["credential"] == "bfr_the-run-s-own-secret" and body["t"] == "run"
    with pytest.raises(Refused, match="replayed"):
        opener.open(sealed, routed={"queue"})
    assert opener.open(sealed, routed={"queue"}, redelivered=True)["run"] == 7


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda e: {**e, "s": "0" * 64}, "bad_signature"),
        (lambda e: {k: v for k, v in e.items() if k != "s"}, "unsigned"),
        (lambda e: json.loads(e["m"]), "unsigned"),  # the message without its envelope
        (lambda e: {**e, "m": e["m"].replace('"attempt":2', '"attempt":3')}, "bad_signature"),
        (lambda e: {**e, "bf": 2}, "malformed"),
        (lambda e: [e], "malformed"),
    ],
)
def test_a_tampered_envelope_is_refused(change: Any, reason: str) -> None:
    assert refusal(change(env.seal(RUN, to="queue", kind="run"))) == reason


def test_a_message_from_another_key_or_without_one_is_refused() -> None:
    sealed = env.seal({"t": "beat", "run": 1, "attempt": 1}, to="q")
    env.configure(BrokerKey("another" * 8))
    assert refusal(sealed) == "bad_signature"
    env.configure(None)  # --insecure-broker: signed messages cannot be checked, so refused
    assert refusal(sealed) == "bad_signature"
    unsigned = env.seal({"t": "beat", "run": 1, "attempt": 1}, to="q")
    assert "s" not in unsigned and Opener().open(unsigned)["run"] == 1
    env.configure(BrokerKey(KEY))
    assert refusal(unsigned) == "unsigned"


def test_age_destination_kind_and_shape_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    beat = env.seal({"t": "beat", "run": 1, "attempt": 1}, to="q")
    assert refusal(beat, routed={"elsewhere"}) == "misrouted"
    later = time.time() + 121  # a heartbeat is good for 120 s
    monkeypatch.setattr(time, "time", lambda: later)
    assert refusal(beat) == "expired"
    monkeypatch.undo()
    assert refusal(env.seal({"t": "rm -rf", "run": 1}, to="q")) == "unknown_kind"
    assert refusal(env.seal({"t": "beat", "run": "1", "attempt": 1}, to="q")) == "malformed"
    assert refusal(env.seal({"t": "end", "run": 1, "attempt": 1}, to="q")) == "malformed"
    lease = {"t": "lease", "owner": "d", "stop_by": 1.0}
    assert refusal(env.seal({**lease, "drop": [[1, "x"]]}, to="q")) == "malformed"
    assert Opener().open(env.seal({**lease, "drop": [[1, 2]]}, to="q"))["drop"] == [[1, 2]]
    ended = {"t": "end", "run": 1, "attempt": 1, "outcome": "SUCCESS", "error": None}
    ended["trace"] = None
    assert refusal(env.seal({**ended, "next": {"t": "start", "run": 2}}, to="q")) == "malformed"


def test_a_credential_is_bound_to_its_run_and_attempt() -> None:
    key = BrokerKey(KEY)
    hidden = key.hide("bfr_x", 7, 2)
    assert key.reveal(hidden, 7, 2) == "bfr_x"
    with pytest.raises(Refused):
        key.reveal(hidden, 7, 3)  # moved to another attempt: it does not decrypt


def test_the_replay_cache_is_bounded() -> None:
    opener = Opener(cache_size=3)
    sealed = [env.seal({"t": "beat", "run": n, "attempt": 1}, to="q") for n in range(5)]
    for one in sealed:
        opener.open(one)
    assert len(opener._seen) <= 3
    opener.open(sealed[0])  # forgotten (the oldest): the attempt's fencing is then what holds


def test_the_key_comes_from_the_environment_or_a_file(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_text(KEY + "\n")
    assert env.key_from(None, str(path)) is not None
    assert env.key_from(None, None) is None
    path.write_text("FILL-IN a long random string")
    for value, file in [("short", None), (None, str(path)), (KEY, str(path))]:
        with pytest.raises(env.KeyProblem):
            env.key_from(value, file)
    with pytest.raises(env.KeyProblem, match="cannot read"):
        env.key_from(None, str(tmp_path / "missing"))
    assert len(env.generate_key()) == 64


def test_a_process_without_a_key_is_told_how_to_make_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(env.KEY_ENV, raising=False)
    monkeypatch.delenv(env.KEY_FILE_ENV, raising=False)
    problem = broker_key_problem(None, insecure=False)
    assert problem is not None and "$BACKFILLER_BROKER_KEY" in problem
    assert "--generate-broker-key" in problem and "--insecure-broker" in problem
    assert broker_key_problem(None, insecure=True) is None
    env.reset()
    with pytest.raises(env.KeyProblem):
        env.seal({"t": "beat", "run": 1, "attempt": 1}, to="q")


def test_the_key_leaves_the_environment_and_the_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once read, the key is not passed on to the processes this one starts (a job's), and
    a log line that would carry it is scrubbed."""
    secret = "s3cret-" + "x" * 40
    monkeypatch.setenv(env.KEY_ENV, secret)
    use_broker_key(None, insecure=False)
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.environ.get('BACKFILLER_BROKER_KEY'))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert child.stdout.strip() == "None"
    assert secret not in redaction.redact(f"the key is {secret}")
    assert env.current() is not None


def test_leases_go_to_the_fanout_of_the_deployment_s_key() -> None:
    assert env.leases_name() == f"backfiller.leases.{BrokerKey(KEY).id}"
    assert BrokerKey(KEY).id != BrokerKey("another" * 8).id
    env.configure(None)
    assert env.leases_name() == "backfiller.leases"
