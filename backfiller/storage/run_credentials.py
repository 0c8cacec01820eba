"""Credentials of runs: what a run's ``context.client`` sends instead of the daemon's token.

A run credential is ``bfr_<claims>.<signature>``: the claims (run, backfill, the token that
launched the backfill, a role, an expiry) in URL-safe base64 JSON, signed with HMAC-SHA256 by a
256-bit key kept in the database (``signing_keys``), which the daemon and every API process
share. Nothing is written per run. The server checks, on every use, the signature, the expiry,
that the run is still queued or running and its backfill neither canceled (nor being canceled)
nor ended, and that the launching token is still valid; the run then has that token's job
scopes and at most its role, capped at operator.

The rights a run gets, from the backfill's ``creator``:

- the name of an active token (or a run of one: ``"<name> (run run_12 of bf_3)"``): that
  token's role, capped at operator, and its job scopes;
- none (launched without authentication), a run of none (``"run run_12 of bf_3"``) or a
  trigger (``trigger:<name>``, evaluated by an operator or the daemon): operator;
- anything else (a token since revoked or expired): viewer.
"""

from __future__ import annotations

import base64
import hmac
import json
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from backfiller.domain import ACTIVE_RUN_STATES, TERMINAL_BACKFILL_STATES, BackfillState
from backfiller.domain.roles import Role
from backfiller.storage.auth import TokenRepository
from backfiller.storage.auth_records import SigningKeyRecord
from backfiller.storage.engine import Database
from backfiller.storage.records import BackfillRecord, RunRecord

RUN_CREDENTIAL_PREFIX = "bfr_"
PURPOSE = "run-credentials"
DEFAULT_LIFETIME = timedelta(hours=24)
GRACE = timedelta(hours=1)
_keys: dict[str, bytes] = {}
_RUN_SUFFIX = re.compile(r"^(?:(?P<name>.*) \()?run run_\d+ of bf_\d+\)?$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class RunClaims:
    """What a run credential says about its bearer."""

    run_id: int
    backfill_id: int
    launched_by: str | None
    parent_token_id: int | None
    role: Role
    expires_at: datetime


def is_run_credential(secret: str) -> bool:
    return secret.startswith(RUN_CREDENTIAL_PREFIX)


async def signing_key(database: Database) -> bytes:
    """The key that signs run credentials: created once, on first use, and cached."""
    found = _keys.get(database.url)
    if found is not None:
        return found
    for _ in range(2):
        async with database.read() as session:
            record = await session.get(SigningKeyRecord, PURPOSE)
        if record is not None:
            key = bytes.fromhex(record.secret)
            _keys[database.url] = key
            return key
        try:
            async with database.write() as session:
                session.add(
                    SigningKeyRecord(
                        purpose=PURPOSE,
                        secret=secrets.token_hex(32),
                        created_at=datetime.now(UTC),
                    )
                )
        except IntegrityError:
            continue  # another process created it first: read theirs
    raise RuntimeError("could not create the key that signs run credentials")


def forget_signing_keys() -> None:
    """Drop the cached keys (for a database whose tables were emptied, as tests do)."""
    _keys.clear()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


_COMPACT = json.JSONEncoder(separators=(",", ":"))
"""Made once: ``json.dumps`` with separators of its own makes an encoder at every call."""


def sign(key: bytes, claims: RunClaims) -> str:
    """The credential of ``claims``; every run gets one (``hmac.digest``: one C call)."""
    body = _COMPACT.encode(
        {
            "r": claims.run_id,
            "b": claims.backfill_id,
            "n": claims.launched_by,
            "p": claims.parent_token_id,
            "o": claims.role.value,
            "e": int(claims.expires_at.timestamp()),
        }
    ).encode()
    payload = _b64(body)
    mac = hmac.digest(key, payload.encode("ascii"), "sha256")
    return f"{RUN_CREDENTIAL_PREFIX}{payload}.{_b64(mac)}"


def verify(key: bytes, credential: str) -> RunClaims | None:
    """The claims of a credential signed with ``key``; None when forged or malformed."""
    if not is_run_credential(credential) or len(credential) > 1000:
        return None
    payload, _, mac = credential[len(RUN_CREDENTIAL_PREFIX) :].partition(".")
    try:
        expected = hmac.digest(key, payload.encode("ascii"), "sha256")
        if not hmac.compare_digest(expected, _unb64(mac)):
            return None
        raw = json.loads(_unb64(payload))
        return RunClaims(
            run_id=int(raw["r"]),
            backfill_id=int(raw["b"]),
            launched_by=raw["n"] if isinstance(raw["n"], str) else None,
            parent_token_id=int(raw["p"]) if raw["p"] is not None else None,
            role=Role(raw["o"]),
            expires_at=datetime.fromtimestamp(int(raw["e"]), UTC),
        )
    except (ValueError, KeyError, TypeError, UnicodeError):
        return None


def launcher_of(creator: str | None) -> str | None:
    """The token behind a creator: a run's creator names it, or none (``run run_1 of bf_2``)."""
    if creator is None:
        return None
    found = _RUN_SUFFIX.match(creator)
    if found is None:
        return creator
    return found.group("name")


async def mint_run_credentials(
    database: Database,
    backfill_id: int,
    creator: str | None,
    run_ids: Iterable[int],
    now: datetime,
    timeout_seconds: float | None = None,
    rights: Rights | None = None,
) -> dict[int, str]:
    """A credential for each run of one backfill (one read of the creator's token, no write
    but the first key's). Lives as long as the run may (its timeout, else a day) plus an hour."""
    ids = list(run_ids)
    if not ids:
        return {}
    key = await signing_key(database)
    creator = launcher_of(creator)
    parent_id, role = await _rights_of(database, creator, now, rights)
    lifetime = (
        timedelta(seconds=timeout_seconds) if timeout_seconds is not None else DEFAULT_LIFETIME
    )
    expires = now + lifetime + GRACE
    return {
        run_id: sign(key, RunClaims(run_id, backfill_id, creator, parent_id, role, expires))
        for run_id in ids
    }


Rights = dict[str, tuple[int | None, Role]]
"""The rights of each creator read in one claim round (``mint_run_credentials``' ``rights``)."""


async def _rights_of(
    database: Database, creator: str | None, now: datetime, rights: Rights | None
) -> tuple[int | None, Role]:
    """The parent token's id and the role a run of ``creator`` gets (read once per round when
    the caller keeps ``rights``: a claim of many backfills of one creator reads its token once)."""
    if creator is None:
        return None, Role.OPERATOR
    if rights is not None and creator in rights:
        return rights[creator]
    parent_id: int | None = None
    role = Role.OPERATOR
    async with database.read() as session:
        parent = await TokenRepository(session).active_by_name(creator)
    if parent is not None and (parent.expires_at is None or parent.expires_at > now):
        parent_id = parent.id
        role = parent.role if parent.role is Role.VIEWER else Role.OPERATOR
    elif not creator.startswith("trigger:"):
        role = Role.VIEWER
    if rights is not None:
        rights[creator] = (parent_id, role)
    return parent_id, role


ENDED_BACKFILL_STATES = frozenset({BackfillState.CANCELING, *TERMINAL_BACKFILL_STATES})
"""A run's credential stops working as soon as its backfill is in one of these: canceled (or
being canceled), completed or failed, whatever its run's own status says yet."""


async def run_is_active(database: Database, run_id: int, backfill_id: int) -> bool:
    """Whether the run is queued or running, of ``backfill_id``, and that backfill neither
    canceled (nor being canceled) nor ended."""
    async with database.read() as session:
        found = (
            await session.execute(
                select(RunRecord.status, BackfillRecord.status)
                .join(BackfillRecord, BackfillRecord.id == RunRecord.backfill_id)
                .where(RunRecord.id == run_id, RunRecord.backfill_id == backfill_id)
            )
        ).first()
    if found is None:
        return False
    run_status, backfill_status = found
    return run_status in ACTIVE_RUN_STATES and backfill_status not in ENDED_BACKFILL_STATES
