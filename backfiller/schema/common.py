"""Shared public types: scalars, errors, pages, tags."""

from __future__ import annotations

import enum

import strawberry
from strawberry.scalars import JSON

__all__ = ["JSON", "Node", "PageInfo", "Tag", "TagInput", "UserError", "UserErrorCode"]


@strawberry.enum(description="Why a request was refused. Every code is stable in v1.")
class UserErrorCode(enum.Enum):
    JOB_NOT_FOUND = strawberry.enum_value(
        "JOB_NOT_FOUND", description="No job of that name is defined."
    )
    ASSET_NOT_FOUND = strawberry.enum_value(
        "ASSET_NOT_FOUND", description="No asset of that name is defined."
    )
    PARTITION_NOT_FOUND = strawberry.enum_value(
        "PARTITION_NOT_FOUND",
        description="A well-formed partition key that is not a partition of the job.",
    )
    INVALID_PARTITION_RANGE = strawberry.enum_value(
        "INVALID_PARTITION_RANGE",
        description="A malformed partition key, or a range whose end is before its start.",
    )
    EMPTY_SELECTION = strawberry.enum_value(
        "EMPTY_SELECTION", description="The selection names no partition at all."
    )
    INVALID_RUN_CONFIG = strawberry.enum_value(
        "INVALID_RUN_CONFIG",
        description="`runConfig` does not match the job's config schema; `field` points at it.",
    )
    INVALID_ARGUMENT = strawberry.enum_value(
        "INVALID_ARGUMENT",
        description="An argument is out of its allowed range or shape (too long, negative, ...).",
    )
    IDEMPOTENCY_KEY_REUSED = strawberry.enum_value(
        "IDEMPOTENCY_KEY_REUSED",
        description="The idempotency key was used before with a different input.",
    )
    BACKFILL_NOT_FOUND = strawberry.enum_value(
        "BACKFILL_NOT_FOUND", description="No backfill has that id."
    )
    INVALID_STATE = strawberry.enum_value(
        "INVALID_STATE",
        description="The backfill's status does not allow this (e.g. pausing a finished one).",
    )
    RANGE_TOO_LARGE = strawberry.enum_value(
        "RANGE_TOO_LARGE",
        description="The selection has more partitions than this server allows per backfill.",
    )
    RATE_LIMITED = strawberry.enum_value(
        "RATE_LIMITED", description="Too many requests of this kind; try again later."
    )
    UNAUTHENTICATED = strawberry.enum_value(
        "UNAUTHENTICATED", description="No valid token was presented."
    )
    FORBIDDEN = strawberry.enum_value(
        "FORBIDDEN", description="The token's role does not allow this operation."
    )
    TRIGGER_NOT_FOUND = strawberry.enum_value(
        "TRIGGER_NOT_FOUND", description="No trigger of that name is defined."
    )
    NOT_FOUND = strawberry.enum_value(
        "NOT_FOUND", description="The object named by the input does not exist."
    )
    PARTITIONS_RUNNING = strawberry.enum_value(
        "PARTITIONS_RUNNING",
        description=(
            "A partition of the request is being run now by a backfill (a QUEUED or RUNNING "
            "run); the payload lists them."
        ),
    )


@strawberry.type(description="An expected failure, returned as data next to the result.")
class UserError:
    field: list[str] | None = strawberry.field(
        description="Path of the input field at fault, from the input's root; null for the "
        "input as a whole."
    )
    message: str = strawberry.field(description="A sentence for a person.")
    code: UserErrorCode = strawberry.field(description="A stable code for a program.")


@strawberry.type
class Tag:
    key: str
    value: str


@strawberry.input
class TagInput:
    key: str
    value: str


@strawberry.interface(description="An object with a globally unique, opaque id.")
class Node:
    id: strawberry.ID


@strawberry.type(description="Relay page information.")
class PageInfo:
    has_next_page: bool
    has_previous_page: bool
    start_cursor: str | None
    end_cursor: str | None
