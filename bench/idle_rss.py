"""Benchmark of the idle memory of a server and of a daemon, side by side for two checkouts.

Prints the resident memory (VmRSS) of an idle ``backfiller serve`` (after it answered a launch
and a page of backfills, as ``bench.startup`` measures it) and of an idle ``backfiller daemon``
(one local worker, its own process only, a few seconds after it said it runs). With
``--before DIR`` (another checkout of the repository), the rounds alternate between that
checkout and this one, so a shared machine's noise falls on both alike. Run with
``python -m bench.idle_rss [--before DIR]`` (``BENCH_ROUNDS``, default 5). Not a test: it
asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.launch import MUTATION, REPO, free_port
from bench.startup import LIST, rss_mb, stop

DAEMON_SETTLE_SECONDS = 3.0


def env_for(checkout: Path) -> dict[str, str]:
    # Both packages of the checkout ahead of the installed ones.
    path = f"{checkout}{os.pathsep}{checkout / 'clients' / 'python'}"
    return {**os.environ, "PYTHONPATH": path}


def wait_healthy(proc: subprocess.Popen[bytes], port: int) -> None:
    with httpx.Client() as client:
        while True:
            try:
                if client.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited with {proc.returncode}")
            time.sleep(0.05)


def serve_rss(checkout: Path, database: str, cwd: Path) -> float:
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "backfiller",
        "serve",
        "--definitions",
        "bench.defs:definitions",
    ]
    command += ["--database", database, "--auth", "none", "--rate-limit", "0", "--port", str(port)]
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        env=env_for(checkout),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_healthy(proc, port)
        url = f"http://127.0.0.1:{port}/graphql/v1"
        launch = {"target": {"job": "single"}, "partitions": {"keys": ["only"]}}
        with httpx.Client() as client:
            client.post(url, json={"query": MUTATION, "variables": {"input": launch}})
            client.post(url, content=LIST, headers={"content-type": "application/json"})
        time.sleep(1.0)  # idle
        return rss_mb(proc.pid)
    finally:
        stop(proc)


def daemon_rss(checkout: Path, database: str, cwd: Path) -> float:
    command = [sys.executable, "-m", "backfiller", "daemon", "--definitions"]
    command += ["bench.defs:definitions", "--database", database, "--workers", "1"]
    proc = subprocess.Popen(
        command, cwd=cwd, env=env_for(checkout), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # the start-up line
            if b"running with" in line:
                break
        else:
            raise RuntimeError(f"the daemon exited with {proc.wait()}")
        time.sleep(DAEMON_SETTLE_SECONDS)
        return rss_mb(proc.pid)
    finally:
        stop(proc)


def measure(checkout: Path) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        database = f"sqlite:///{Path(tmp) / 'bench.db'}"
        upgrade = [sys.executable, "-m", "backfiller", "db", "upgrade", "--database", database]
        subprocess.run(
            upgrade, check=True, capture_output=True, env=env_for(checkout), cwd=checkout
        )
        # `python -m` puts the working directory first on the path: run in the checkout.
        return serve_rss(checkout, database, checkout), daemon_rss(checkout, database, checkout)


def spread(values: list[float]) -> str:
    return (
        f"p50 {statistics.median(values):6.1f} MB (rounds {min(values):.1f} to {max(values):.1f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", type=Path, help="another checkout, measured alternately")
    args = parser.parse_args()
    rounds = int(os.environ.get("BENCH_ROUNDS", "5"))
    checkouts = {"this": REPO} | ({"before": args.before.resolve()} if args.before else {})
    found: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in checkouts}
    for _ in range(rounds):
        for name, checkout in checkouts.items():
            serve, daemon = measure(checkout)
            found[name][0].append(serve)
            found[name][1].append(daemon)
    print(f"Idle memory (VmRSS), {rounds} rounds, alternating: {', '.join(checkouts)}")
    for name, (serve, daemon) in found.items():
        print(f"[{name:6}] idle backfiller serve:  {spread(serve)}")
        print(f"[{name:6}] idle backfiller daemon: {spread(daemon)}")


if __name__ == "__main__":
    main()
