"""Sealed messages between daemons and workers: signed, timestamped, addressed, and the run's
credential encrypted.

Every message Backfiller puts on the broker (a run's task arguments, everything on the control
exchange, the lease announcements) travels as an envelope::

    {"bf": 1, "m": "<the message, as JSON text>", "s": "<HMAC-SHA256 of that text, hex>"}

The message inside names its kind (``t``), its run and attempt where it has them, when it was
sealed (``ts``, POSIX seconds) and where it was sent (``to``: the queue, or the lease
exchange). The signature covers all of it, with a key derived (HKDF-SHA256) from the key that
daemons and workers share (``$BACKFILLER_BROKER_KEY``, or a file: see :func:`key_from`). A run's
credential (its bearer token for the API) is encrypted inside the message (AES-256-GCM, with
another derived key, bound to the run and attempt), so that reading the broker does not give it.

An :class:`Opener` (one per consumer) opens an envelope only if it is signed with the shared
key, not older than its kind allows (:mod:`.shapes`) nor from the future, addressed to where it
was delivered, not a replay of one it opened recently (a bounded cache of signatures; a copy
the broker itself marks redelivered is let through: the fencing by attempt deals with it), and
of a known kind and shape; otherwise it raises :class:`Refused` with a reason (the label of the
``backfiller_broker_messages_refused_total`` metric).

Without a key (``--insecure-broker``, for local experiments only) messages are sealed unsigned
and the credential travels in clear; such a process refuses signed messages, as a process with
a key refuses unsigned ones.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from backfiller.launchers.celery.protocol import LEASE_EXCHANGE
from backfiller.launchers.celery.shapes import KINDS, Kind, shape_problem
from backfiller.observability import redaction

KEY_ENV = "BACKFILLER_BROKER_KEY"
KEY_FILE_ENV = "BACKFILLER_BROKER_KEY_FILE"
VERSION = 1
MIN_KEY_CHARS = 32
FUTURE_SECONDS = 60.0
"""A message sealed this far ahead of this process's clock is refused (clocks must agree)."""
REPLAY_CACHE_SIZE = 32_768
"""Signatures an :class:`Opener` remembers, at most (each until its message expires; about
2 MB when full)."""
GENERATE_HINT = (
    "`backfiller worker --generate-broker-key`, or "
    "`python -c 'import secrets; print(secrets.token_hex(32))'`"
)
MISSING_KEY = (
    f"the Celery launcher signs the messages between daemons and workers with a key they all "
    f"share: set ${KEY_ENV} (or --broker-key-file, ${KEY_FILE_ENV}) to the same secret on "
    f"every daemon and worker; make one with {GENERATE_HINT}. For a local experiment only, "
    "--insecure-broker sends messages unsigned"
)


class KeyProblem(ValueError):
    """The shared key is missing or unusable (the message says why, and what to do)."""


class Refused(Exception):
    """A message that is not opened, and why (``reason``: a metric label; ``detail``: words)."""

    def __init__(self, reason: str, detail: str, kind: str | None = None) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
        self.kind = kind


class BrokerKey:
    """The keys derived from the shared secret: one signs, the other encrypts credentials."""

    def __init__(self, secret: str) -> None:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF

        def derive(purpose: bytes) -> bytes:
            hkdf = HKDF(hashes.SHA256(), 32, salt=b"backfiller-broker", info=purpose)
            return hkdf.derive(secret.encode())

        self._mac = derive(b"message signature v1")
        self._aead = AESGCM(derive(b"run credential v1"))
        self.id = derive(b"key id v1")[:6].hex()
        """A public name of the key (it tells nothing of it): what the lease exchange of
        the deployment that shares it is named after."""

    def sign(self, text: str) -> str:
        return hmac.digest(self._mac, text.encode(), "sha256").hex()

    def verify(self, text: str, signature: str) -> bool:
        return hmac.compare_digest(self.sign(text), signature)

    def hide(self, secret: str, run: Any, attempt: Any) -> dict[str, str]:
        nonce = os.urandom(12)
        sealed = self._aead.encrypt(nonce, secret.encode(), _bound_to(run, attempt))
        return {"sealed": base64.b64encode(nonce + sealed).decode()}

    def reveal(self, hidden: Any, run: Any, attempt: Any) -> str:
        from cryptography.exceptions import InvalidTag

        try:
            raw = base64.b64decode(str(hidden["sealed"]), validate=True)
            return self._aead.decrypt(raw[:12], raw[12:], _bound_to(run, attempt)).decode()
        except (KeyError, TypeError, ValueError, InvalidTag):
            raise Refused("malformed", "its credential does not decrypt", "run") from None


def _bound_to(run: Any, attempt: Any) -> bytes:
    return f"backfiller run {run} attempt {attempt}".encode()


def generate_key() -> str:
    """A new shared key: 256 random bits, in hex."""
    return secrets.token_hex(32)


def key_problem(text: str, where: str) -> str | None:
    """What is wrong with ``text`` as the shared key (None: nothing)."""
    if text.startswith("FILL-IN"):
        return f"{where} is still a placeholder: put a key made with {GENERATE_HINT} there"
    if len(text) < MIN_KEY_CHARS:
        return (
            f"{where} is too short ({len(text)} characters, at least {MIN_KEY_CHARS}): "
            f"make one with {GENERATE_HINT}"
        )
    return None


def key_from(value: str | None, file: str | None) -> BrokerKey | None:
    """The shared key: ``value`` (``$BACKFILLER_BROKER_KEY``), else the first line of ``file``;
    None when neither is given. Raises :class:`KeyProblem`."""
    if value and file:
        raise KeyProblem(f"give ${KEY_ENV} or a key file, not both")
    where = f"${KEY_ENV}"
    if file:
        where = f"the key file {file}"
        try:
            value = Path(file).read_text().strip()
        except OSError as exc:
            raise KeyProblem(f"cannot read {where}: {exc.strerror or exc}") from None
    if not value:
        if file:
            raise KeyProblem(f"{where} is empty: put a key made with {GENERATE_HINT} there")
        return None
    value = value.strip()
    problem = key_problem(value, where)
    if problem is not None:
        raise KeyProblem(problem)
    redaction.remember_secret_value(value)  # never in a log line
    return BrokerKey(value)


class _Process:
    """This process's key, once set (:func:`configure`) or read from the environment."""

    lock = threading.Lock()
    configured = False
    key: BrokerKey | None = None


def configure(key: BrokerKey | None) -> None:
    """Use ``key`` for every message of this process (None: unsigned, ``--insecure-broker``).
    Processes forked from this one (a Celery worker's pool) keep it."""
    with _Process.lock:
        _Process.key, _Process.configured = key, True


def reset() -> None:
    """Forget the configured key: the next message reads it from the environment again."""
    with _Process.lock:
        _Process.key, _Process.configured = None, False


def current() -> BrokerKey | None:
    """This process's key: the configured one, else the environment's. Raises
    :class:`KeyProblem` when there is none and none was configured."""
    if _Process.configured:  # without the lock: set once, before any thread or fork needs it
        return _Process.key
    with _Process.lock:
        if not _Process.configured:
            key = key_from(os.environ.get(KEY_ENV), os.environ.get(KEY_FILE_ENV))
            if key is None:
                raise KeyProblem(MISSING_KEY)
            _Process.key, _Process.configured = key, True
        return _Process.key


def leases_name() -> str:
    """The lease fanout of this process's deployment: ``backfiller.leases.<key id>`` (plain
    ``backfiller.leases`` without a key). Deployments sharing a broker, each with its own key,
    then never hear each other's announcements (which they would refuse)."""
    key = current()
    return LEASE_EXCHANGE if key is None else f"{LEASE_EXCHANGE}.{key.id}"


def seal(body: Mapping[str, Any], to: str, kind: str | None = None) -> dict[str, Any]:
    """The envelope of ``body`` (a message of :mod:`.protocol`), sent to ``to`` (a queue name,
    or the lease exchange's); ``kind`` sets its ``t`` (the task's arguments have none)."""
    key = current()
    inner = dict(body)
    if kind is not None:
        inner["t"] = kind
    inner["ts"], inner["to"] = time.time(), to
    credential = inner.get("credential")
    if key is not None and isinstance(credential, str):
        inner["credential"] = key.hide(credential, inner.get("run"), inner.get("attempt"))
    text = json.dumps(inner, separators=(",", ":"))
    envelope: dict[str, Any] = {"bf": VERSION, "m": text}
    if key is not None:
        envelope["s"] = key.sign(text)
    return envelope


class Opener:
    """Opens the envelopes one consumer receives, and remembers their signatures."""

    def __init__(self, cache_size: int = REPLAY_CACHE_SIZE) -> None:
        self.cache_size = cache_size
        self._seen: OrderedDict[bytes, float] = OrderedDict()
        """Signature (or digest, unsigned), its first 128 bits -> until when its message is
        good."""
        self._lock = threading.Lock()

    def open(
        self,
        envelope: Any,
        *,
        routed: Iterable[str] | None = None,
        redelivered: bool = False,
        replay: bool = True,
    ) -> dict[str, Any]:
        """The message inside ``envelope``, checked (see the module's docstring); raises
        :class:`Refused`. ``routed``: where the broker says it came through (its routing key
        and exchange; None: unknown); ``replay``: whether to check for (and remember) a
        replay."""
        text, signature = _verified(envelope)
        body, kind = _parsed(text)
        named = str(body["t"])
        sealed_at = body.get("ts")
        if not isinstance(sealed_at, int | float) or isinstance(sealed_at, bool):
            raise Refused("malformed", "no timestamp", named)
        now = time.time()
        if now - sealed_at > kind.max_age:
            raise Refused("expired", f"sealed {now - sealed_at:.0f} s ago", named)
        if sealed_at - now > FUTURE_SECONDS:
            raise Refused("expired", f"sealed {sealed_at - now:.0f} s ahead of this clock", named)
        places = set(routed or ())
        if places and body.get("to") not in places:
            raise Refused("misrouted", f"sent to {str(body.get('to'))[:200]!r}", named)
        hidden = body.get("credential")
        if isinstance(hidden, dict):
            key = current()
            if key is None:
                raise Refused("malformed", "its credential is encrypted", named)
            body["credential"] = key.reveal(hidden, body.get("run"), body.get("attempt"))
        problem = shape_problem(kind, body)
        if problem is not None:
            raise Refused("malformed", problem, named)
        if replay:
            digest = signature or hashlib.sha256(text.encode()).hexdigest()
            self._remember(bytes.fromhex(digest[:32]), sealed_at + kind.max_age, redelivered, named)
        return body

    def _remember(self, fingerprint: bytes, until: float, redelivered: bool, kind: str) -> None:
        now = time.time()
        with self._lock:
            seen = self._seen
            while seen:
                oldest, expires = next(iter(seen.items()))
                if expires > now and len(seen) < self.cache_size:
                    break
                del seen[oldest]
            if fingerprint in seen and not redelivered:
                raise Refused("replayed", "a copy of a message already received", kind)
            seen[fingerprint] = until
            seen.move_to_end(fingerprint)


def _parsed(text: str) -> tuple[dict[str, Any], Kind]:
    """The message of an envelope, and its kind."""
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        raise Refused("malformed", "its message is not JSON") from None
    if not isinstance(body, dict):
        raise Refused("malformed", f"its message is a JSON {type(body).__name__}")
    name = body.get("t")
    kind = KINDS.get(name) if isinstance(name, str) else None
    if kind is None:
        raise Refused("unknown_kind", f"unknown kind {str(name)[:40]!r}")
    return body, kind


def _verified(envelope: Any) -> tuple[str, str | None]:
    """The text of ``envelope`` and its signature, once checked against this process's key."""
    if not isinstance(envelope, dict):
        raise Refused("malformed", f"a JSON {type(envelope).__name__}, not an envelope")
    if "bf" not in envelope:
        raise Refused("unsigned", "not an envelope (a plain message)")
    text, signature = envelope.get("m"), envelope.get("s")
    if envelope.get("bf") != VERSION or not isinstance(text, str):
        raise Refused("malformed", "an envelope of another version or shape")
    key = current()
    if key is None:
        if signature is not None:
            raise Refused("bad_signature", "signed, and this process has no key")
        return text, None
    if signature is None:
        raise Refused("unsigned", "no signature")
    if not isinstance(signature, str) or not key.verify(text, signature):
        raise Refused("bad_signature", "its signature is not the shared key's")
    return text, signature
