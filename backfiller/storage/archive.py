"""An archive of pruned rows: JSON Lines files, on any filesystem ``fsspec`` reaches.

``<url>/<table>/<owner>/<first id>.jsonl``: one file per deleted batch, one JSON object per
row (its columns by name; times in ISO 8601, JSON columns as they were). ``owner`` is the
backfill the rows belonged to, or ``all`` for trigger evaluations and audit entries. A file is
written whole before its rows are deleted, in the deleting transaction: a batch whose delete
did not commit is written again, under the same name, by the call that deletes it.

``url`` is a local folder (``/var/backups/backfiller`` or ``file://...``) or any URL fsspec
knows (``s3://bucket/prefix`` with ``s3fs`` installed, ``gcs://...``).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any


class Archive:
    """Where pruned rows are written before they are deleted (see the module's docstring)."""

    def __init__(self, url: str) -> None:
        import fsspec  # only where an archive is used: it is not small

        self.fs, self.root = fsspec.core.url_to_fs(url)

    def write(
        self, table: str, owner: int | None, first_id: int, rows: Sequence[Mapping[str, Any]]
    ) -> str:
        """Write ``rows`` of ``table``; the file's path."""
        folder = f"{self.root.rstrip('/')}/{table}/{'all' if owner is None else owner}"
        self.fs.makedirs(folder, exist_ok=True)
        path = f"{folder}/{first_id}.jsonl"
        with self.fs.open(path, "w", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps(row, default=_plain, separators=(",", ":")) + "\n")
        return path


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return value.value
    raise TypeError(f"cannot archive a {type(value).__name__}")
