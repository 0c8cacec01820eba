"""Opaque public ids and cursors. Their shape is ours to change; clients must not parse them.

The one module that knows the prefixes (``bf_``, ``run_``, ``tev_``, ...): every layer that
shows an id to a user (resolvers, launchers, the trigger service, the CLI) formats it here.
"""

from __future__ import annotations

import base64
import binascii

BACKFILL_PREFIX = "bf_"
RUN_PREFIX = "run_"
EVALUATION_PREFIX = "tev_"
TOKEN_PREFIX = "tok_"
AUDIT_PREFIX = "audit_"
MARK_PREFIX = "mark_"

MAX_ID_LENGTH = 64


def backfill_id(pk: int) -> str:
    return f"{BACKFILL_PREFIX}{pk}"


def run_id(pk: int) -> str:
    return f"{RUN_PREFIX}{pk}"


def evaluation_id(pk: int) -> str:
    """The public id of a trigger evaluation."""
    return f"{EVALUATION_PREFIX}{pk}"


def token_id(pk: int) -> str:
    """The public id of an API token (not its secret)."""
    return f"{TOKEN_PREFIX}{pk}"


def audit_id(pk: int) -> str:
    """The public id of an entry of the audit log."""
    return f"{AUDIT_PREFIX}{pk}"


def mark_id(pk: int) -> str:
    """A partition mark's public id (``markPartitions``)."""
    return f"{MARK_PREFIX}{pk}"


def parse_mark_id(value: str) -> int | None:
    return parse_id(value, MARK_PREFIX)


def parse_id(value: str, prefix: str) -> int | None:
    """The primary key behind a public id of the given prefix, or None if it is not one."""
    if len(value) > MAX_ID_LENGTH or not value.startswith(prefix):
        return None
    digits = value[len(prefix) :]
    if not digits.isascii() or not digits.isdigit() or len(digits) > 18:
        return None
    pk = int(digits)
    return pk if pk > 0 else None


def parse_backfill_id(value: str) -> int | None:
    return parse_id(value, BACKFILL_PREFIX)


def parse_run_id(value: str) -> int | None:
    return parse_id(value, RUN_PREFIX)


def parse_evaluation_id(value: str) -> int | None:
    return parse_id(value, EVALUATION_PREFIX)


def parse_token_id(value: str) -> int | None:
    return parse_id(value, TOKEN_PREFIX)


def encode_cursor(kind: str, value: int) -> str:
    return base64.urlsafe_b64encode(f"{kind}:{value}".encode()).decode().rstrip("=")


def decode_cursor(kind: str, cursor: str | None) -> int | None:
    """The integer inside a cursor of ``kind``; raises ValueError on a foreign or bad cursor."""
    if cursor is None:
        return None
    if len(cursor) > 100:
        raise ValueError("invalid cursor")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise ValueError("invalid cursor") from None
    found_kind, _, number = raw.partition(":")
    if found_kind != kind or not number.lstrip("-").isdigit() or len(number) > 19:
        raise ValueError("invalid cursor")
    return int(number)
