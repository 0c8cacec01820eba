"""Benchmark of the backfill list's filters: a page of 100 among 100,000 backfills.

A fresh PostgreSQL database (beside ``BENCH_PG_URL``, default the test server's ``test``
database) gets 100,000 backfills written straight into its tables: 20 jobs, 50 creators,
4 tags each, titles of three words out of a few hundred, a year of creation times, one in
twenty an asset backfill of 1 to 3 of 30 assets. Then, for each filter:

- ``[storage]``: the list's query alone (``backfill_reads.backfill_rows``, 101 rows, as the
  resolver asks), run on a synchronous connection, with the list's indexes (migration 0031)
  and, in the same run, with those indexes dropped and the tag index of before put back (no
  index for creator, text or time; tags by ``(key, value)``; the asset filter keeps its table,
  which did not exist before);
- ``[http]``: ``backfills(first: 100, filter: ...)`` through a real ``backfiller serve`` on the
  same database, from the keep-alive client of ``bench.launch``.

Prints the p50 and the p90 of each, in milliseconds. Run with ``python -m bench.backfill_filters``
(``BENCH_COUNT`` queries of each kind, default 30). Not a test: it asserts nothing. Drops its
database at the end.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, create_engine, insert, text

from backfiller.domain import BackfillState, Order, Reprocess, SelectionKind
from backfiller.storage.backfill_listing import BackfillAssetRecord
from backfiller.storage.backfill_reads import backfill_rows
from backfiller.storage.migrations import upgrade_database
from backfiller.storage.records import BackfillRecord, BackfillTagRecord
from backfiller.storage.repositories import BackfillQuery
from bench.databases import scratch_postgres
from bench.launch import Connection as HttpConnection
from bench.launch import start_server

COUNT = 100_000
PAGE = 100
START = datetime(2026, 1, 1, tzinfo=UTC)
WORDS = [f"{a}{b}" for a in ("sales", "orders", "visits", "events", "ledger", "stock")
         for b in ("", "-eu", "-us", "-apac", "-daily", "-hourly", "-fix", "-rerun")]  # fmt: skip
WORDS += [f"w{n:03d}" for n in range(300)]
JOBS = [f"job_{n:02d}" for n in range(20)]
ASSETS = [f"asset_{n:02d}" for n in range(30)]
STATUSES = [BackfillState.COMPLETED_SUCCESS] * 8 + [
    BackfillState.COMPLETED_FAILED,
    BackfillState.CANCELED,
    BackfillState.RUNNING,
]
LIST_INDEXES = ("ix_backfills_creator_id", "ix_backfills_created_at", "ix_backfills_title_trgm")
TAG_INDEX = "ix_backfill_tags_key_value_backfill_id"


def rows(rng: random.Random) -> Iterator[tuple[dict[str, Any], list[tuple[str, str]], list[str]]]:
    for n in range(1, COUNT + 1):
        created = START + timedelta(seconds=n * 315)  # a year over 100,000 launches
        tags = [
            ("team", f"team-{rng.randrange(10)}"),
            ("ticket", f"DATA-{rng.randrange(5000)}"),
            ("source", rng.choice(["ui", "cli", "trigger"])),
            ("env", rng.choice(["prod", "staging"])),
        ]
        assets = rng.sample(ASSETS, rng.randint(1, 3)) if n % 20 == 0 else []
        row = {
            "id": n,
            "job_name": "@assets" if assets else rng.choice(JOBS),
            "selection_kind": SelectionKind.RANGE,
            "range_start": "2025-01-01",
            "range_end": "2025-12-31",
            "partitions_fingerprint": "f" * 64,
            "first_index": 0,
            "reprocess": Reprocess.MISSING,
            "order": Order.OLDEST_FIRST,
            "tags": [list(t) for t in tags],
            "title": " ".join(rng.choice(WORDS) for _ in range(3)),
            "request_fingerprint": "r" * 64,
            "status": rng.choice(STATUSES),
            "creator": f"person-{rng.randrange(50)}",
            "created_at": created,
            "updated_at": created,
            "planned": 365,
            "total": 365,
            "pending": 0,
            "succeeded": 365,
            "asset_target": asset_target(assets),
        }
        yield row, tags, assets


def asset_target(assets: list[str]) -> dict[str, Any] | None:
    """An asset backfill's stored target (``AssetTarget.to_json``), or None."""
    if not assets:
        return None
    parts = [{"name": a, "fingerprint": "f" * 64, "start": 0, "count": 365} for a in assets]
    return {"names": assets, "upstream": False, "downstream": False, "parts": parts}


def fill(conn: Connection) -> None:
    rng = random.Random(7)
    backfills, tags, assets = [], [], []
    for row, row_tags, row_assets in rows(rng):
        backfills.append(row)
        tags += [{"backfill_id": row["id"], "key": k, "value": v} for k, v in row_tags]
        assets += [{"backfill_id": row["id"], "asset": a} for a in row_assets]
    for table, values in (
        (BackfillRecord, backfills),
        (BackfillTagRecord, tags),
        (BackfillAssetRecord, assets),
    ):
        for start in range(0, len(values), 5000):
            conn.execute(insert(table), values[start : start + 5000])
    conn.execute(text("SELECT setval(pg_get_serial_sequence('backfills', 'id'), :n)"), {"n": COUNT})


CASES: list[tuple[str, BackfillQuery, dict[str, Any]]] = [
    ("no filter", BackfillQuery(), {}),
    ("status RUNNING", BackfillQuery(statuses=[BackfillState.RUNNING]), {"statuses": ["RUNNING"]}),
    ("job", BackfillQuery(job_name="job_07"), {"job": "job_07"}),
    ("asset", BackfillQuery(asset="asset_11"), {"asset": "asset_11"}),
    ("creator", BackfillQuery(creator="person-13"), {"creator": "person-13"}),
    (
        "tag team",
        BackfillQuery(tag=("team", "team-3")),
        {"tag": {"key": "team", "value": "team-3"}},
    ),
    (
        "tags team + ticket (rare)",
        BackfillQuery(tags=[("team", "team-3"), ("ticket", "DATA-42")]),
        {"tags": [{"key": "team", "value": "team-3"}, {"key": "ticket", "value": "DATA-42"}]},
    ),
    ("title text, common", BackfillQuery(title_contains="sales"), {"search": "sales"}),
    ("title text, rare", BackfillQuery(title_contains="w123 w2"), {"search": "w123 w2"}),
    ("title text, absent", BackfillQuery(title_contains="nowhere"), {"search": "nowhere"}),
    (
        "created in one day, months back",
        BackfillQuery(
            created_after=START + timedelta(days=40), created_before=START + timedelta(days=41)
        ),
        {
            "createdAfter": (START + timedelta(days=40)).isoformat(),
            "createdBefore": (START + timedelta(days=41)).isoformat(),
        },
    ),
    (
        "creator + text + job",
        BackfillQuery(creator="person-13", title_contains="sales", job_name="job_07"),
        {"creator": "person-13", "search": "sales", "job": "job_07"},
    ),
]


def timed(run: Callable[[], Any], count: int) -> tuple[float, float]:
    for _ in range(3):
        run()
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        run()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.9) - 1]


def figures(p50: float, p90: float) -> str:
    return f"p50 {p50:7.2f} ms  p90 {p90:7.2f} ms"


def storage_figures(conn: Connection, count: int) -> dict[str, tuple[float, float]]:
    return {
        name: timed(lambda q=query: backfill_rows(conn, q, PAGE + 1, None), count)
        for name, query, _ in CASES
    }


def drop_list_indexes(conn: Connection) -> None:
    """Back to the indexes before migration 0031."""
    for name in (*LIST_INDEXES, TAG_INDEX):
        conn.execute(text(f"DROP INDEX {name}"))
    conn.execute(text("CREATE INDEX ix_backfill_tags_key_value ON backfill_tags (key, value)"))
    conn.execute(text("ANALYZE backfills"))
    conn.execute(text("ANALYZE backfill_tags"))


LIST = """query List($filter: BackfillFilter) {
  backfills(first: 100, filter: $filter) {
    nodes { id status title createdAt creator target { job } counts { total succeeded } }
  }
}"""


async def http_figures(count: int) -> dict[str, tuple[float, float]]:
    server = start_server(Path("unused.db"), cache=True)  # on BENCH_DATABASE_URL (set by main)
    try:
        client = await HttpConnection.open(server.url)
        out = {}
        try:
            for name, _, variables in CASES:
                body = json.dumps({"query": LIST, "variables": {"filter": variables}}).encode()
                for _ in range(3):
                    answer = await client.post("/graphql/v1", body)
                    if answer.get("errors"):
                        raise RuntimeError(answer["errors"])
                samples = []
                for _ in range(count):
                    started = time.perf_counter()
                    await client.post("/graphql/v1", body)
                    samples.append((time.perf_counter() - started) * 1000)
                samples.sort()
                out[name] = (statistics.median(samples), samples[int(len(samples) * 0.9) - 1])
        finally:
            await client.close()
        return out
    finally:
        server.stop()


def main() -> None:
    count = int(os.environ.get("BENCH_COUNT", "30"))
    server = os.environ.get("BENCH_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
    with scratch_postgres(server, "bf_bench_filters") as url:
        upgrade_database(url)
        engine = create_engine(url)
        started = time.perf_counter()
        with engine.begin() as conn:
            fill(conn)
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE"))
        print(f"Backfill list filters, PostgreSQL, {COUNT:,} backfills "
              f"(written in {time.perf_counter() - started:.0f} s); {os.cpu_count()} CPUs, "
              f"load {os.getloadavg()[0]:.1f}; {count} queries each")  # fmt: skip
        os.environ["BENCH_DATABASE_URL"] = url
        over_http = asyncio.run(http_figures(count))
        with engine.connect() as conn:
            indexed = storage_figures(conn, count)
            drop_list_indexes(conn)
            conn.commit()
            before = storage_figures(conn, count)
        engine.dispose()
        print(f"{'filter (page of 100)':<34} {'[http], indexed':<30} {'[storage], indexed':<30} "
              "[storage], without the list's indexes")  # fmt: skip
        for name_, _, _ in CASES:
            print(f"{name_:<34} {figures(*over_http[name_]):<30} {figures(*indexed[name_]):<30} "
                  f"{figures(*before[name_])}")  # fmt: skip
    sys.stdout.flush()


if __name__ == "__main__":
    main()
