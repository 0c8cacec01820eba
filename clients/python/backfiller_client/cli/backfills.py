"""Client commands about backfills: launch, preview, list, watch, pause, resume, cancel,
retry (``show`` is in :mod:`backfiller_client.cli.show`). Exit codes: see
:mod:`backfiller_client.cli.remote`."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from backfiller_client import Backfill, Client, Preview
from backfiller_client.cli._output import (
    Output,
    Watcher,
    counts_line,
    progress_text,
    status_text,
)
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
    not_found,
    print_backfill,
    split_list,
    target_text,
    usage,
)
from backfiller_client.requests import (
    AllPartitions,
    AssetSelection,
    BackfillRequest,
    Order,
    PartitionKeys,
    PartitionRange,
    Reprocess,
)


class ReprocessChoice(StrEnum):
    missing = "missing"
    failed_and_missing = "failed_and_missing"
    all = "all"


class OrderChoice(StrEnum):
    oldest_first = "oldest_first"
    newest_first = "newest_first"


REPROCESS: dict[ReprocessChoice, Reprocess] = {
    ReprocessChoice.missing: "MISSING",
    ReprocessChoice.failed_and_missing: "FAILED_AND_MISSING",
    ReprocessChoice.all: "ALL",
}
ORDER: dict[OrderChoice, Order] = {
    OrderChoice.oldest_first: "OLDEST_FIRST",
    OrderChoice.newest_first: "NEWEST_FIRST",
}


class StatusChoice(StrEnum):
    REQUESTED = "REQUESTED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    CANCELING = "CANCELING"
    CANCELED = "CANCELED"
    COMPLETED_SUCCESS = "COMPLETED_SUCCESS"
    COMPLETED_FAILED = "COMPLETED_FAILED"
    FAILED = "FAILED"


QuietOption = Annotated[
    bool,
    typer.Option(
        "--quiet", "-q", help="Print only the new backfill's id (for `bf=$(backfiller ...)`)."
    ),
]
IdArgument = Annotated[str, typer.Argument(help="The backfill's id (bf_...).", show_default=False)]


def parse_tags(values: list[str] | None) -> dict[str, str]:
    tags: dict[str, str] = {}
    for value in values or []:
        key, sep, tag_value = value.partition("=")
        if not sep or not key:
            usage(f"{value!r} is not key=value", "--tag")
        tags[key] = tag_value
    return tags


def parse_config(value: str | None) -> dict[str, Any] | None:
    if value is None:
        return None
    text = value
    if value.startswith("@"):
        try:
            text = Path(value[1:]).read_text()
        except OSError as exc:
            usage(f"cannot read {value[1:]}: {exc.strerror}", "--config")
    try:
        config = json.loads(text)
    except ValueError as exc:
        usage(f"not JSON: {exc}", "--config")
    if not isinstance(config, dict):
        usage("the run config must be a JSON object", "--config")
    return config


def asset_selection(
    job: str | None, assets: str | None, upstream: bool, downstream: bool
) -> AssetSelection | None:
    """The assets to backfill, or None for JOB: exactly one of the two."""
    if assets is None:
        if upstream or downstream:
            usage("--upstream and --downstream go with --assets")
        if job is None:
            usage("name a JOB, or assets with --assets")
        return None
    if job is not None:
        usage("name a JOB or --assets, not both")
    names = split_list(assets)
    if not names:
        usage("name at least one asset", "--assets")
    return AssetSelection(names, upstream=upstream, downstream=downstream)


def backfill_request(
    job: str | None,
    assets: AssetSelection | None,
    start: str | None,
    end: str | None,
    keys: str | None,
    all_: bool,
    reprocess: ReprocessChoice,
    order: OrderChoice,
    max_concurrent: int | None,
    tags: list[str] | None,
    title: str | None,
    description: str | None,
    config: str | None,
    idempotency_key: str | None,
    priority: int | None = None,
) -> BackfillRequest:
    chosen = [start is not None or end is not None, keys is not None, all_]
    if sum(chosen) != 1:
        usage("choose the partitions with exactly one of --from/--to, --keys or --all")
    partitions: PartitionRange | PartitionKeys | AllPartitions
    if keys is not None:
        partitions = PartitionKeys(split_list(keys))
    elif all_:
        partitions = AllPartitions()
    else:
        if start is None or end is None:
            usage("--from and --to go together")
        partitions = PartitionRange(start, end)
    return BackfillRequest(
        job=None if assets is not None else job,
        assets=assets,
        partitions=partitions,
        reprocess=REPROCESS[reprocess],
        order=ORDER[order],
        max_concurrent_runs=max_concurrent,
        run_config=parse_config(config),
        tags=parse_tags(tags),
        title=title,
        description=description,
        idempotency_key=idempotency_key,
        priority=priority,
    )


JobArgument = Annotated[
    str | None,
    typer.Argument(help="The job to backfill (or --assets).", show_default=False),
]
AssetsOption = Annotated[
    str | None,
    typer.Option(
        "--assets",
        help="Backfill these assets instead of a job: names, comma-separated.",
        rich_help_panel="Assets",
    ),
]
UpstreamOption = Annotated[
    bool,
    typer.Option("--upstream", help="Also every asset they depend on.", rich_help_panel="Assets"),
]
DownstreamOption = Annotated[
    bool,
    typer.Option(
        "--downstream", help="Also every asset that depends on them.", rich_help_panel="Assets"
    ),
]
FromOption = Annotated[
    str | None, typer.Option("--from", help="First partition key.", rich_help_panel="Partitions")
]
ToOption = Annotated[
    str | None,
    typer.Option("--to", help="Last partition key (included).", rich_help_panel="Partitions"),
]
KeysOption = Annotated[
    str | None,
    typer.Option("--keys", help="Partition keys, comma-separated.", rich_help_panel="Partitions"),
]
AllOption = Annotated[
    bool,
    typer.Option(
        "--all", help="Every partition of the job (or root assets).", rich_help_panel="Partitions"
    ),
]
ReprocessOption = Annotated[
    ReprocessChoice,
    typer.Option("--reprocess", case_sensitive=False, help="Which partitions run again."),
]
OrderOption = Annotated[
    OrderChoice, typer.Option("--order", case_sensitive=False, help="Launch order.")
]
MaxConcurrentOption = Annotated[
    int | None,
    typer.Option("--max-concurrent", min=1, help="At most this many runs at once."),
]
TagOption = Annotated[
    list[str] | None, typer.Option("--tag", help="A key=value label; repeat for more.")
]
TitleOption = Annotated[str | None, typer.Option("--title", help="A short name.")]
DescriptionOption = Annotated[str | None, typer.Option("--description", help="A longer text.")]
ConfigOption = Annotated[
    str | None,
    typer.Option("--config", help="Run config: a JSON object, or @file holding one."),
]
PriorityOption = Annotated[
    int | None,
    typer.Option(
        "--priority",
        help="Higher is claimed first, with a bigger share of the room (-1000..1000; "
        "default: the job's, 0 unless it names one).",
    ),
]
IdempotencyOption = Annotated[
    str | None,
    typer.Option(
        "--idempotency-key", help="Launching twice with the same key creates one backfill."
    ),
]


# -- commands ---------------------------------------------------------------------------


def print_launched(output: Output, backfill: Backfill, quiet: bool) -> None:
    if quiet and not output.json_mode:
        output.line(backfill.id)
    else:
        print_backfill(output, backfill, verb="launched")


def watch_until_done(client: Client, output: Output, backfill_id: str, interval: float) -> None:
    with Watcher(output) as watcher:
        final = client.wait(backfill_id, on_progress=watcher.update, poll_interval=interval)
    if not output.json_mode:
        output.line(
            f"{final.id} ended {final.status.value}: {progress_text(final.counts)} "
            f"{counts_line(final.counts)}"
        )
    if final.status.value != "COMPLETED_SUCCESS":
        finish(EXIT_REFUSED)


@app.command(rich_help_panel=CLIENT_PANEL)
def launch(
    job: JobArgument = None,
    assets: AssetsOption = None,
    upstream: UpstreamOption = False,
    downstream: DownstreamOption = False,
    start: FromOption = None,
    end: ToOption = None,
    keys: KeysOption = None,
    all_: AllOption = False,
    reprocess: ReprocessOption = ReprocessChoice.missing,
    order: OrderOption = OrderChoice.oldest_first,
    max_concurrent: MaxConcurrentOption = None,
    tag: TagOption = None,
    title: TitleOption = None,
    description: DescriptionOption = None,
    config: ConfigOption = None,
    idempotency_key: IdempotencyOption = None,
    priority: PriorityOption = None,
    wait: Annotated[
        bool, typer.Option("--wait", help="Watch it until it ends; exit 1 unless it succeeds.")
    ] = False,
    interval: Annotated[float, typer.Option(help="Seconds between reads with --wait.")] = 1.0,
    quiet: QuietOption = False,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """Launch a backfill of JOB (or of --assets, in dependency order) over a range, a list of
    keys, or every partition."""
    request = backfill_request(
        job, asset_selection(job, assets, upstream, downstream), start, end, keys, all_,
        reprocess, order, max_concurrent, tag, title, description, config, idempotency_key,
        priority,
    )  # fmt: skip
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        # For people: a launch that will run nothing says why (one preview first).
        told = not quiet and not out.json_mode
        nothing = nothing_to_run(client.preview_backfill(request)) if told else None
        backfill = client.launch_backfill(request)
        print_launched(out, backfill, quiet)
        if nothing is not None:
            out.line(nothing)
        if wait:
            watch_until_done(client, out, backfill.id, interval)


def nothing_to_run(found: Preview) -> str | None:
    """Why a launch runs no partition (``31 skipped: already succeeded; use --reprocess
    all``), or None when it runs some."""
    if found.runs or not found.skipped:
        return None
    reasons = sorted({s.reason.lower().replace("_", " ") for s in found.skipped_partitions})
    why = ", ".join(reasons) or "nothing to do"
    return f"{found.skipped} skipped: {why}; use --reprocess all to run them again"


@app.command(rich_help_panel=CLIENT_PANEL)
def preview(
    job: JobArgument = None,
    assets: AssetsOption = None,
    upstream: UpstreamOption = False,
    downstream: DownstreamOption = False,
    start: FromOption = None,
    end: ToOption = None,
    keys: KeysOption = None,
    all_: AllOption = False,
    reprocess: ReprocessOption = ReprocessChoice.missing,
    order: OrderOption = OrderChoice.oldest_first,
    max_concurrent: MaxConcurrentOption = None,
    tag: TagOption = None,
    title: TitleOption = None,
    description: DescriptionOption = None,
    config: ConfigOption = None,
    idempotency_key: IdempotencyOption = None,
    priority: PriorityOption = None,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """What launching would do (how many runs, what is skipped and why, per asset for
    --assets). Writes nothing."""
    request = backfill_request(
        job, asset_selection(job, assets, upstream, downstream), start, end, keys, all_,
        reprocess, order, max_concurrent, tag, title, description, config, idempotency_key,
        priority,
    )  # fmt: skip
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        found = client.preview_backfill(request)
    if out.json_mode:
        out.json(found)
        return
    print_preview(out, found)


def print_preview(out: Output, found: Preview) -> None:
    target = found.job if found.assets is None else "assets"
    out.line(f"{target}: {found.runs} runs of {found.total} partitions, {found.skipped} skipped")
    if found.assets:
        out.table(
            ["LEVEL", "ASSET", "RUNS", "PARTITIONS", "SKIPPED"],
            (
                [str(a.level), a.name, str(a.runs), str(a.total), str(a.skipped)]
                for a in found.assets
            ),
        )
    if found.first_partitions:
        more = "…" if found.runs > len(found.first_partitions) else ""
        out.line(f"first: {', '.join(found.first_partitions)}{more}")
    for skipped in found.skipped_partitions:
        out.line(f"skip {skipped.key}: {skipped.reason}")
    if found.waiting:
        out.line(waiting_line(found))


def waiting_line(found: Preview) -> str:
    """Which partitions would wait for another backfill's run, and for which run."""
    shown = ", ".join(
        f"{w.key} ({w.run_id} of {w.backfill_id}, {w.run_status})" for w in found.waiting_partitions
    )
    more = ", …" if found.waiting > len(found.waiting_partitions) else ""
    return f"{found.waiting} would wait for runs of other backfills: {shown}{more}"


TIME_FORMATS = ["%Y-%m-%d", "%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S%z"]


@app.command("list", rich_help_panel=CLIENT_PANEL)
def list_(  # long: one parameter per option of the command
    status: Annotated[
        list[StatusChoice] | None,
        typer.Option("--status", case_sensitive=False, help="Only these statuses; repeat."),
    ] = None,
    job: Annotated[str | None, typer.Option(help="Only backfills of this job.")] = None,
    tag: Annotated[
        list[str] | None, typer.Option(help="Only backfills with this key=value; repeat for all.")
    ] = None,
    asset: Annotated[str | None, typer.Option(help="Only backfills of this asset.")] = None,
    creator: Annotated[
        str | None, typer.Option(help="Only backfills created by this name.")
    ] = None,
    team: Annotated[str | None, typer.Option(help="Only backfills launched for this team.")] = None,
    search: Annotated[
        str | None, typer.Option(help="Only backfills whose title has this text (any case).")
    ] = None,
    created_after: Annotated[
        datetime | None,
        typer.Option(
            formats=TIME_FORMATS, help="Created at or after this time (local if no zone)."
        ),
    ] = None,
    created_before: Annotated[
        datetime | None,
        typer.Option(formats=TIME_FORMATS, help="Created before this time (local if no zone)."),
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="At most this many, newest first.")] = 20,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """Backfills of every job, newest first."""
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        found = list(
            itertools.islice(
                client.list_backfills(
                    statuses=[s.value for s in status] if status else None,
                    job=job,
                    page_size=min(limit, 100),
                    asset=asset,
                    creator=creator,
                    team=team,
                    tags=parse_tags(tag) if tag else None,
                    search=search,
                    created_after=created_after.astimezone() if created_after else None,
                    created_before=created_before.astimezone() if created_before else None,
                ),
                limit,
            )
        )
    if out.json_mode:
        out.json(found)
        return
    out.table(
        ["ID", "TARGET", "STATUS", "PROGRESS", "CREATED", "TITLE"],
        (
            [
                b.id,
                target_text(b),
                status_text(b.status.value),
                progress_text(b.counts),
                b.created_at.astimezone().strftime("%Y-%m-%d %H:%M"),
                b.title or "",
            ]
            for b in found
        ),
    )


@app.command(rich_help_panel=CLIENT_PANEL)
def watch(
    backfill_id: IdArgument,
    interval: Annotated[float, typer.Option(min=0.05, help="Seconds between reads.")] = 1.0,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """Show a backfill's progress until it ends (a live bar on a terminal, plain lines
    otherwise). Exits 1 unless it ends COMPLETED_SUCCESS."""
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        if client.get_backfill(backfill_id) is None:
            not_found(out, backfill_id)
        watch_until_done(client, out, backfill_id, interval)


# One of Client.pause, Client.resume, Client.cancel.
SteerAction = Callable[[Client, str], Backfill]


def steer(
    action: SteerAction, backfill_id: str, url: str, token: str | None, output: OutputFormat
) -> None:
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        print_backfill(out, action(client, backfill_id))


@app.command(rich_help_panel=CLIENT_PANEL)
def pause(
    backfill_id: IdArgument,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """Stop launching new runs; runs in flight finish."""
    steer(Client.pause, backfill_id, url, token, output)


@app.command(rich_help_panel=CLIENT_PANEL)
def resume(
    backfill_id: IdArgument,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """Continue a paused backfill."""
    steer(Client.resume, backfill_id, url, token, output)


@app.command(rich_help_panel=CLIENT_PANEL)
def cancel(
    backfill_id: IdArgument,
    wait: Annotated[
        bool, typer.Option("--wait", help="Wait until the runs in flight have stopped.")
    ] = False,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """Stop launching runs and stop the runs in flight."""
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        backfill = client.cancel(backfill_id)
        if wait:
            backfill = client.wait(backfill_id)
        print_backfill(out, backfill)


@app.command(rich_help_panel=CLIENT_PANEL)
def update(
    backfill_id: IdArgument,
    max_concurrent_runs: Annotated[
        int | None,
        typer.Option(
            "--max-concurrent-runs",
            "--max-concurrent",
            min=1,
            help="At most this many runs at once; a lower limit holds from the daemon's next "
            "claim (runs in flight finish).",
        ),
    ] = None,
    no_limit: Annotated[
        bool, typer.Option("--no-limit", help="Remove its own limit on concurrent runs.")
    ] = False,
    priority: Annotated[int | None, typer.Option("--priority", help="Its new priority.")] = None,
    title: TitleOption = None,
    description: DescriptionOption = None,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """Change a running or paused backfill: its concurrency, priority, title or description."""
    if no_limit and max_concurrent_runs is not None:
        usage("--no-limit and --max-concurrent-runs exclude each other")
    changes: dict[str, Any] = {
        name: value
        for name, value in (
            ("max_concurrent_runs", max_concurrent_runs),
            ("priority", priority),
            ("title", title),
            ("description", description),
        )
        if value is not None
    }
    if no_limit:
        changes["max_concurrent_runs"] = None
    if not changes:
        usage("name something to change: --max-concurrent-runs, --priority, --title ...")
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        print_backfill(out, client.update(backfill_id, **changes), verb="updated")


RETRY_CHOICES = {"failed": "FAILED", "canceled": "CANCELED", "not-run": "NOT_RUN"}


@app.command(rich_help_panel=CLIENT_PANEL)
def retry(
    backfill_id: IdArgument,
    include: Annotated[
        str,
        typer.Option(help="Which partitions run again, comma-separated: failed,canceled,not-run."),
    ] = "failed",
    idempotency_key: IdempotencyOption = None,
    quiet: QuietOption = False,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """Launch partitions of a finished backfill again, as a new backfill (its child)."""
    chosen: list[Any] = []
    for item in split_list(include):
        wanted = RETRY_CHOICES.get(item.lower().replace("_", "-"))
        if wanted is None:
            usage(f"{item!r} is not one of {', '.join(RETRY_CHOICES)}", "--include")
        chosen.append(wanted)
    if not chosen:
        usage("choose at least one of failed, canceled, not-run", "--include")
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        backfill = client.retry(backfill_id, include=chosen, idempotency_key=idempotency_key)
        print_launched(out, backfill, quiet)
