"""The workloads of ``bench.stack``, each against a running :class:`~bench.stack_procs.Stack`.

Everything goes over HTTP to ``backfiller serve`` (the minimal keep-alive client of
``bench.launch``, so the figures are the service's); times of runs are the service's own
records (a run's ``startedAt`` and ``endedAt``, a backfill's ``endedAt``), read back through the
API, against the wall clock at which the launch was sent (one machine, one clock). CPU comes
from ``/proc`` (``Stack.cpu``). Each function returns a flat dict of figures.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from datetime import date, datetime, timedelta
from typing import Any

from bench.launch import Connection
from bench.proc_cpu import machine_times
from bench.stack_procs import Stack

LAUNCH = """mutation($input: LaunchBackfillInput!) {
  launchBackfill(input: $input) { backfill { id counts { total } } userErrors { code message } }
}"""
STATUS = """query($id: ID!) { backfill(id: $id) {
  status endedAt counts { succeeded total }
  runs(first: 100) { edges { node { startedAt endedAt } } }
} }"""
PROGRESS = """query($id: ID!) { backfill(id: $id) { status endedAt counts { succeeded } } }"""
LIST = """query { backfills(first: 100) { edges { node {
  id status title createdAt target { job } counts { total succeeded failed percentDone }
} } } }"""
ADD_DYNAMIC = """mutation($input: DynamicPartitionsInput!) {
  addDynamicPartitions(input: $input) { keysChanged userErrors { code message } }
}"""
FAST_POLL = 0.01
SLOW_POLL = 0.2


def body(query: str, variables: dict[str, Any] | None = None) -> bytes:
    return json.dumps({"query": query, "variables": variables or {}}).encode()


def days(first: int, count: int) -> list[str]:
    start = date(1970, 1, 1) + timedelta(days=first)
    return [(start + timedelta(days=i)).isoformat() for i in range(count)]


def launch_body(
    job: str, keys: list[str] | None = None, span: tuple[str, str] | None = None
) -> bytes:
    partitions: dict[str, Any] = {"keys": keys} if keys is not None else {}
    if span is not None:
        partitions = {"range": {"start": span[0], "end": span[1]}}
    return body(LAUNCH, {"input": {"target": {"job": job}, "partitions": partitions}})


async def gql(connection: Connection, payload: bytes) -> dict[str, Any]:
    answer = await connection.post("/graphql/v1", payload)
    if answer.get("errors"):
        raise RuntimeError(f"GraphQL errors: {answer['errors']}")
    data: dict[str, Any] = answer["data"]
    return data


async def launch(connection: Connection, payload: bytes) -> str:
    data = (await gql(connection, payload))["launchBackfill"]
    if data["backfill"] is None:
        raise RuntimeError(f"launch refused: {data['userErrors']}")
    backfill_id: str = data["backfill"]["id"]
    return backfill_id


def stamp(text: str | None) -> float:
    return datetime.fromisoformat(text).timestamp() if text else float("nan")


class Machine:
    """The machine's load while a figure is measured: the CPUs kept busy by everything else
    than the measured service and this benchmark (other engineers' tests...), and the load
    average at the end."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.busy0, _ = machine_times()
        self.ours0 = sum(stack.cpu().values()) + time.process_time()
        self.wall0 = time.perf_counter()

    def figures(self) -> dict[str, float]:
        busy, _ = machine_times()
        ours = sum(self.stack.cpu().values()) + time.process_time() - self.ours0
        wall = time.perf_counter() - self.wall0
        others = max(0.0, busy - self.busy0 - ours) / max(1e-9, wall)
        return {"other CPUs busy": others, "load average": os.getloadavg()[0]}


# -- the first run of a backfill -----------------------------------------------------------------


async def first_runs(stack: Stack, count: int = 3, key_base: int = 0) -> list[dict[str, float]]:
    """Launch ``count`` one-partition backfills one after another on a ready daemon (the first
    is the daemon's first backfill); for each, when its run started and ended and when the API
    first answered it succeeded (polled every 10 ms), in seconds after the launch was sent."""
    out = []
    connection = await Connection.open(stack.api_url)
    try:
        for i in range(count):
            payload = launch_body("daily", days(key_base + i, 1))
            sent = time.time()
            backfill_id = await launch(connection, payload)
            launched = time.time() - sent
            while True:
                data = (await gql(connection, body(STATUS, {"id": backfill_id})))["backfill"]
                if data["counts"]["succeeded"]:
                    break
                await asyncio.sleep(FAST_POLL)
            seen = time.time() - sent
            runs = [e["node"] for e in data["runs"]["edges"]]
            out.append(
                {
                    "launch answered": launched,
                    "run started": min(stamp(r["startedAt"]) for r in runs) - sent,
                    "run ended": min(stamp(r["endedAt"]) for r in runs) - sent,
                    "seen through the API": seen,
                }
            )
            await asyncio.sleep(0.3)
    finally:
        await connection.close()
    return out


# -- dispatch ------------------------------------------------------------------------------------


async def dispatch(stack: Stack, size: int, job: str = "daily") -> dict[str, float]:
    """A ``size``-partition no-op backfill launched over HTTP, polled every 0.2 s (every 10 ms
    until its first run succeeded) until COMPLETED_SUCCESS: runs/s and CPU per run."""
    first, last = days(0, size)[0], days(0, size)[-1]
    connection = await Connection.open(stack.api_url)
    machine = Machine(stack)
    try:
        cpu0 = stack.cpu()
        sent = time.time()
        backfill_id = await launch(connection, launch_body(job, span=(first, last)))
        first_seen = None
        while True:
            data = (await gql(connection, body(PROGRESS, {"id": backfill_id})))["backfill"]
            if first_seen is None and data["counts"]["succeeded"]:
                first_seen = time.time() - sent
            if data["status"] == "COMPLETED_SUCCESS":
                break
            if data["status"] not in ("REQUESTED", "RUNNING"):
                raise RuntimeError(f"backfill ended {data['status']}")
            await asyncio.sleep(SLOW_POLL if first_seen is not None else FAST_POLL)
        seen = time.time() - sent
        cpu1 = stack.cpu()
        data = (await gql(connection, body(STATUS, {"id": backfill_id})))["backfill"]
    finally:
        await connection.close()
    last_end = max(stamp(e["node"]["endedAt"]) for e in data["runs"]["edges"]) - sent
    figures = {
        "runs/s to the last run's end": size / last_end,
        "runs/s to COMPLETED_SUCCESS (its endedAt)": size / (stamp(data["endedAt"]) - sent),
        "runs/s to COMPLETED_SUCCESS seen (0.2 s polls)": size / seen,
        "first run seen succeeded (s)": first_seen or float("nan"),
    }
    for role in cpu1:
        figures[f"CPU ms a run: {role}"] = (cpu1[role] - cpu0.get(role, 0.0)) / size * 1000
    return {**figures, **machine.figures()}


# -- launches, lists and key lists (the API alone) -----------------------------------------------


async def timed(connection: Connection, payload: bytes, stack: Stack) -> tuple[float, float]:
    """(wall ms, the API process's CPU ms) of one request."""
    cpu = stack.cpu()["api"]
    started = time.perf_counter()
    await gql(connection, payload)
    return (time.perf_counter() - started) * 1000, (stack.cpu()["api"] - cpu) * 1000


async def launches(stack: Stack, count: int, seconds: float) -> dict[str, float]:
    """One-partition launches one at a time (p50), launches/s from 8 clients, and the page of
    100 backfills (p50)."""
    machine = Machine(stack)
    connection = await Connection.open(stack.api_url)
    payload = launch_body("static", ["k00000"])
    try:
        for _ in range(50):
            await gql(connection, payload)
        one = [(await timed(connection, payload, stack))[0] for _ in range(count)]
        listed = [(await timed(connection, body(LIST), stack))[0] for _ in range(count)]
    finally:
        await connection.close()
    done = 0
    deadline = time.perf_counter() + seconds

    async def client() -> None:
        nonlocal done
        own = await Connection.open(stack.api_url)
        try:
            while time.perf_counter() < deadline:
                await gql(own, payload)
                done += 1
        finally:
            await own.close()

    cpu0, started = stack.cpu()["api"], time.perf_counter()
    await asyncio.gather(*(client() for _ in range(8)))
    took, cpu = time.perf_counter() - started, stack.cpu()["api"] - cpu0
    return {
        "launch, 1 partition, p50 ms": statistics.median(one),
        "launches/s, 8 clients": done / took,
        "API CPU ms a launch, 8 clients": cpu / max(1, done) * 1000,
        "backfills(first: 100), p50 ms": statistics.median(listed),
        **machine.figures(),
    }


async def add_dynamic_keys(stack: Stack, name: str, keys: list[str]) -> None:
    connection = await Connection.open(stack.api_url)
    try:
        for i in range(0, len(keys), 1000):
            variables = {"input": {"name": name, "keys": keys[i : i + 1000]}}
            data = (await gql(connection, body(ADD_DYNAMIC, variables)))["addDynamicPartitions"]
            if data["userErrors"]:
                raise RuntimeError(str(data["userErrors"]))
    finally:
        await connection.close()


async def key_list(stack: Stack, job: str, keys: list[str], count: int) -> dict[str, float]:
    """Launches of all ``keys`` and of their first alone, taken in turn: p50 wall time of
    each and the API process's CPU per launch (summed over the launches)."""
    many, one = launch_body(job, keys), launch_body(job, keys[:1])
    connection = await Connection.open(stack.api_url)
    walls: dict[int, list[float]] = {1: [], len(keys): []}
    cpus: dict[int, float] = {1: 0.0, len(keys): 0.0}
    try:
        for payload in (one, many):  # warm-up
            await gql(connection, payload)
        for _ in range(count):
            for size, payload in ((1, one), (len(keys), many)):
                wall, cpu = await timed(connection, payload, stack)
                walls[size].append(wall)
                cpus[size] += cpu
    finally:
        await connection.close()
    n = len(keys)
    p_many, p_one = statistics.median(walls[n]), statistics.median(walls[1])
    return {
        f"{n:,} keys, p50 ms": p_many,
        "1 key, p50 ms": p_one,
        "ratio": p_many / p_one,
        f"API CPU ms, {n:,} keys": cpus[n] / count,
        "API CPU ms, 1 key": cpus[1] / count,
        "API CPU us a key beyond the first": (cpus[n] - cpus[1]) / count / (n - 1) * 1000,
    }


# -- assets --------------------------------------------------------------------------------------


async def asset_chain(stack: Stack, days_count: int) -> dict[str, float] | None:
    """The asset chain of ``bench/stack_defs.py`` (each level depending on the one before) over
    ``days_count`` days, with everything downstream: when the first run started and ended, and
    runs/s to COMPLETED_SUCCESS. None for a release without assets."""
    first, last = days(0, days_count)[0], days(0, days_count)[-1]
    target = {"assets": {"names": ["level0"], "downstream": True}}
    variables = {
        "input": {"target": target, "partitions": {"range": {"start": first, "end": last}}}
    }
    connection = await Connection.open(stack.api_url)
    try:
        sent = time.time()
        answer = await connection.post("/graphql/v1", body(LAUNCH, variables))
        if answer.get("errors") or answer["data"]["launchBackfill"]["backfill"] is None:
            return None
        backfill_id = answer["data"]["launchBackfill"]["backfill"]["id"]
        total = answer["data"]["launchBackfill"]["backfill"]["counts"]["total"]
        first_seen = None
        while True:
            data = (await gql(connection, body(STATUS, {"id": backfill_id})))["backfill"]
            if first_seen is None and data["counts"]["succeeded"]:
                first_seen = data
            if data["status"] == "COMPLETED_SUCCESS":
                break
            await asyncio.sleep(FAST_POLL)
    finally:
        await connection.close()
    assert first_seen is not None
    runs = [e["node"] for e in first_seen["runs"]["edges"]]
    return {
        "first run started (s)": min(stamp(r["startedAt"]) for r in runs if r["startedAt"]) - sent,
        "first run ended (s)": min(stamp(r["endedAt"]) for r in runs if r["endedAt"]) - sent,
        "runs": total,
        "launch to COMPLETED_SUCCESS (s)": stamp(data["endedAt"]) - sent,
    }
