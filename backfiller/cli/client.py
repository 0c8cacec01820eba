"""Client commands: talk to a running server through the public API only.

Every command goes through :class:`backfiller.client.Client` (never the database), takes
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
import itertools
import json
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.text import Text

from backfiller.cli._output import (
    Output,
    Watcher,
    counts_line,
    legend,
    progress_text,
    status_text,
    strip_text,
)
from backfiller.cli.app import app
from backfiller.client import (
    Backfill,
    BackfillerAuthError,
    BackfillerConnectionError,
    BackfillerError,
    BackfillerUserError,
    Client,
    UserErrorDetail,
)
from backfiller.definitions.requests import (
    AllPartitions,
    BackfillRequest,
    PartitionKeys,
    PartitionRange,
)

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
DEFAULT_URL = "http://127.0.0.1:8000"
# userErrors that say the token is missing, bad or too weak: exit 3 like any refused token.
AUTH_CODES = frozenset({"UNAUTHENTICATED", "FORBIDDEN"})


class OutputFormat(StrEnum):
    text = "text"
    json = "json"


class ReprocessChoice(StrEnum):
    MISSING = "MISSING"
    FAILED_AND_MISSING = "FAILED_AND_MISSING"
    ALL = "ALL"


class OrderChoice(StrEnum):
    OLDEST_FIRST = "OLDEST_FIRST"
    NEWEST_FIRST = "NEWEST_FIRST"


class StatusChoice(StrEnum):
    REQUESTED = "REQUESTED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    CANCELING = "CANCELING"
    CANCELED = "CANCELED"
    COMPLETED_SUCCESS = "COMPLETED_SUCCESS"
    COMPLETED_FAILED = "COMPLETED_FAILED"
    FAILED = "FAILED"


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
        help="API token (sent as a Bearer token).",
        rich_help_panel="Connection",
    ),
]
OutputOption = Annotated[
    OutputFormat,
    typer.Option("--output", "-o", help="text for people, json for scripts."),
]
IdArgument = Annotated[str, typer.Argument(help="The backfill's id (bf_...).", show_default=False)]

partitions_app = typer.Typer(help="Add or delete keys of dynamic partitions.", no_args_is_help=True)
trigger_app = typer.Typer(help="List and evaluate triggers.", no_args_is_help=True)
CLIENT_PANEL = "Client (talks to a server)"
app.add_typer(partitions_app, name="partitions", rich_help_panel=CLIENT_PANEL)
app.add_typer(trigger_app, name="trigger", rich_help_panel=CLIENT_PANEL)


# -- running a command -----------------------------------------------------------------------


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
        unreachable(output, "connection", f"cannot reach the server at {url}: {exc}")
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


# -- arguments -------------------------------------------------------------------------------


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


def split_list(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def backfill_request(
    job: str,
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
        job=job,
        partitions=partitions,
        reprocess=reprocess.value,
        order=order.value,
        max_concurrent_runs=max_concurrent,
        run_config=parse_config(config),
        tags=parse_tags(tags),
        title=title,
        description=description,
        idempotency_key=idempotency_key,
    )


JobArgument = Annotated[str, typer.Argument(help="The job to backfill.", show_default=False)]
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
    bool, typer.Option("--all", help="Every partition of the job.", rich_help_panel="Partitions")
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
IdempotencyOption = Annotated[
    str | None,
    typer.Option(
        "--idempotency-key", help="Launching twice with the same key creates one backfill."
    ),
]


# -- backfills -------------------------------------------------------------------------------


def print_backfill(output: Output, backfill: Backfill, verb: str | None = None) -> None:
    if output.json_mode:
        output.json(backfill)
        return
    line = f"{backfill.id} " if verb is None else f"{verb} {backfill.id}: "
    output.line(
        Text.assemble(
            line,
            status_text(backfill.status.value),
            f" {backfill.job or ''} {progress_text(backfill.counts)}",
        )
    )


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
    job: JobArgument,
    start: FromOption = None,
    end: ToOption = None,
    keys: KeysOption = None,
    all_: AllOption = False,
    reprocess: ReprocessOption = ReprocessChoice.MISSING,
    order: OrderOption = OrderChoice.OLDEST_FIRST,
    max_concurrent: MaxConcurrentOption = None,
    tag: TagOption = None,
    title: TitleOption = None,
    description: DescriptionOption = None,
    config: ConfigOption = None,
    idempotency_key: IdempotencyOption = None,
    wait: Annotated[
        bool, typer.Option("--wait", help="Watch it until it ends; exit 1 unless it succeeds.")
    ] = False,
    interval: Annotated[float, typer.Option(help="Seconds between reads with --wait.")] = 1.0,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """Launch a backfill of JOB over a range, a list of keys, or every partition."""
    request = backfill_request(
        job, start, end, keys, all_, reprocess, order, max_concurrent, tag, title,
        description, config, idempotency_key,
    )  # fmt: skip
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        backfill = client.launch_backfill(request)
        print_backfill(out, backfill, verb="launched")
        if wait:
            watch_until_done(client, out, backfill.id, interval)


@app.command(rich_help_panel=CLIENT_PANEL)
def preview(
    job: JobArgument,
    start: FromOption = None,
    end: ToOption = None,
    keys: KeysOption = None,
    all_: AllOption = False,
    reprocess: ReprocessOption = ReprocessChoice.MISSING,
    order: OrderOption = OrderChoice.OLDEST_FIRST,
    max_concurrent: MaxConcurrentOption = None,
    tag: TagOption = None,
    title: TitleOption = None,
    description: DescriptionOption = None,
    config: ConfigOption = None,
    idempotency_key: IdempotencyOption = None,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """What launching would do (how many runs, what is skipped and why). Writes nothing."""
    request = backfill_request(
        job, start, end, keys, all_, reprocess, order, max_concurrent, tag, title,
        description, config, idempotency_key,
    )  # fmt: skip
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        found = client.preview_backfill(request)
    if out.json_mode:
        out.json(found)
        return
    out.line(f"{found.job}: {found.runs} runs of {found.total} partitions, {found.skipped} skipped")
    if found.first_partitions:
        more = "…" if found.runs > len(found.first_partitions) else ""
        out.line(f"first: {', '.join(found.first_partitions)}{more}")
    for skipped in found.skipped_partitions:
        out.line(f"skip {skipped.key}: {skipped.reason}")


@app.command("list", rich_help_panel=CLIENT_PANEL)
def list_(
    status: Annotated[
        list[StatusChoice] | None,
        typer.Option("--status", case_sensitive=False, help="Only these statuses; repeat."),
    ] = None,
    job: Annotated[str | None, typer.Option(help="Only backfills of this job.")] = None,
    tag: Annotated[str | None, typer.Option(help="Only backfills with this key=value.")] = None,
    limit: Annotated[int, typer.Option(min=1, help="At most this many, newest first.")] = 20,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """Backfills of every job, newest first."""
    wanted_tag = None
    if tag is not None:
        wanted_tag = next(iter(parse_tags([tag]).items()))
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        found = list(
            itertools.islice(
                client.list_backfills(
                    statuses=[s.value for s in status] if status else None,
                    job=job,
                    tag=wanted_tag,
                    page_size=min(limit, 100),
                ),
                limit,
            )
        )
    if out.json_mode:
        out.json(found)
        return
    out.table(
        ["ID", "JOB", "STATUS", "PROGRESS", "CREATED", "TITLE"],
        (
            [
                b.id,
                b.job or "",
                status_text(b.status.value),
                progress_text(b.counts),
                b.created_at.astimezone().strftime("%Y-%m-%d %H:%M"),
                b.title or "",
            ]
            for b in found
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
    """A backfill: its counts, a strip of its partitions' statuses, recent events and runs."""
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        backfill = client.get_backfill(backfill_id)
        if backfill is None:
            not_found(out, backfill_id)
        ranges = client.partition_status_ranges(backfill_id)
        recent = list(itertools.islice(client.runs(backfill_id, page_size=max(runs, 1)), runs))
        happened = list(
            itertools.islice(
                client.events(backfill_id, newest_first=True, page_size=max(events, 1)), events
            )
        )
    if out.json_mode:
        out.json(
            {
                "backfill": backfill,
                "partition_status_ranges": ranges,
                "recent_events": happened,
                "recent_runs": recent,
            }
        )
        return
    colour = out.is_terminal
    out.line(
        Text.assemble(
            f"{backfill.id}  {backfill.title or ''}\n",
            "status   ",
            status_text(backfill.status.value),
            f"\njob      {backfill.job}",
        )
    )
    selection = backfill.partitions
    out.line(
        f"select   {plain_selection(selection)}  "
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
    out.line(f"progress {progress_text(backfill.counts)}  {counts_line(backfill.counts)}")
    out.line(Text.assemble("strip    ", strip_text(ranges, colour)))
    out.line(Text.assemble("         ", legend(colour)))
    if happened:
        out.line("recent events:")
        for event in happened:
            out.line(
                f"  {event.at.astimezone().strftime('%H:%M:%S')}  {event.kind:<16}"
                + (f" {event.message}" if event.message else "")
                + (f"  ({event.actor})" if event.actor else "")
            )
    if recent:
        out.line("recent runs:")
        out.table(
            ["RUN", "PARTITION", "ATTEMPT", "STATUS", "ENDED", "ERROR"],
            (
                [
                    r.id,
                    r.partition_key,
                    str(r.attempt),
                    r.status.value,
                    r.ended_at.astimezone().strftime("%H:%M:%S") if r.ended_at else "",
                    r.error_message or "",
                ]
                for r in recent
            ),
        )


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


def steer(verb: str, backfill_id: str, url: str, token: str | None, output: OutputFormat) -> None:
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        backfill = getattr(client, verb)(backfill_id)
        print_backfill(out, backfill)


@app.command(rich_help_panel=CLIENT_PANEL)
def pause(
    backfill_id: IdArgument,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """Stop launching new runs; runs in flight finish."""
    steer("pause", backfill_id, url, token, output)


@app.command(rich_help_panel=CLIENT_PANEL)
def resume(
    backfill_id: IdArgument,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """Continue a paused backfill."""
    steer("resume", backfill_id, url, token, output)


@app.command(rich_help_panel=CLIENT_PANEL)
def cancel(
    backfill_id: IdArgument,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """Stop launching runs and stop the runs in flight."""
    steer("cancel", backfill_id, url, token, output)


RETRY_CHOICES = {"failed": "FAILED", "canceled": "CANCELED", "not-run": "NOT_RUN"}


@app.command(rich_help_panel=CLIENT_PANEL)
def retry(
    backfill_id: IdArgument,
    include: Annotated[
        str,
        typer.Option(help="Which partitions run again, comma-separated: failed,canceled,not-run."),
    ] = "failed",
    idempotency_key: IdempotencyOption = None,
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
        print_backfill(out, backfill, verb="launched")


# -- jobs, partitions, triggers --------------------------------------------------------------


@app.command(rich_help_panel=CLIENT_PANEL)
def jobs(
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """The jobs the server defines, with their partitions."""
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        found = client.jobs()
    if out.json_mode:
        out.json(found)
        return

    def partitions(job: Any) -> str:
        p = job.partitions
        if p.kind == "TIME":
            return f"{p.cadence} from {p.start.date() if p.start else '?'}"
        if p.kind == "DYNAMIC":
            return f"dynamic {p.dynamic_name}"
        return str(p.kind).lower()

    out.table(
        ["JOB", "PARTITIONS", "COUNT", "MAX RUNS", "RETRIES", "DESCRIPTION"],
        (
            [
                j.name,
                partitions(j),
                str(j.partitions.count),
                str(j.max_concurrent_runs or ""),
                str(j.max_retries),
                (j.description or "").splitlines()[0] if j.description else "",
            ]
            for j in found
        ),
    )


NameArgument = Annotated[str, typer.Argument(help="The dynamic partitions' name.")]
KeysArgument = Annotated[list[str], typer.Argument(help="Partition keys.")]


@partitions_app.command("add")
def partitions_add(
    name: NameArgument,
    keys: KeysArgument,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """Add keys to a dynamic partitions definition (existing keys are kept)."""
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        changed = client.add_dynamic_partitions(name, keys)
    if out.json_mode:
        out.json({"name": name, "keys_changed": changed})
    else:
        out.line(f"added {changed} of {len(keys)} keys to {name}")


@partitions_app.command("delete")
def partitions_delete(
    name: NameArgument,
    keys: KeysArgument,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """Delete keys of a dynamic partitions definition."""
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        changed = client.delete_dynamic_partitions(name, keys)
    if out.json_mode:
        out.json({"name": name, "keys_changed": changed})
    else:
        out.line(f"deleted {changed} of {len(keys)} keys from {name}")


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
