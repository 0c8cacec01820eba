"""CPU time of processes and threads, read from ``/proc`` (Linux), for the benchmarks."""

from __future__ import annotations

import os
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def stat_fields(path: Path) -> list[str]:
    """The fields of a ``/proc/.../stat`` file after the command's name."""
    return path.read_text().rsplit(")", 1)[1].split()


def stat_cpu(fields: list[str], children: bool) -> float:
    """User plus system seconds of ``stat_fields``; with its reaped children's if asked."""
    own = int(fields[11]) + int(fields[12])
    return (own + (int(fields[13]) + int(fields[14]) if children else 0)) / TICKS


def process_cpu(pid: int) -> float:
    """User plus system CPU time of process ``pid`` so far (its own, not its children's)."""
    return stat_cpu(stat_fields(Path(f"/proc/{pid}/stat")), children=False)
