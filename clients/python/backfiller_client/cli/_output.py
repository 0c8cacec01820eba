"""How client commands print: rich tables and bars on a terminal, plain lines otherwise, and
JSON for scripts (``--output json``)."""

from __future__ import annotations

import dataclasses
import enum
import json
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from backfiller_client import Backfill, BackfillCounts, PartitionStatusRange

STRIP_WIDTH = 60

# Glyph and colour of each partition status in the strip; letters when there is no colour.
STATUS_STYLE: dict[str, tuple[str, str]] = {
    "SUCCEEDED": ("green", "S"),
    "FAILED": ("red", "F"),
    "RUNNING": ("blue", "R"),
    "QUEUED": ("cyan", "Q"),
    "CANCELED": ("yellow", "C"),
    "SKIPPED": ("bright_black", "K"),
    "PENDING": ("grey35", "."),
}
# When one cell of the strip covers several statuses, the one to show, most telling first.
STRIP_PRIORITY = ("FAILED", "RUNNING", "QUEUED", "CANCELED", "PENDING", "SKIPPED", "SUCCEEDED")

STATUS_COLOUR = {
    "REQUESTED": "cyan",
    "RUNNING": "blue",
    "PAUSED": "yellow",
    "CANCELING": "yellow",
    "CANCELED": "yellow",
    "COMPLETED_SUCCESS": "green",
    "COMPLETED_FAILED": "red",
    "FAILED": "red",
}


def plain(value: Any) -> Any:
    """A client object as JSON-ready values (snake_case keys, ISO 8601 times)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        found = {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, BackfillCounts):
            found.update(done=value.done, percent_done=value.percent_done)
        return found
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


class Output:
    """Where a command writes: stdout for results, stderr for messages."""

    def __init__(self, json_mode: bool) -> None:
        self.json_mode = json_mode
        self.out = Console(highlight=False, soft_wrap=True)
        if not self.out.is_terminal:
            # Piped: one line per row, whatever the width, for grep and friends.
            self.out = Console(highlight=False, soft_wrap=True, width=1000)
        self.err = Console(stderr=True, highlight=False, soft_wrap=True)

    @property
    def is_terminal(self) -> bool:
        return self.out.is_terminal

    def json(self, value: Any) -> None:
        sys.stdout.write(json.dumps(plain(value), ensure_ascii=False) + "\n")
        sys.stdout.flush()

    def line(self, text: str | Text = "") -> None:
        self.out.print(text)

    def error(self, message: str) -> None:
        self.err.print(Text(f"error: {message}", style="red"))

    def table(self, columns: Sequence[str], rows: Iterable[Sequence[str | Text]]) -> None:
        table = Table(*columns, box=None, header_style="bold", pad_edge=False)
        for row in rows:
            table.add_row(*row)
        self.out.print(table)


def status_text(status: str) -> Text:
    return Text(status, style=STATUS_COLOUR.get(status, ""))


def progress_text(counts: BackfillCounts) -> str:
    return f"{counts.done}/{counts.total} ({counts.percent_done:.1f}%)"


def counts_line(counts: BackfillCounts) -> str:
    names = ("succeeded", "failed", "running", "queued", "pending", "canceled", "skipped")
    return " ".join(f"{n}={getattr(counts, n)}" for n in names)


def strip_cells(ranges: Sequence[PartitionStatusRange], width: int = STRIP_WIDTH) -> list[str]:
    """The partitions folded into at most ``width`` cells, each shown by its most telling
    status."""
    total = sum(r.count for r in ranges)
    if total == 0:
        return []
    cells = min(width, total)
    found: list[set[str]] = [set() for _ in range(cells)]
    for r in ranges:
        first = r.start_index * cells // total
        last = (r.start_index + r.count - 1) * cells // total
        for cell in range(first, min(last, cells - 1) + 1):
            found[cell].add(r.status.value)
    return [next((s for s in STRIP_PRIORITY if s in statuses), "PENDING") for statuses in found]


def strip_text(ranges: Sequence[PartitionStatusRange], colour: bool) -> Text:
    text = Text()
    for status in strip_cells(ranges):
        style, letter = STATUS_STYLE[status]
        if colour:
            text.append("█", style=style)
        else:
            text.append(letter)
    return text


def legend(colour: bool) -> Text:
    text = Text()
    for status, (style, letter) in STATUS_STYLE.items():
        glyph = "█" if colour else letter
        text.append(glyph, style=style if colour else "")
        text.append(f" {status.lower()}  ")
    return text


class Watcher:
    """Shows a backfill's progress until it ends: a live bar on a terminal, plain lines
    otherwise, one JSON object per change with ``--output json``."""

    def __init__(self, output: Output) -> None:
        self.output = output
        self.started = time.monotonic()
        self.first_done: int | None = None
        self.progress: Progress | None = None
        self.task: Any = None

    def rate(self, done: int) -> float:
        if self.first_done is None:
            self.first_done = done
        elapsed = time.monotonic() - self.started
        return (done - self.first_done) / elapsed if elapsed > 0 else 0.0

    def __enter__(self) -> Watcher:
        if self.output.is_terminal and not self.output.json_mode:
            self.progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TaskProgressColumn(),
                TextColumn("{task.completed:.0f}/{task.total:.0f}"),
                TextColumn("{task.fields[rate]}"),
                TimeElapsedColumn(),
                TextColumn("{task.fields[counts]}"),
                console=self.output.out,
            )
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def update(self, backfill: Backfill) -> None:
        counts = backfill.counts
        rate = self.rate(counts.done)
        if self.output.json_mode:
            self.output.json({"backfill": backfill, "rate_per_second": round(rate, 3)})
            return
        if self.progress is None:
            stamp = datetime.now().astimezone().strftime("%H:%M:%S")
            self.output.line(
                f"{stamp} {backfill.id} {backfill.status.value} {progress_text(counts)} "
                f"{counts_line(counts)} rate={rate:.2f}/s"
            )
            return
        rate_text = f"{rate:.2f} partitions/s"
        counts_text = (
            f"[green]✓{counts.succeeded}[/] [red]✗{counts.failed}[/] "
            f"[blue]▶{counts.running}[/] [cyan]…{counts.queued + counts.pending}[/]"
        )
        description = f"{backfill.id} [{STATUS_COLOUR.get(backfill.status.value, '')}]"
        description += f"{backfill.status.value}[/]"
        if self.task is None:
            self.task = self.progress.add_task(
                description,
                total=counts.total,
                completed=counts.done,
                rate=rate_text,
                counts=counts_text,
            )
        else:
            self.progress.update(
                self.task,
                description=description,
                total=counts.total,
                completed=counts.done,
                rate=rate_text,
                counts=counts_text,
            )
