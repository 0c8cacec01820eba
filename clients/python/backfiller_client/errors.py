"""Exceptions of the client.

Two families, so a caller can tell "the server said no" from "we could not talk":

- :class:`BackfillerUserError`: the server answered and refused the request with
  ``userErrors`` (unknown job, bad partition key, invalid state, ...). Each error carries its
  stable ``code``, the ``field`` path at fault and a ``message`` for a person.
- :class:`BackfillerTransportError` and its subclasses: no usable answer. The server could
  not be reached (:class:`BackfillerConnectionError`), or answered with an HTTP error, a body
  that is not JSON, or top-level GraphQL errors (:class:`BackfillerAPIError`); a 401 or 403
  is a :class:`BackfillerAuthError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class UserErrorDetail:
    """One expected failure reported by the server.

    Attributes:
        code: A stable code such as ``JOB_NOT_FOUND`` (see ``UserErrorCode`` in the schema).
        field: Path of the input field at fault, or None for the input as a whole.
        message: A sentence for a person.
    """

    code: str
    field: tuple[str, ...] | None
    message: str

    def __str__(self) -> str:
        where = ".".join(self.field) if self.field else "input"
        return f"{self.code} at {where}: {self.message}"


class BackfillerError(Exception):
    """Base class of every exception the client raises."""


class BackfillerUserError(BackfillerError):
    """The server refused the request; ``errors`` says why, one entry per problem."""

    def __init__(self, operation: str, errors: Sequence[UserErrorDetail]) -> None:
        self.operation = operation
        self.errors: tuple[UserErrorDetail, ...] = tuple(errors)
        super().__init__("; ".join(str(e) for e in self.errors) or "the server refused the request")

    @property
    def codes(self) -> tuple[str, ...]:
        """The codes of the errors, in order."""
        return tuple(e.code for e in self.errors)


class BackfillerTransportError(BackfillerError):
    """No usable answer from the server."""


class BackfillerConnectionError(BackfillerTransportError):
    """The server could not be reached, or did not answer in time."""


class BackfillerAPIError(BackfillerTransportError):
    """The server answered, but not with a usable GraphQL result.

    Attributes:
        status_code: The HTTP status, when there was a response.
        messages: The top-level GraphQL error messages, if any.
        codes: Their ``extensions.code`` values (``INTERNAL_ERROR``, ...), when given.
        request_id: The server's id of the request (``X-Request-ID``), to find it in its logs.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        messages: Sequence[str] = (),
        codes: Sequence[str] = (),
        request_id: str | None = None,
    ) -> None:
        self.status_code = status_code
        self.messages: tuple[str, ...] = tuple(messages)
        self.codes: tuple[str, ...] = tuple(codes)
        self.request_id = request_id
        suffix = f" (request {request_id})" if request_id else ""
        super().__init__(f"{message}{suffix}")


class BackfillerAuthError(BackfillerAPIError):
    """The server refused the credentials (HTTP 401 or 403, or an auth error code)."""


__all__ = [
    "BackfillerAPIError",
    "BackfillerAuthError",
    "BackfillerConnectionError",
    "BackfillerError",
    "BackfillerTransportError",
    "BackfillerUserError",
    "UserErrorDetail",
]
