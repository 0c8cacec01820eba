"""Backfill policies: how many partitions one run of a job (or asset) covers in a backfill."""

from __future__ import annotations

from dataclasses import dataclass

from backfiller.domain.ranges import SINGLE_RUN_MAX_PARTITIONS


@dataclass(frozen=True, slots=True)
class BackfillPolicy:
    """Runs of consecutive partitions instead of one run per partition (a ranged run).

    Declared with :func:`single_run` or :func:`multi_run`; the run's context then gives the
    range (``context.partition_keys``, ``context.partition_start``/``partition_end`` span the
    whole range). Counts and partition statuses stay per partition.

    Args:
        max_partitions_per_run: the most partitions one run covers; None for one run over
            the whole selection (up to ``SINGLE_RUN_MAX_PARTITIONS`` per run).
    """

    max_partitions_per_run: int | None = None

    def __post_init__(self) -> None:
        n = self.max_partitions_per_run
        if n is not None and not 1 <= n <= SINGLE_RUN_MAX_PARTITIONS:
            raise ValueError(
                f"max_partitions_per_run must be between 1 and {SINGLE_RUN_MAX_PARTITIONS}"
            )

    @property
    def partitions_per_run(self) -> int:
        """The chunk size the daemon uses."""
        return self.max_partitions_per_run or SINGLE_RUN_MAX_PARTITIONS


def single_run() -> BackfillPolicy:
    """One run over the whole selection (chunks of ``SINGLE_RUN_MAX_PARTITIONS`` beyond)."""
    return BackfillPolicy(None)


def multi_run(max_partitions_per_run: int = 1) -> BackfillPolicy:
    """One run per chunk of at most ``max_partitions_per_run`` consecutive partitions."""
    return BackfillPolicy(max_partitions_per_run)
