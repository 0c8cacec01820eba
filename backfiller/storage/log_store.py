"""Where run log lines are kept: the database (``run_logs``, the default) or files.

``BACKFILLER_LOG_STORE`` (:class:`~backfiller.config.HistorySettings`) names it: ``database``,
or a folder or any URL ``fsspec`` reaches (``/var/lib/backfiller/logs``, ``file://...``,
``s3://bucket/prefix`` with ``s3fs`` installed). The daemons write there and the API reads
from there, so every process of a deployment must name the same one.

In files, a run's lines are ``<root>/<backfill id>/<run id>/<first time>-<digest>-<n>.jsonl``:
one file per batch of lines a worker sent (a daemon writes a run's lines as they come, in
batches; object storage has no append), named after its content, so a batch written again
(its results' transaction failed and was retried) replaces itself rather than doubling. A run's
lines are its files in name order; a page's cursor counts the lines before it. Pruning a
backfill removes its folder in one call.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True, slots=True)
class LogLine:
    """One stored line of a run and its place (the cursor after it)."""

    position: int
    at: datetime
    level: str
    message: str


@dataclass(frozen=True, slots=True)
class StoredLine:
    """A line to store, with the run and backfill it belongs to."""

    backfill_id: int
    run_id: int
    at: datetime
    level: str
    message: str


class LogStore(Protocol):
    """Run log lines kept outside the database."""

    async def write(self, lines: Sequence[StoredLine]) -> None: ...

    async def read(self, backfill_id: int, run_id: int, limit: int, after: int) -> list[LogLine]:
        """Up to ``limit`` lines of the run after the ``after`` first ones."""
        ...

    async def remove_backfill(self, backfill_id: int) -> None: ...


class DatabaseLogs:
    """Lines in ``run_logs``: written by the daemon's results transaction, read by
    ``RunReads.logs``, pruned with their runs. Nothing to do here."""

    in_database = True

    async def write(self, lines: Sequence[StoredLine]) -> None:
        raise AssertionError("database log lines are written with the run results")

    async def read(self, backfill_id: int, run_id: int, limit: int, after: int) -> list[LogLine]:
        raise AssertionError("database log lines are read by RunReads.logs")

    async def remove_backfill(self, backfill_id: int) -> None:
        return None


class FileLogs:
    """Lines in files (see the module's docstring)."""

    in_database = False

    def __init__(self, url: str) -> None:
        self.url = url
        import fsspec  # only where files are used: it is not small

        self.fs, root = fsspec.core.url_to_fs(url)
        self.root = root.rstrip("/")

    def _folder(self, backfill_id: int, run_id: int | None = None) -> str:
        base = f"{self.root}/{backfill_id}"
        return base if run_id is None else f"{base}/{run_id}"

    async def write(self, lines: Sequence[StoredLine]) -> None:
        if lines:
            await asyncio.to_thread(self._write, lines)

    def _write(self, lines: Sequence[StoredLine]) -> None:
        by_run: dict[tuple[int, int], list[StoredLine]] = defaultdict(list)
        for line in lines:
            by_run[(line.backfill_id, line.run_id)].append(line)
        for (backfill_id, run_id), batch in by_run.items():
            text = "".join(
                json.dumps(
                    {"at": ln.at.isoformat(), "level": ln.level, "message": ln.message},
                    separators=(",", ":"),
                )
                + "\n"
                for ln in batch
            )
            digest = hashlib.sha256(text.encode()).hexdigest()[:12]
            first = int(batch[0].at.timestamp() * 1_000_000)
            folder = self._folder(backfill_id, run_id)
            self.fs.makedirs(folder, exist_ok=True)
            with self.fs.open(f"{folder}/{first:020d}-{digest}-{len(batch)}.jsonl", "w") as out:
                out.write(text)

    async def read(self, backfill_id: int, run_id: int, limit: int, after: int) -> list[LogLine]:
        return await asyncio.to_thread(self._read, backfill_id, run_id, limit, after)

    def _read(self, backfill_id: int, run_id: int, limit: int, after: int) -> list[LogLine]:
        folder = self._folder(backfill_id, run_id)
        try:
            names = sorted(str(n) for n in self.fs.ls(folder, detail=False))
        except FileNotFoundError:
            return []
        out: list[LogLine] = []
        seen = 0
        for name in names:
            count = int(name.rsplit("-", 1)[1].removesuffix(".jsonl"))
            if seen + count <= after:
                seen += count  # a whole file before the cursor: not read
                continue
            with self.fs.open(name, "r") as found:
                for raw in found:
                    seen += 1
                    if seen <= after:
                        continue
                    line = json.loads(raw)
                    at = datetime.fromisoformat(line["at"])
                    out.append(LogLine(seen, at, line["level"], line["message"]))
                    if len(out) >= limit:
                        return out
        return out

    async def remove_backfill(self, backfill_id: int) -> None:
        await asyncio.to_thread(self._remove, backfill_id)

    def _remove(self, backfill_id: int) -> None:
        folder = self._folder(backfill_id)
        if self.fs.exists(folder):
            self.fs.rm(folder, recursive=True)


def log_store_of(setting: str) -> DatabaseLogs | FileLogs:
    """The store a ``log_store`` setting names."""
    return DatabaseLogs() if setting in ("", "database") else FileLogs(setting)
