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


def by_parent() -> dict[int, list[tuple[int, list[str]]]]:
    """Live processes by parent pid: ``(pid, stat fields)`` of each."""
    found: dict[int, list[tuple[int, list[str]]]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_fields(stat)
        except (OSError, IndexError):
            continue
        found.setdefault(int(fields[1]), []).append((int(stat.parent.name), fields))
    return found


def children_cpu(pid: int) -> float:
    """CPU seconds of the live descendants of process ``pid`` (with their reaped children)."""
    children = by_parent()
    total, todo = 0.0, [pid]
    while todo:
        for child, fields in children.get(todo.pop(), []):
            total += stat_cpu(fields, children=True)
            todo.append(child)
    return total


def database_cpu(url: str) -> float:
    """CPU seconds of the live PostgreSQL backends serving ``url``'s database (on this machine,
    found by the database name in their command line)."""
    name = url.rsplit("/", 1)[-1].split("?", 1)[0]
    total = 0.0
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if f" {name} " not in cmdline.read_bytes().decode(errors="replace"):
                continue
            total += stat_cpu(stat_fields(cmdline.parent / "stat"), children=False)
        except (OSError, IndexError):
            continue
    return total


def machine_times() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, from ``/proc/stat``."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    total = sum(fields[:8])
    return (total - idle) / TICKS, total / TICKS
