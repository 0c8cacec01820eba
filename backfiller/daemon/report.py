"""What one tick did: :class:`TickReport`."""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass
class TickReport:
    """What one tick did. Every field counts things; zero means nothing happened."""

    planned: int = 0
    skipped: int = 0
    started_backfills: int = 0
    failed_backfills: int = 0
    completed_backfills: int = 0
    canceled_backfills: int = 0
    claimed: int = 0
    started: int = 0
    succeeded: int = 0
    failed: int = 0
    retried: int = 0
    canceled: int = 0
    taken_back: int = 0
    lost: int = 0
    recovered: int = 0
    log_lines: int = 0
    conflicts: int = 0

    def __add__(self, other: TickReport) -> TickReport:
        return TickReport(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        )

    @property
    def busy(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))
