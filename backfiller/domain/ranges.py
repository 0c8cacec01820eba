"""Ranged runs, pure: which claimable partitions one run covers, and the window of a range.

A job (or asset) with a backfill policy runs a chunk of consecutive partitions in one run
(Dagster's ``single_run()`` / ``multi_run(max_partitions_per_run=N)``). Chunks are formed at
claim time from the partitions that may run then (``reprocess`` decided, busy ones left to
wait), so a chunk never spans a partition that is not run with it: a range's keys are exactly
the partitions between its first and last key, and its window is exact.

No IO and nothing of ours imported: storage, the daemon and the launch preview all use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

SINGLE_RUN_MAX_PARTITIONS = 1_000
"""The most partitions one run covers under ``single_run()``: a larger selection runs in
chunks of this size, so a claim never holds more rows than a planning window."""


def chunk_consecutive(indexes: Sequence[int | None], max_per_run: int) -> list[list[int]]:
    """Group candidates into runs of consecutive partitions, at most ``max_per_run`` each.

    ``indexes`` are the candidates' indexes in their key space, in launch order (oldest first
    or newest first); a group is a list of positions into ``indexes``. Two neighbours share a
    run when their key indexes follow each other in the direction of the run (a candidate
    without an index, a key gone from the space, runs alone).
    """
    if max_per_run < 1:
        raise ValueError("max_per_run must be at least 1")
    groups: list[list[int]] = []
    step = 0
    for position, index in enumerate(indexes):
        if groups and _extends(groups[-1], indexes, index, step, max_per_run):
            if len(groups[-1]) == 1:
                step = index - indexes[groups[-1][0]]  # type: ignore[operator]
            groups[-1].append(position)
            continue
        groups.append([position])
        step = 0
    return groups


def _extends(
    group: list[int], indexes: Sequence[int | None], index: int | None, step: int, cap: int
) -> bool:
    last = indexes[group[-1]]
    if index is None or last is None or len(group) >= cap:
        return False
    if step == 0:
        return abs(index - last) == 1
    return index - last == step


def runs_needed(partitions: int, max_per_run: int) -> int:
    """How many runs cover ``partitions`` consecutive partitions (the preview's count)."""
    if partitions <= 0:
        return 0
    return -(-partitions // max_per_run)


def range_window(
    windows: Sequence[tuple[datetime, datetime] | None],
) -> tuple[datetime, datetime] | None:
    """The window of a range: from its earliest start to its latest end (None without time)."""
    known = [w for w in windows if w is not None]
    if not known or len(known) != len(windows):
        return None
    return min(w[0] for w in known), max(w[1] for w in known)
