"""Launches that commit together (group commit, each statement run once for the
group): every launch gets what it would have got alone, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import inspect, select

from backfiller.domain import EventKind
from backfiller.services.backend import Backend
from backfiller.services.launch_types import (
    LaunchProblem,
    ProblemCode,
)
from backfiller.services.launching import (
    Launched,
    create_backfill,
)
from backfiller.storage import Database
from backfiller.storage.auth import AuditEntry
from backfiller.storage.auth_records import AuditOutcome, AuditRecord
from backfiller.storage.launches import (
    AuditOf,
    IdempotencyHit,
    NewBackfill,
    launch_many,
)
from backfiller.storage.notification_records import BackfillWebhookRecord
from backfiller.storage.notifications import WebhookTarget
from backfiller.storage.records import (
    BackfillEventRecord,
    BackfillRecord,
    BackfillTagRecord,
)
from backfiller.storage.repositories import BackfillRepository
from tests.support import FrozenClock, commits_of, count_rows, new_backfill

NOW = datetime(2026, 6, 15, 12, 0, tzinfo=UTC)


def new(title: str, **changes: Any) -> NewBackfill:
    same = {"request_fingerprint": "same", "creator": "tester"}
    return new_backfill(**{**same, "title": title, **changes})


def audit_of(operation: str) -> AuditOf:
    def entry(pk: int) -> AuditEntry:
        return AuditEntry(
            at=NOW,
            actor="tester",
            role="admin",
            operation=operation,
            subject=str(pk),
            outcome=AuditOutcome.SUCCEEDED,
            codes=[],
            message=None,
            request_id=None,
        )

    return entry


def failing_audit(pk: int) -> AuditEntry:
    raise ValueError(f"no audit for {pk}")


@pytest.fixture
def backend(database: Database, clock: FrozenClock) -> Backend:
    from backfiller.examples.quickstart import definitions

    return Backend(database=database, definitions=definitions, settings=_settings(), clock=clock)


def _settings() -> Any:
    from backfiller.config import Settings

    return Settings()


async def stored(database: Database, pk: int) -> BackfillRecord:
    async with database.read() as session:
        record = await BackfillRepository(session).get(pk)
    assert record is not None
    return record


async def audited_subjects(database: Database) -> list[str]:
    async with database.read() as session:
        subjects = (await session.execute(select(AuditRecord.subject))).scalars()
        return [str(subject) for subject in subjects]


async def test_a_group_commits_once_and_each_launch_gets_its_own_rows(
    backend: Backend, database: Database
) -> None:
    commits = commits_of(database)
    hooks = (WebhookTarget("https://example.com/hook", ("SUCCEEDED",), "json"),)
    news = [
        new(
            f"t{i}", tags=[("n", str(i)), ("even", str(i % 2 == 0))], notify=hooks if i == 3 else ()
        )
        for i in range(8)
    ]
    launched = await asyncio.gather(
        *(create_backfill(backend, one, audit=audit_of("launch")) for one in news)
    )
    assert commits[0] == 1
    assert all(isinstance(one, Launched) and one.created for one in launched)
    records = [one.record for one in launched if isinstance(one, Launched)]
    assert len({record.id for record in records}) == 8
    for i, record in enumerate(records):
        assert inspect(record).detached
        assert (record.title, record.tags, record.created_at) == (
            f"t{i}",
            [list(t) for t in news[i].tags],
            NOW,
        )
        row = await stored(database, record.id)
        assert (row.title, row.tags, row.created_at) == (
            f"t{i}",
            [list(t) for t in news[i].tags],
            NOW,
        )
    async with database.read() as session:
        tags = (await session.execute(select(BackfillTagRecord))).scalars().all()
        events = (await session.execute(select(BackfillEventRecord))).scalars().all()
        hooked = (await session.execute(select(BackfillWebhookRecord))).scalars().all()
    by_id = {record.id: i for i, record in enumerate(records)}
    assert sorted((by_id[t.backfill_id], t.key, t.value) for t in tags) == sorted(
        (i, k, v) for i, one in enumerate(news) for k, v in one.tags
    )
    assert sorted(e.backfill_id for e in events) == sorted(by_id)
    assert {e.kind for e in events} == {EventKind.LAUNCHED.value}
    assert [h.backfill_id for h in hooked] == [records[3].id]
    assert sorted(await audited_subjects(database)) == sorted(str(pk) for pk in by_id)


async def test_one_key_in_one_group_creates_one_backfill_and_tells_the_others(
    backend: Backend, database: Database
) -> None:
    same = new("same", idempotency_key="k")
    other = new("other", idempotency_key="k", request_fingerprint="other")
    launches = [same, same, other, same, new("free", request_fingerprint="free")]
    outcomes = await asyncio.gather(
        *(create_backfill(backend, one, audit=audit_of("launch")) for one in launches)
    )
    created = [o for o in outcomes if isinstance(o, Launched) and o.created]
    assert len(created) == 2  # the key's first launch and the one without a key
    (winner,) = [o.record for o in created if o.record.idempotency_key == "k"]
    for one, outcome in zip(launches, outcomes, strict=True):
        if one.idempotency_key is None:
            assert isinstance(outcome, Launched) and outcome.record.title == "free"
        elif one.request_fingerprint == winner.request_fingerprint:
            assert isinstance(outcome, Launched) and outcome.record.id == winner.id
        else:
            assert isinstance(outcome, LaunchProblem)
            assert outcome.code is ProblemCode.IDEMPOTENCY_KEY_REUSED
    assert await count_rows(database, BackfillRecord) == 2
    assert await count_rows(database, BackfillEventRecord) == 2
    assert len(await audited_subjects(database)) == 2  # none for a launch that found its key


async def test_a_group_finds_keys_stored_before_it(backend: Backend, database: Database) -> None:
    first = await create_backfill(backend, new("first", idempotency_key="old"))
    assert isinstance(first, Launched) and first.created
    commits = commits_of(database)
    outcomes = await asyncio.gather(
        create_backfill(backend, new("first", idempotency_key="old")),
        create_backfill(backend, new("x", idempotency_key="old", request_fingerprint="x")),
        create_backfill(backend, new("fresh", idempotency_key="new")),
        create_backfill(backend, new("none")),
    )
    assert commits[0] == 1  # together (on SQLite, numbered on from the stored one)
    found, reused, fresh, none = outcomes
    assert isinstance(found, Launched) and not found.created
    assert found.record.id == first.record.id
    assert isinstance(reused, LaunchProblem)
    assert reused.code is ProblemCode.IDEMPOTENCY_KEY_REUSED
    assert isinstance(fresh, Launched) and fresh.created and fresh.record.title == "fresh"
    assert isinstance(none, Launched) and none.created and none.record.title == "none"
    assert await count_rows(database, BackfillRecord) == 3


async def test_a_launch_that_fails_fails_alone_and_leaves_nothing_behind(
    backend: Backend, database: Database
) -> None:
    outcomes = await asyncio.gather(
        create_backfill(backend, new("a"), audit=audit_of("launch")),
        create_backfill(backend, new("lost", idempotency_key="lost"), audit=failing_audit),
        create_backfill(backend, new("b", idempotency_key="b"), audit=audit_of("launch")),
        return_exceptions=True,
    )
    a, lost, b = outcomes
    assert isinstance(lost, ValueError)
    assert isinstance(a, Launched) and a.created and a.record.title == "a"
    assert isinstance(b, Launched) and b.created and b.record.title == "b"
    assert await count_rows(database, BackfillRecord) == 2
    assert await count_rows(database, BackfillEventRecord) == 2
    assert sorted(await audited_subjects(database)) == sorted([str(a.record.id), str(b.record.id)])


async def test_launch_many_is_launch_once_of_each_in_turn(database: Database) -> None:
    later = NOW + timedelta(seconds=1)
    launches = [
        (new("a", idempotency_key="k"), NOW),
        (new("b", idempotency_key="k", request_fingerprint="b"), later),
        (new("c", tags=[("x", "1")]), later),
    ]
    outcomes = await database.transact(lambda conn: launch_many(conn, launches))
    a, b, c = outcomes
    assert isinstance(a, BackfillRecord) and isinstance(c, BackfillRecord)
    assert b == IdempotencyHit(a.id, "same")
    assert (a.title, a.created_at, c.title, c.created_at) == ("a", NOW, "c", later)
    assert (await stored(database, c.id)).created_at == later
    assert await count_rows(database, BackfillRecord) == 2
    assert await count_rows(database, BackfillTagRecord) == 1
