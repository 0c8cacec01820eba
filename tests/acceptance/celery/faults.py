"""What the Celery fault tests judge, from the database and from the jobs' own marks.

The ``traced`` job (``defs.py``) marks that its body began (``began-<run id>``) and, at its end,
appends its execution to its partition's file. A run is judged by those marks, never by what
the daemon believes: executed twice (two ends of one partition), taken for never started though
its body began, or charged as failed (``FAILED``, ``WORKER_LOST``) though its body never began.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

from tests.acceptance.celery.support import executions, overlaps


@dataclass
class Verdict:
    runs: list[Any]
    doubled: dict[str, list[str]] = field(default_factory=dict)
    """Partitions whose job ran to its end more than once."""
    overlapping: list[str] = field(default_factory=list)
    began_but_not_started: list[int] = field(default_factory=list)
    """Runs recorded as never started (``CANCELED``, no failure) whose body began."""
    charged_but_never_began: list[int] = field(default_factory=list)
    """Runs recorded ``FAILED`` (``WORKER_LOST`` included) whose body never began."""
    executed_without_start: list[int] = field(default_factory=list)
    """Runs recorded ``SUCCESS`` with no ``startedAt``."""
    succeeded: dict[str, int] = field(default_factory=dict)
    """Per partition, its ``SUCCESS`` runs."""


def judge(database_url: str, marks: Path) -> Verdict:
    engine = create_engine(database_url)
    with engine.connect() as conn:
        runs = conn.execute(
            text(
                "SELECT id, partition_key, attempt, status, failure_reason, started_at, "
                "ended_at, error_message FROM runs ORDER BY id"
            )
        ).all()
    engine.dispose()
    began = {int(p.name.removeprefix("began-run_")) for p in marks.glob("began-run_*")}
    verdict = Verdict(runs)
    for key, ids in executions(marks).items():
        if len(ids) > 1:
            verdict.doubled[key] = ids
    verdict.overlapping = overlaps(marks)
    for run in runs:
        if run.status == "canceled" and run.id in began:
            verdict.began_but_not_started.append(run.id)
        if run.status == "failed" and run.id not in began:
            verdict.charged_but_never_began.append(run.id)
        if run.status == "success":
            verdict.succeeded[run.partition_key] = verdict.succeeded.get(run.partition_key, 0) + 1
            if run.started_at is None:
                verdict.executed_without_start.append(run.id)
    return verdict
