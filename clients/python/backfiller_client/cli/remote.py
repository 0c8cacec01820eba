"""What every client command shares: talk to a running server through the public API only.

Every command goes through :class:`backfiller_client.Client` (never the database), takes
``--url`` (``BACKFILLER_URL``), ``--token`` (``BACKFILLER_TOKEN``) and ``--output json``, and
exits with:

- 0: done;
- 1: the server refused the request (``userErrors``: each code and message is printed), or,
  for ``watch``/``launch --wait``, the backfill ended without succeeding, or, for
  ``trigger evaluate``, the trigger failed;
- 2: a usage error (bad option or argument);
- 3: the server cannot be reached, or refused the token (missing, bad, or whose role is too
  low: ``UNAUTHENTICATED``/``FORBIDDEN``), or did not answer usably.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from enum import StrEnum
from typing import Annotated, Any, NoReturn

import typer
from rich.text import Text

from backfiller_client import (
    Backfill,
    BackfillerAuthError,
    BackfillerConnectionError,
    BackfillerError,
    BackfillerUserError,
    Client,
    UserErrorDetail,
)
from backfiller_client.cli._output import Output, progress_text, status_text
from backfiller_client.requests import AllPartitions, PartitionKeys, PartitionRange

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
DEFAULT_URL = "http://127.0.0.1:8000"
# userErrors that say the token is missing, bad or too weak: exit 3 like any refused token.
AUTH_CODES = frozenset({"UNAUTHENTICATED", "FORBIDDEN"})
CLIENT_PANEL = "Client (talks to a server)"


class OutputFormat(StrEnum):
    text = "text"
    json = "json"


UrlOption = Annotated[
    str,
    typer.Option(
        "--url", envvar="BACKFILLER_URL", help="The server.", rich_help_panel="Connection"
    ),
]
TokenOption = Annotated[
    str | None,
    typer.Option(
        "--token",
        envvar="BACKFILLER_TOKEN",
        help="API token (sent as a Bearer token). Prefer $BACKFILLER_TOKEN or --token-file "
        "PATH: a command line is visible to other users and kept in the shell's history.",
        rich_help_panel="Connection",
    ),
]
OutputOption = Annotated[
    OutputFormat,
    typer.Option("--output", "-o", help="text for people, json for scripts."),
]


def finish(code: int) -> NoReturn:
    raise typer.Exit(code)


@contextlib.contextmanager
def connect(url: str, token: str | None, output: Output) -> Iterator[Client]:
    """A client, and the translation of its errors into messages and exit codes."""
    try:
        with Client(url, token=token or None) as client:
            yield client
    except BackfillerUserError as exc:
        if AUTH_CODES.intersection(exc.codes):
            unreachable(output, "auth", f"the server refused the token: {exc}")
        refused(output, exc.errors)
    except BackfillerAuthError as exc:
        unreachable(output, "auth", f"the server refused the token: {exc}")
    except BackfillerConnectionError as exc:
        unreachable(
            output, "connection", f"cannot reach the server at {url}: {exc.__cause__ or exc}"
        )
    except BackfillerError as exc:
        unreachable(output, "api", f"the server did not answer usably: {exc}")


def refused(
    output: Output, errors: tuple[UserErrorDetail, ...] | list[UserErrorDetail]
) -> NoReturn:
    if output.json_mode:
        output.json(
            {
                "userErrors": [
                    {"code": e.code, "field": e.field, "message": e.message} for e in errors
                ]
            }
        )
    for e in errors:
        where = f" ({'.'.join(e.field)})" if e.field else ""
        output.error(f"{e.code}{where}: {e.message}")
    finish(EXIT_REFUSED)


def unreachable(output: Output, kind: str, message: str) -> NoReturn:
    if output.json_mode:
        output.json({"error": {"kind": kind, "message": message}})
    output.error(message)
    finish(EXIT_UNREACHABLE)


def not_found(output: Output, backfill_id: str) -> NoReturn:
    refused(
        output,
        [UserErrorDetail("BACKFILL_NOT_FOUND", ("id",), f"no backfill has id {backfill_id!r}")],
    )


def usage(message: str, param: str | None = None) -> NoReturn:
    raise typer.BadParameter(message, param_hint=param)


def split_list(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def print_backfill(output: Output, backfill: Backfill, verb: str | None = None) -> None:
    if output.json_mode:
        output.json(backfill)
        return
    line = f"{backfill.id} " if verb is None else f"{verb} {backfill.id}: "
    output.line(
        Text.assemble(
            line,
            status_text(backfill.status.value),
            f" {target_text(backfill)} {progress_text(backfill.counts)}",
        )
    )


def target_text(backfill: Backfill) -> str:
    """The job's name, or the asset selection as asked (``a,b +upstream``)."""
    if backfill.assets is None:
        return backfill.job or ""
    text = ",".join(backfill.assets.names)
    if backfill.assets.upstream:
        text += " +upstream"
    if backfill.assets.downstream:
        text += " +downstream"
    return text


def plain_selection(selection: Any) -> str:
    match selection:
        case PartitionRange(start=start, end=end):
            return f"{start} .. {end}"
        case PartitionKeys(keys=keys):
            shown = ", ".join(keys[:5])
            return f"keys {shown}" + (f" … ({len(keys)} keys)" if len(keys) > 5 else "")
        case AllPartitions():
            return "all partitions"
    return str(selection)
