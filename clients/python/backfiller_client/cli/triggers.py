"""Client commands about triggers: list them, and evaluate one now."""

from __future__ import annotations

from typing import Annotated

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
)

trigger_app = typer.Typer(help="List and evaluate triggers.", no_args_is_help=True)
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
        ["TRIGGER", "ENABLED", "EVERY", "LAST", "OUTCOME", "DESCRIPTION"],
        (
            [
                t.name,
                "yes" if t.enabled else "no",
                f"{t.interval_seconds:g}s" if t.interval_seconds else "on demand",
                t.last_evaluation.evaluated_at.astimezone().strftime("%Y-%m-%d %H:%M:%S")
                if t.last_evaluation
                else "",
                t.last_evaluation.outcome.value if t.last_evaluation else "",
                t.description or "",
            ]
            for t in found
        ),
    )


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
