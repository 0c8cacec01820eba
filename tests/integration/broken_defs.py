"""Definitions with a job whose partitions definition fails at run time: a real internal error."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from backfiller import Definitions, RunContext, StaticPartitions, job
from backfiller.definitions.partitions import KeySpace


class ExplodingPartitions(StaticPartitions):
    def key_space(self, now: datetime, dynamic_keys: Sequence[str] = ()) -> KeySpace:
        raise RuntimeError("SELECT secret FROM internals -- boom")


@job(partitions=ExplodingPartitions(["a"]))
def exploding(context: RunContext) -> None:
    """Never runs."""


@job(partitions=StaticPartitions(["a", "b", "c"]))
def letters(context: RunContext) -> None:
    """A tiny job."""


definitions = Definitions(jobs=[exploding, letters])
