"""How long the ``backfiller`` command takes to start, with the entry point that loads only
what a command needs (``backfiller_client.cli.entry``) beside the one before it (which loaded
the whole command, the server's included, for every command line).

Each command line runs ``BENCH_RUNS`` times (default 15) with each entry point, in turn; the
median wall time of each is printed, with the load average. A client command runs against a
port where nothing listens (it fails at once with exit 3): the time is the command's own.
Run with ``python -m bench.cli_start``. Not a test: it asserts nothing.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

from bench.launch import REPO, free_port

NEW = "from backfiller_client.cli.entry import main; main()"
OLD = (
    "import sys; from backfiller_client.cli.app import app, register_server_commands; "
    "register_server_commands(sys.argv[1:]); app()"
)


def lines() -> list[list[str]]:
    nowhere = f"http://127.0.0.1:{free_port()}"
    return [
        ["--version"],
        ["jobs", "--url", nowhere],
        ["-o", "json", "list", "--url", nowhere],
        ["jobs", "--help"],
        ["--help"],
    ]


def seconds(code: str, argv: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, *argv], env=env, capture_output=True, check=False)
    return time.perf_counter() - began


def main(runs: int) -> None:
    print(f"load average at the start: {os.getloadavg()[0]:.2f}; {runs} runs each")
    for argv in lines():
        # The command before refused the client's options before the command: given after.
        old_argv = [*argv[2:], "-o", "json"] if argv[:2] == ["-o", "json"] else argv
        new: list[float] = []
        old: list[float] = []
        for _ in range(runs):
            new.append(seconds(NEW, argv))
            old.append(seconds(OLD, old_argv))
        shown = " ".join(a if "127.0.0.1" not in a else "URL" for a in argv)
        print(
            f"backfiller {shown:<28} new {statistics.median(new):5.2f} s"
            f"   before {statistics.median(old):5.2f} s"
        )
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main(int(os.environ.get("BENCH_RUNS", "15")))
