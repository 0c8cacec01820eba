"""Live ``backfiller`` processes forked from preloaded Pythons, two per test process.

The suite starts about 370 real servers and daemons (``tests.support.LiveProcess``). Each
``python -m backfiller ...`` paid for a new interpreter and for importing the command line,
storage, SQLAlchemy and the daemon before doing anything, and ``serve`` then replaced itself
with a second new interpreter that imported the web application: about 1 s of CPU a start, a
third of the suite's CPU. A launchpad is a Python process that imports those modules once
(:func:`preload`) and then forks a child for each start. The child is the process the test
gets: it sets the environment, directory, ``sys.path`` and output the command would have had,
runs ``backfiller.__main__`` exactly as ``python -m backfiller ARGS`` does, and exits with its
status.

Two launchpads, because two things must be imported after a variable is set: the command
launchpad never imports prometheus_client (a Celery worker sets ``PROMETHEUS_MULTIPROC_DIR``
first), and the server launchpad, which has the web application imported for ``serve``, never
imports ``web/protocol.py`` (it reads ``BACKFILLER_CLIENT_TIMEOUT``). In the server
launchpad's children, ``serve``'s exec of its server process (``web/serving.py``) is taken in
place: the same process goes on as the server, as the exec would, without a new interpreter.
What only a new interpreter shows (the server's memory map without the command line's
libraries) is tested with ``fresh=True``, and ``serve --workers N`` and a traced ``serve``
exec for real (:func:`choose`).

A test holds a :class:`PadChild`: the part of :class:`subprocess.Popen` the tests use (pid,
poll, wait, signals, returncode). A launchpad reaps its children as they end and answers for
their status. ``BACKFILLER_TEST_FRESH_PROCESSES=1`` makes every live process a plain
``subprocess.Popen`` again (``tests/support.py``), to compare or to rule the launchpads out.

Run as ``python -m tests.launchpad command|server``: requests and answers are JSON lines on
its standard input and output.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from backfiller.web.serving import SERVER_MODULE  # what serve's exec_server runs

# What a daemon, a worker and the command phase of `serve` import (the web application is the
# server launchpad's alone, below): these modules, and every module of these packages (one
# level down). Never prometheus_client, nor what
# imports it (the daemon's package, the metrics modules): it reads PROMETHEUS_MULTIPROC_DIR as
# it is imported, and a Celery worker or an API worker sets that variable first
# (observability/). The launchpad refuses to start if one slips in.
PRELOAD = (
    "backfiller.cli.app",
    "backfiller.cli.daemon",
    "backfiller.cli.server",
    "backfiller.cli.database",
    "backfiller.cli.worker",
    "backfiller.launchers.registry",
    "backfiller.launchers.local",
    "backfiller.launchers.celery",
    "backfiller.storage.migrations",
    "backfiller.notify.delivery",
    "backfiller.notify.payloads",
    "backfiller.observability.process",
    "backfiller.observability.health",
    "backfiller.observability.worker_metrics",
    "backfiller.web.serving",
    "backfiller.web.workers",
    "backfiller.web.oidc_claims",
    "backfiller_client.cli.entry",
    "sqlalchemy.dialects.sqlite",
    "aiosqlite",
    "jsonschema",
    "uvloop",
    "multiprocessing.forkserver",
)
PRELOAD_PACKAGES = (
    "backfiller.storage",
    "backfiller.storage.execution",
    "backfiller.services",
    "backfiller.planning",
    "backfiller.definitions",
    "backfiller.domain",
)
NEVER = ("prometheus_client",)

# The server's launchpad: `backfiller serve` (one process, no tracing) replaces itself with the
# server process (web/serving.py's exec_server); a child of this launchpad takes that step in
# place instead (_run_child), with the web application already imported. Never
# web/protocol.py: it reads BACKFILLER_CLIENT_TIMEOUT as it is imported. prometheus_client is
# imported here, so `serve --workers N`, whose processes set PROMETHEUS_MULTIPROC_DIR, starts
# from the command launchpad (choose).
SERVER_PRELOAD = ("backfiller.web.app", "uvicorn", "uvicorn.supervisors")
SERVER_NEVER = ("backfiller.web.protocol",)


def preload(kind: str) -> None:
    """Import what the ``kind`` launchpad preloads (and nothing it must not)."""
    import pkgutil

    names = list(PRELOAD) + list(SERVER_PRELOAD if kind == "server" else ())
    for package in PRELOAD_PACKAGES:
        path = importlib.import_module(package).__path__
        names += [f"{package}.{m.name}" for m in pkgutil.iter_modules(path) if not m.ispkg]
    for name in names:
        importlib.import_module(name)
    never = SERVER_NEVER if kind == "server" else NEVER
    slipped = [name for name in never if name in sys.modules]
    if slipped:
        raise SystemExit(f"the {kind} launchpad must not preload {slipped} (tests/launchpad.py)")


def choose(argv: list[str], env: dict[str, str]) -> str:
    """Which launchpad starts ``python -m backfiller *argv`` with ``env``."""
    traced = env.get("BACKFILLER_OTLP_ENDPOINT") or any("otlp" in a for a in argv)
    shared_metrics = env.get("PROMETHEUS_MULTIPROC_DIR") or "--workers" in argv
    if argv[:1] == ["serve"] and not shared_metrics and not traced:
        return "server"
    return "command"


# --- the test's side ----------------------------------------------------------------------


class PadChild:
    """A process the launchpad forked: what the tests use of :class:`subprocess.Popen`."""

    def __init__(self, pad: Launchpad, pid: int, args: list[str]) -> None:
        self.pad = pad
        self.pid = pid
        self.args = args
        self.returncode: int | None = None
        self.stdout = self.stderr = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.pad.status(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            time.sleep(0.02)
        return code

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):  # it has just ended
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Launchpad:
    """The test process's end of its launchpad, started on first use."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.lock = threading.Lock()
        self.proc: subprocess.Popen[str] | None = None

    def _ask(self, request: dict[str, Any]) -> Any:
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "tests.launchpad", self.kind],
                    cwd=Path(__file__).resolve().parent.parent,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                )
                atexit.register(self.close)
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            answer = self.proc.stdout.readline()
        if not answer:
            raise RuntimeError("the test launchpad ended")
        return json.loads(answer)

    def close(self) -> None:
        """End the launchpad (its input ends; its children live on until their tests stop
        them)."""
        if self.proc is None:
            return
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()

    def start(self, argv: list[str], env: dict[str, str], cwd: Path, log: Path) -> PadChild:
        """``python -m backfiller *argv`` in ``cwd`` with exactly ``env``, its output to ``log``."""
        pid = self._ask({"start": argv, "env": env, "cwd": str(cwd), "log": str(log)})
        return PadChild(self, int(pid), argv)

    def status(self, pid: int) -> int | None:
        """The exit code of a child that ended (negative: the signal), or None."""
        answer = self._ask({"status": pid})
        return None if answer is None else int(answer)


LAUNCHPADS = {kind: Launchpad(kind) for kind in ("command", "server")}


def start(argv: list[str], env: dict[str, str], cwd: Path, log: Path) -> PadChild:
    """``python -m backfiller *argv``, forked from the launchpad that suits it."""
    return LAUNCHPADS[choose(argv, env)].start(argv, env, cwd, log)


# --- the launchpad's side -----------------------------------------------------------------


def _python_path(env: dict[str, str], cwd: str, base: list[str]) -> list[str]:
    """``sys.path`` as ``python -m`` computes it for ``cwd`` and ``env``'s PYTHONPATH."""
    extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    return [cwd, *extra, *base]


class _BecomeServer(BaseException):
    """``serve`` replacing itself with its server process (past typer's handlers)."""


def _exec_in_place(execv: Callable[..., Any]) -> Callable[..., Any]:
    """``os.execv`` for a server launchpad's child: the server process's exec becomes
    :class:`_BecomeServer` (the child goes on as that process, its modules already imported);
    any other exec is a real one."""

    def in_place(path: str, argv: list[str]) -> None:
        if list(argv[1:]) == ["-m", SERVER_MODULE]:
            raise _BecomeServer
        execv(path, argv)

    return in_place


def _run_child(request: dict[str, Any], base_path: list[str], kind: str) -> None:
    """In the forked child: become ``python -m backfiller ARGS`` and exit with its status."""
    code = 1
    try:
        for sig in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as a new Python has it
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})  # blocked for the fork
        null = os.open(os.devnull, os.O_RDONLY)
        out = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.closerange(3, 1 << 16)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.path[:] = _python_path(request["env"], request["cwd"], base_path)
        importlib.invalidate_caches()
        for name in [m for m in sys.modules if m == "tests" or m.startswith("tests.")]:
            del sys.modules[name]  # importable only as the child's own sys.path allows
        encoding = sys.__stdout__.encoding if sys.__stdout__ else "utf-8"
        sys.stdin = open(0, encoding=encoding, closefd=False)  # noqa: SIM115
        line_buffered = bool(os.environ.get("PYTHONUNBUFFERED"))
        sys.stdout = open(  # noqa: SIM115
            1, "w", encoding=encoding, closefd=False, buffering=1 if line_buffered else -1
        )
        sys.stderr = open(  # noqa: SIM115
            2, "w", encoding=encoding, errors="backslashreplace", closefd=False, buffering=1
        )
        sys.argv = ["-m", *request["start"]]
        if kind == "server":
            os.execv = _exec_in_place(os.execv)
        import runpy

        try:
            try:
                runpy.run_module("backfiller", run_name="__main__", alter_sys=True)
            except _BecomeServer:  # serve's exec_server, in this launchpad's child
                gc.collect()  # the command's leftovers (its engine's connections)
                importlib.import_module(SERVER_MODULE).main()
            code = 0
        except SystemExit as ended:
            code = _exit_code(ended.code)
        threading._shutdown()  # type: ignore[attr-defined]  # what interpreter exit does
        atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # a closed stream has nothing left to flush
                stream.flush()
        os._exit(code)


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def serve(kind: str) -> None:
    """The ``kind`` launchpad's loop: preload, then one JSON request per line until its input
    ends."""
    own = {"", os.getcwd(), *os.environ.get("PYTHONPATH", "").split(os.pathsep)}
    base_path = [p for p in sys.path if p not in own]  # the site's (_python_path)
    preload(kind)
    gc.collect()
    gc.freeze()
    ended: dict[int, int] = {}

    def reap(*_: Any) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            ended[pid] = os.waitstatus_to_exitcode(status)

    signal.signal(signal.SIGCHLD, reap)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl+C is the test run's to handle
    answers = os.fdopen(os.dup(1), "w")
    for line in sys.stdin:
        request = json.loads(line)
        if "start" in request:
            sys.stdout.flush()
            sys.stderr.flush()
            # Reaping waits until the new pid's stale status (an ended child's, pids are
            # reused) is gone: a child that ends at once keeps its own.
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
            pid = os.fork()
            if pid == 0:
                _run_child(request, base_path, kind)
            ended.pop(pid, None)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
            answer: Any = pid
        else:
            reap()
            answer = ended.get(int(request["status"]))
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    serve(sys.argv[1])
