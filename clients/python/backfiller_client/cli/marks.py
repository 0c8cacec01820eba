"""Client commands about partitions marked by hand: ``mark`` and ``marks``. Exit codes: see
:mod:`backfiller_client.cli.remote` (a mark refused, e.g. PARTITIONS_RUNNING, exits 1)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from backfiller_client._calls import MarkStatus
from backfiller_client.cli._output import Output
from backfiller_client.cli.app import app
from backfiller_client.cli.backfills import (
    AllOption,
    AssetsOption,
    DownstreamOption,
    FromOption,
    JobArgument,
    KeysOption,
    OrderChoice,
    ReprocessChoice,
    ToOption,
    UpstreamOption,
    asset_selection,
    backfill_request,
)
from backfiller_client.cli.remote import (
    CLIENT_PANEL,
    DEFAULT_URL,
    OutputFormat,
    OutputOption,
    TokenOption,
    UrlOption,
    connect,
    usage,
)


class MarkChoice(StrEnum):
    succeeded = "succeeded"
    skipped = "skipped"


@app.command(rich_help_panel=CLIENT_PANEL)
def mark(
    job: JobArgument = None,
    assets: AssetsOption = None,
    upstream: UpstreamOption = False,
    downstream: DownstreamOption = False,
    start: FromOption = None,
    end: ToOption = None,
    keys: KeysOption = None,
    all_: AllOption = False,
    status: Annotated[
        MarkChoice,
        typer.Option("--status", case_sensitive=False, help="What the partitions become."),
    ] = MarkChoice.succeeded,
    reason: Annotated[
        str | None, typer.Option("--reason", help="Why (required; kept in the audit log).")
    ] = None,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """Record partitions of JOB (or of --assets) as succeeded or skipped without running
    them. A marked success counts as a success (a `missing` backfill skips it); a partition
    that a backfill runs now is refused, and then nothing is marked."""
    if reason is None or not reason.strip():
        usage("say why with --reason", "--reason")
    selection = asset_selection(job, assets, upstream, downstream)
    request = backfill_request(
        job, selection, start, end, keys, all_, ReprocessChoice.all, OrderChoice.oldest_first,
        None, None, None, None, None, None,
    )  # fmt: skip
    out = Output(output is OutputFormat.json)
    chosen: MarkStatus = "SUCCEEDED" if status is MarkChoice.succeeded else "SKIPPED"
    with connect(url, token, out) as client:
        marked = client.mark_partitions(
            request.job,
            partitions=request.partitions,
            status=chosen,
            reason=reason,
            assets=request.assets,
        )
    target = job if selection is None else ", ".join(selection.names)
    if out.json_mode:
        out.json({"target": target, "status": chosen, "marked": marked})
    else:
        out.line(f"marked {marked} partitions of {target} {status.value}")


@app.command(rich_help_panel=CLIENT_PANEL)
def marks(
    job: Annotated[str, typer.Argument(help="The job (or asset).")],
    key: Annotated[str | None, typer.Option("--key", help="Of this partition only.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=100, help="At most this many.")] = 20,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """The partitions of JOB marked by hand, newest first: when, what, by whom and why."""
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        found = client.partition_marks(job, key, limit)
    if out.json_mode:
        out.json(
            [
                {
                    "id": m.id,
                    "job": m.job,
                    "partition_key": m.partition_key,
                    "status": m.status.value,
                    "reason": m.reason,
                    "actor": m.actor,
                    "marked_at": m.marked_at.isoformat(),
                }
                for m in found
            ]
        )
        return
    if not found:
        out.line(f"no partition of {job} was marked")
    for m in found:
        out.line(
            f"{m.marked_at:%Y-%m-%d %H:%M:%S}  {m.partition_key}  {m.status.value}  "
            f"{m.actor or '-'}  {m.reason}"
        )
