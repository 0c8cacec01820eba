"""Client command ``show``: one backfill, its counts (per asset for an asset backfill), a strip
of its partitions' statuses, and its recent events and runs."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

import typer
from rich.text import Text

from backfiller_client import (
    Backfill,
    BackfillAsset,
    BackfillEvent,
    Client,
    PartitionStatus,
    PartitionStatusRange,
    Run,
)
from backfiller_client.cli._output import (
    Output,
    counts_line,
    legend,
    progress_text,
    status_text,
    strip_text,
)
from backfiller_client.cli.app import app
from backfiller_client.cli.backfills import IdArgument
from backfiller_client.cli.remote import (
    CLIENT_PANEL,
    DEFAULT_URL,
    OutputFormat,
    OutputOption,
    TokenOption,
    UrlOption,
    connect,
    not_found,
    plain_selection,
)


@dataclass(frozen=True, slots=True)
class Shown:
    """Everything ``show`` prints, read in one connection."""

    backfill: Backfill
    ranges: list[PartitionStatusRange]
    assets: list[BackfillAsset]
    events: list[BackfillEvent]
    runs: list[Run]


def read_shown(client: Client, out: Output, backfill_id: str, runs: int, events: int) -> Shown:
    backfill = client.get_backfill(backfill_id)
    if backfill is None:
        not_found(out, backfill_id)
    assets = client.backfill_assets(backfill_id) if backfill.assets is not None else []
    return Shown(
        backfill=backfill,
        ranges=client.partition_status_ranges(backfill_id),
        assets=assets,
        events=list(
            itertools.islice(
                client.events(backfill_id, newest_first=True, page_size=max(events, 1)), events
            )
        ),
        runs=list(itertools.islice(client.runs(backfill_id, page_size=max(runs, 1)), runs)),
    )


def print_header(out: Output, backfill: Backfill) -> None:
    """Id, title, status, target, selection, tags, lineage and times."""
    if backfill.assets is None:
        target = f"job      {backfill.job}"
    else:
        target = f"assets   {', '.join(backfill.covered_assets)}"
    out.line(
        Text.assemble(
            f"{backfill.id}  {backfill.title or ''}\n",
            "status   ",
            status_text(backfill.status.value),
            f"\n{target}",
        )
    )
    out.line(
        f"select   {plain_selection(backfill.partitions)}  "
        f"reprocess={backfill.reprocess} order={backfill.order}"
    )
    if backfill.tags:
        out.line("tags     " + " ".join(f"{k}={v}" for k, v in backfill.tags.items()))
    if backfill.parent_id:
        out.line(f"parent   {backfill.parent_id}")
    if backfill.error:
        out.line(f"error    {backfill.error}")
    out.line(
        f"created  {backfill.created_at.isoformat()}"
        + (f" by {backfill.creator}" if backfill.creator else "")
    )
    if backfill.ended_at:
        out.line(f"ended    {backfill.ended_at.isoformat()}")


def print_progress(out: Output, shown: Shown) -> None:
    """The counts and the strip of the whole backfill, then of each asset."""
    colour = out.is_terminal
    counts = shown.backfill.counts
    out.line(f"progress {progress_text(counts)}  {counts_line(counts)}")
    out.line(Text.assemble("strip    ", strip_text(shown.ranges, colour)))
    out.line(Text.assemble("         ", legend(colour)))
    if not shown.assets:
        return
    out.line("assets:")
    out.table(
        ["LEVEL", "ASSET", "PROGRESS", "COUNTS", "STRIP"],
        (
            [
                str(a.level),
                a.name,
                progress_text(a.counts),
                counts_line(a.counts),
                asset_strip(a, colour),
            ]
            for a in shown.assets
        ),
    )


def asset_strip(asset: BackfillAsset, colour: bool) -> Text:
    """The asset's strip; its partitions not planned yet (no range) show as pending."""
    ranges = list(asset.partition_status_ranges)
    planned = sum(r.count for r in ranges)
    if planned < asset.counts.total:
        ranges.append(
            PartitionStatusRange(
                PartitionStatus.PENDING, "", "", planned, asset.counts.total - planned
            )
        )
    return strip_text(ranges, colour)


def print_events(out: Output, events: Sequence[BackfillEvent]) -> None:
    if not events:
        return
    out.line("recent events:")
    for event in events:
        out.line(
            f"  {event.at.astimezone().strftime('%H:%M:%S')}  {event.kind:<16}"
            + (f" {event.message}" if event.message else "")
            + (f"  ({event.actor})" if event.actor else "")
        )


def print_runs(out: Output, runs: Sequence[Run], assets: bool) -> None:
    if not runs:
        return
    out.line("recent runs:")
    out.table(
        ["RUN", *(["ASSET"] if assets else []), "PARTITION", "ATTEMPT", "STATUS", "ENDED", "ERROR"],
        (
            [
                r.id,
                *([r.asset or ""] if assets else []),
                r.partition_key,
                str(r.attempt),
                r.status.value,
                r.ended_at.astimezone().strftime("%H:%M:%S") if r.ended_at else "",
                r.error_message or "",
            ]
            for r in runs
        ),
    )


@app.command(rich_help_panel=CLIENT_PANEL)
def show(
    backfill_id: IdArgument,
    runs: Annotated[int, typer.Option(min=0, help="How many recent runs to list.")] = 10,
    events: Annotated[int, typer.Option(min=0, help="How many recent events to list.")] = 5,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """A backfill: its counts (per asset too), a strip of its partitions' statuses, recent
    events and runs."""
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        shown = read_shown(client, out, backfill_id, runs, events)
    if out.json_mode:
        out.json(
            {
                "backfill": shown.backfill,
                "partition_status_ranges": shown.ranges,
                "assets": shown.assets,
                "recent_events": shown.events,
                "recent_runs": shown.runs,
            }
        )
        return
    print_header(out, shown.backfill)
    print_progress(out, shown)
    print_events(out, shown.events)
    print_runs(out, shown.runs, assets=shown.backfill.assets is not None)
