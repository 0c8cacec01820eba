"""The processes of ``bench.stack``: a checkout of the code, and the service it runs.

A :class:`Checkout` is a tree of Backfiller with its own Python: this repository (the code
under test), or an older revision built by :func:`checkout_of` in a ``git worktree`` with its
own virtual environment (``uv sync --locked`` from that revision's lock file). A :class:`Stack`
is what a user runs, started through the command line of a checkout: ``backfiller serve``,
``backfiller daemon`` (its local worker pool, or the Celery launcher with ``backfiller
worker`` processes), on a database given by URL. The benchmark's definitions
(``bench/stack_defs.py``) are copied into a folder of their own on ``PYTHONPATH``, so every
checkout runs the same jobs and none sees the other's code.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench.proc_cpu import children_cpu, database_cpu, process_cpu

REPO = Path(__file__).resolve().parent.parent
DEFS_MODULE = "bench_stack_defs"
TARGET = f"{DEFS_MODULE}:definitions"
START_TIMEOUT = 120.0


@dataclass(frozen=True)
class Checkout:
    """A tree of the code and the Python that runs it."""

    label: str
    root: Path
    python: str
    defs_dir: Path

    def env(self, **extra: str) -> dict[str, str]:
        paths = [str(self.defs_dir)] + ([str(self.root)] if self.root == REPO else [])
        env = {k: v for k, v in os.environ.items() if not k.startswith("BACKFILLER_")}
        env.pop("VIRTUAL_ENV", None)
        return {**env, "PYTHONPATH": os.pathsep.join(paths), **extra}

    def command(self, *args: str) -> list[str]:
        return [self.python, "-m", "backfiller", *args]

    @functools.cached_property
    def options(self) -> dict[str, str]:
        """The ``--help`` text of each command this checkout has (options differ by release)."""
        found = {}
        for name in ("serve", "daemon", "worker"):
            done = subprocess.run(
                self.command(name, "--help"),
                capture_output=True,
                text=True,
                env=self.env(),
                cwd=self.root,
            )
            found[name] = done.stdout if done.returncode == 0 else ""
        return found

    def has(self, command: str, option: str = "") -> bool:
        text_ = self.options.get(command, "")
        return bool(text_) and option in text_


def _copy_defs(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(Path(__file__).with_name("stack_defs.py"), folder / f"{DEFS_MODULE}.py")
    return folder


# The project's own modules, compiled before a measurement as `make test` compiles them: where
# PYTHONDONTWRITEBYTECODE is set (as on this machine), a module without its bytecode is
# compiled again by every process that imports it, and only the checkout without it would pay.
SOURCES = ("backfiller", "clients/python")


def compiled(root: Path, python: str) -> None:
    """The bytecode of the checkout's own modules, written beside them."""
    subprocess.run([python, "-m", "compileall", "-q", *SOURCES], cwd=root, check=True)


def this_checkout(folder: Path) -> Checkout:
    """The code of this repository, run by this Python."""
    compiled(REPO, sys.executable)
    return Checkout("this", REPO, sys.executable, _copy_defs(folder / "defs-this"))


@contextlib.contextmanager
def checkout_of(revision: str, folder: Path) -> Iterator[Checkout]:
    """``revision`` in a temporary ``git worktree`` with its own virtual environment."""
    tree = folder / f"tree-{revision}"
    subprocess.run(
        ["git", "worktree", "add", "--detach", "--quiet", str(tree), revision],
        cwd=REPO,
        check=True,
    )
    try:
        uv = Path(sys.executable).parent / "uv"
        env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
        subprocess.run(
            [str(uv), "sync", "--locked", "--quiet", "--compile-bytecode"],
            cwd=tree,
            check=True,
            env=env,
        )
        short = subprocess.run(
            ["git", "rev-parse", "--short", revision], cwd=REPO, capture_output=True, text=True
        ).stdout.strip()
        defs = _copy_defs(folder / f"defs-{revision}")
        python = str(tree / ".venv" / "bin" / "python")
        compiled(tree, python)
        yield Checkout(short or revision, tree, python, defs)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO, check=False)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _get_ok(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


@dataclass
class Stack:
    """``serve`` and (unless ``daemon`` is False) ``daemon`` of a checkout on one database.

    ``launcher`` is ``local`` (``workers`` processes) or ``celery`` (``workers`` processes of
    ``backfiller worker --concurrency concurrency`` on ``broker``, on a queue of their own).
    """

    checkout: Checkout
    database_url: str
    folder: Path
    daemon: bool = True
    daemons: int = 1
    """How many ``backfiller daemon`` processes share the database (``daemon``, ``daemon2``...)."""
    workers: int = 2
    launcher: str = "local"
    broker: str = ""
    concurrency: int = 4
    api_url: str = ""
    ready_after: float = 0.0
    """Seconds from starting the daemon to its readiness (its ``/readyz``, else its first line)."""
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    celery: list[subprocess.Popen[bytes]] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)

    def start(self) -> Stack:
        c = self.checkout
        self.folder.mkdir(parents=True, exist_ok=True)
        queue = f"bench-{uuid.uuid4().hex[:8]}"
        # The key that daemons and workers sign the broker's messages with (releases without
        # signed messages ignore it).
        env = c.env(BACKFILLER_CELERY_QUEUE=queue, BACKFILLER_BROKER_KEY=secrets.token_hex(32))
        subprocess.run(
            c.command("db", "upgrade", "--database", self.database_url),
            check=True,
            capture_output=True,
            env=env,
            cwd=c.root,
        )
        port = free_port()
        serve = ["serve", "--definitions", TARGET, "--database", self.database_url]
        serve += ["--port", str(port)]
        serve += ["--auth", "none"] if c.has("serve", "--auth") else []
        serve += ["--rate-limit", "0"] if c.has("serve", "--rate-limit") else []
        self.procs["api"] = self._spawn("api", c.command(*serve), env)
        self.api_url = f"http://127.0.0.1:{port}"
        if self.launcher == "celery":
            self._start_celery(env)
        if self.daemon:
            for n in range(self.daemons):
                self._start_daemon(env, "daemon" if n == 0 else f"daemon{n + 1}")
        self._wait(lambda: _get_ok(f"{self.api_url}/healthz"), "the API")
        return self

    def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        log = self.folder / f"{name}-{uuid.uuid4().hex[:6]}.log"
        self.logs.append(log)
        # In the checkout's folder: ``python -m`` puts the working directory first on the path.
        return subprocess.Popen(
            args, env=env, cwd=self.checkout.root, stdout=log.open("wb"), stderr=subprocess.STDOUT
        )

    def _start_celery(self, env: dict[str, str]) -> None:
        args = ["worker", "--definitions", TARGET, "--broker", self.broker, "--loglevel", "INFO"]
        args += ["--concurrency", str(self.concurrency)]
        for i in range(self.workers):
            self.celery.append(self._spawn(f"celery{i}", self.checkout.command(*args), env))
        worker_logs = self.logs[-self.workers :]
        self._wait(lambda: all(b"ready." in p.read_bytes() for p in worker_logs), "Celery")

    def _start_daemon(self, env: dict[str, str], name: str = "daemon") -> None:
        c = self.checkout
        args = ["daemon", "--definitions", TARGET, "--database", self.database_url]
        if self.launcher == "celery":
            args += ["--launcher", "celery", "--broker", self.broker]
        else:
            args += ["--workers", str(self.workers)]
        metrics = free_port() if c.has("daemon", "--metrics-port") else None
        if metrics is not None:
            args += ["--metrics-port", str(metrics)]
        began = time.perf_counter()
        self.procs[name] = proc = self._spawn(name, c.command(*args), env)
        log = self.logs[-1]
        if metrics is not None:
            self._wait(lambda: _get_ok(f"http://127.0.0.1:{metrics}/readyz"), "the daemon")
        else:  # a release without /readyz: its line saying it runs
            self._wait(lambda: b"running with" in log.read_bytes(), "the daemon")
        self.ready_after = time.perf_counter() - began
        del proc

    def _wait(self, ready: object, what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while not ready():  # type: ignore[operator]
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited: {self.tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start: {self.tail()}")
            time.sleep(0.02)

    def settle(self, quiet: float = 0.5, limit: float = 30.0) -> float:
        """Wait until the daemon and its workers have used no CPU for ``quiet`` seconds (their
        start-up is over); the seconds waited."""
        began = time.perf_counter()
        last, since = self.cpu_total(), time.perf_counter()
        while time.perf_counter() - began < limit:
            time.sleep(0.1)
            now = self.cpu_total()
            if now - last > 0.011:  # more than one clock tick
                last, since = now, time.perf_counter()
            elif time.perf_counter() - since >= quiet:
                break
        return time.perf_counter() - began

    def pids(self) -> dict[str, int]:
        return {name: proc.pid for name, proc in self.procs.items()}

    def cpu(self) -> dict[str, float]:
        """CPU seconds so far: the API process, the daemon process, its workers (the local
        pool's processes, or the Celery workers with their pools), the PostgreSQL backends of
        the database."""
        out = {name: process_cpu(pid) for name, pid in self.pids().items()}
        daemon = self.procs.get("daemon")
        workers = children_cpu(daemon.pid) if daemon is not None else 0.0
        for proc in self.celery:
            workers += process_cpu(proc.pid) + children_cpu(proc.pid)
        out["workers"] = workers
        if not self.database_url.startswith("sqlite"):
            out["database"] = database_cpu(self.database_url)
        return out

    def cpu_total(self) -> float:
        return sum(v for k, v in self.cpu().items() if k != "api")

    def tail(self) -> str:
        return " | ".join(p.read_text(errors="replace")[-600:] for p in self.logs if p.exists())

    def stop(self) -> None:
        for proc in [*self.procs.values(), *self.celery]:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
        for proc in [*self.procs.values(), *self.celery]:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        for log in self.logs:
            log.unlink(missing_ok=True)


@contextlib.contextmanager
def running(stack: Stack) -> Iterator[Stack]:
    try:
        yield stack.start()
    finally:
        stack.stop()
