"""Client commands about triggers: list them, show one, and evaluate one now."""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import typer

from backfiller_client.cli._output import Output
from backfiller_client.cli.app import app
from backfiller_client.cli.remote import (
    CLIENT_PANEL,
    DEFAULT_URL,
    EXIT_REFUSED,
    OutputFormat,
    OutputOption,
    TokenOption,
    UrlOption,
    connect,
    finish,
    plain_selection,
    refused,
)
from backfiller_client.errors import UserErrorDetail
from backfiller_client.types import Trigger

trigger_app = typer.Typer(help="List, show and evaluate triggers.", no_args_is_help=True)
app.add_typer(trigger_app, name="trigger", rich_help_panel=CLIENT_PANEL)


@trigger_app.command("list")
def trigger_list(
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """The triggers the server defines, with their last evaluation."""
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        found = client.triggers()
    if out.json_mode:
        out.json(found)
        return
    out.table(
        ["TRIGGER", "ENABLED", "SCHEDULE", "NEXT", "LAST", "OUTCOME", "DESCRIPTION"],
        (
            [
                t.name,
                "yes" if t.enabled else "no",
                schedule_of(t),
                _local(t.next_evaluation_at),
                _local(t.last_evaluation.evaluated_at if t.last_evaluation else None),
                t.last_evaluation.outcome.value if t.last_evaluation else "",
                t.description or "",
            ]
            for t in found
        ),
    )


def schedule_of(found: Trigger) -> str:
    """How the daemon evaluates a trigger: ``cron 0 3 * * * (Europe/Berlin)``, ``every 60s``
    or ``on demand``."""
    if found.cron:
        catch_up = found.catch_up.value.lower() if found.catch_up else "latest"
        return f"cron {found.cron} ({found.timezone or 'UTC'}, catch-up {catch_up})"
    if found.interval_seconds:
        return f"every {found.interval_seconds:g}s"
    return "on demand"


def _local(at: datetime | None) -> str:
    return at.astimezone().strftime("%Y-%m-%d %H:%M:%S") if at is not None else ""


@trigger_app.command("show")
def trigger_show(
    name: Annotated[str, typer.Argument(help="The trigger's name.")],
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """A trigger: its schedule, its next fire times (in its zone) and its last evaluation."""
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        found = client.trigger(name)
    if found is None:
        refused(
            out, [UserErrorDetail("TRIGGER_NOT_FOUND", ("name",), f"no trigger named {name!r}")]
        )
    if out.json_mode:
        out.json(found)
        return
    out.line(f"{found.name}: {schedule_of(found)}{'' if found.enabled else ' (disabled)'}")
    if found.description:
        out.line(found.description)
    zone = _zone(found.timezone)
    for at in found.next_fire_times:
        out.line(f"next: {at.astimezone(zone).isoformat()}")
    last = found.last_evaluation
    if last is not None:
        tick = f" for {last.scheduled_at.astimezone(zone).isoformat()}" if last.scheduled_at else ""
        out.line(f"last: {last.outcome.value}{tick} at {_local(last.evaluated_at)}")


def _zone(name: str | None) -> tzinfo | None:
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


@trigger_app.command("evaluate")
def trigger_evaluate(
    name: Annotated[str, typer.Argument(help="The trigger's name.")],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Preview its requests; launch nothing.")
    ] = False,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """Evaluate a trigger now and launch what it returns. Exits 1 if the trigger failed."""
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        evaluation = client.evaluate_trigger(name, dry_run=dry_run)
    failed = evaluation.outcome.value == "FAILED"
    if out.json_mode:
        out.json(evaluation)
    else:
        dry = " (dry run)" if evaluation.dry_run else ""
        out.line(
            f"{evaluation.trigger}: {evaluation.outcome.value}{dry} "
            f"in {evaluation.duration_seconds:.2f}s"
        )
        if evaluation.skip_reason:
            out.line(f"skipped: {evaluation.skip_reason}")
        if evaluation.error_message:
            out.error(evaluation.error_message)
        for result in evaluation.requests:
            target = f"{result.request.job} {plain_selection(result.request.partitions)}"
            if result.backfill_id:
                out.line(f"launched {result.backfill_id}: {target}")
            elif result.preview is not None:
                out.line(
                    f"would launch {target}: {result.preview.runs} runs of {result.preview.total}"
                )
            for e in result.errors:
                out.error(f"{target}: {e}")
    if failed:
        finish(EXIT_REFUSED)
