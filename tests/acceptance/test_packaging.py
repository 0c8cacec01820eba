"""The two distributions, built by one command (``uv build --all-packages``) and installed into
clean virtual environments, as a user would install them:

- ``backfiller-client`` alone brings httpx, typer and rich, nothing of the server, and drives a
  live server with its CLI and its Python client; a server command says how to get the server;
- ``backfiller`` (the server) from its sdist runs ``backfiller dev`` with the UI assets, and
  from its wheel reports the version written in one place.

Dependencies come from the package index (or uv's cache) at the versions of ``uv.lock``;
Backfiller itself only from the local build.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import httpx
import pytest

from tests.support import REPO, LiveServer, answers, free_port

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

# Distributions the server needs and the client must not bring.
SERVER_ONLY = (
    "aiosqlite",
    "alembic",
    "croniter",
    "graphql-core",
    "jsonschema",
    "psycopg",
    "sqlalchemy",
    "starlette",
    "strawberry-graphql",
    "uvicorn",
    "websockets",
)


def uv() -> str:
    found = Path(sys.executable).parent / "uv"
    if found.exists():
        return str(found)
    on_path = shutil.which("uv")
    if on_path is None:
        if os.environ.get("CI"):
            pytest.fail("uv is missing: make bootstrap installs it into .venv")
        pytest.skip("uv is not installed (make bootstrap installs it into .venv)")
    return on_path


def run(*args: str, cwd: Path = REPO, timeout: float = 300) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{args}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    run(uv(), "build", "--all-packages", "--quiet", "--out-dir", str(out))
    return out


def venv_with(tmp: Path, name: str, dist: Path, *targets: str, package: str) -> Path:
    """A clean virtual environment with ``targets`` installed from ``dist``, and their
    dependencies at the locked versions of ``package``."""
    constraints = tmp / f"{name}-constraints.txt"
    constraints.write_text(
        run(
            uv(),
            "export",
            "--frozen",
            "--no-hashes",
            "--no-emit-workspace",
            "--no-dev",
            "--package",
            package,
        )
    )
    venv = tmp / name
    run(uv(), "venv", "--quiet", "--python", sys.executable, str(venv))
    run(uv(), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"),
        "--find-links", str(dist), "--constraint", str(constraints), *targets)  # fmt: skip
    return venv


def installed(venv: Path) -> set[str]:
    frozen = run(uv(), "pip", "freeze", "--python", str(venv / "bin" / "python"))
    return {line.split("==")[0].split(" @ ")[0].lower() for line in frozen.splitlines() if line}


def test_the_client_installs_alone_and_drives_a_live_server(
    dist: Path, tmp_path: Path, database_url: str
) -> None:
    venv = venv_with(tmp_path, "client", dist, "backfiller-client", package="backfiller-client")
    found = installed(venv)
    assert "backfiller-client" in found and {"httpx", "typer", "rich"} <= found
    assert found.isdisjoint({*SERVER_ONLY, "backfiller"}), found & {*SERVER_ONLY, "backfiller"}
    backfiller = str(venv / "bin" / "backfiller")
    python = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BACKFILLER", "PYTHON"))}

    # A server command says what is missing, and how to get it.
    serve = subprocess.run(
        [backfiller, "serve", "--port", "1"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert serve.returncode == 2
    assert "client only" in serve.stderr and "pip install backfiller" in serve.stderr

    server = LiveServer(database_url, command="dev", extra=["--workers", "1"], cwd=tmp_path)
    try:
        cli = {**env, "BACKFILLER_URL": server.url}
        launched = subprocess.run(
            [
                backfiller,
                "launch",
                "region_report",
                "--all",
                "--config",
                '{"currency": "EUR"}',
                "--wait",
                "--interval",
                "0.2",
                "-o",
                "json",
            ],
            capture_output=True,
            text=True,
            env=cli,
            cwd=tmp_path,
            timeout=120,
        )
        assert launched.returncode == 0, launched.stderr
        backfill_id = json.loads(launched.stdout.splitlines()[0])["id"]
        shown = subprocess.run(
            [backfiller, "show", backfill_id, "-o", "json"],
            capture_output=True,
            text=True,
            env=cli,
            cwd=tmp_path,
            timeout=60,
        )
        assert json.loads(shown.stdout)["backfill"]["status"] == "COMPLETED_SUCCESS"

        script = """
import sys
import backfiller_client as bc

with bc.Client(sys.argv[1]) as client:
    request = bc.BackfillRequest(job="region_report", partitions=bc.PartitionKeys(["emea"]),
                                 reprocess="ALL")
    assert client.preview_backfill(request).runs == 1
    done = client.wait(client.launch_backfill(request).id, poll_interval=0.2)
    assert done.status is bc.BackfillStatus.COMPLETED_SUCCESS, done.status
    try:
        client.launch_backfill(bc.BackfillRequest(job="nope", partitions=bc.AllPartitions()))
    except bc.BackfillerUserError as refused:
        print(refused.codes[0])
"""
        driven = subprocess.run(
            [python, "-c", script, server.url],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )
        assert driven.returncode == 0, driven.stderr
        assert driven.stdout.strip() == "JOB_NOT_FOUND"
    finally:
        server.stop()


def wait_healthy(url: str, process: subprocess.Popen[bytes], log: IO[str]) -> None:
    # The first start of a fresh environment compiles every module: allow for a slow machine.
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert process.poll() is None, Path(log.name).read_text()
        if answers(f"{url}/healthz"):
            return
        time.sleep(0.2)
    pytest.fail(f"backfiller dev did not start: {Path(log.name).read_text()}")


def test_the_server_installs_from_its_sdist_and_wheel_and_runs_dev_with_the_ui(
    dist: Path, tmp_path: Path
) -> None:
    [sdist] = dist.glob("backfiller-*.tar.gz")
    [client_wheel] = dist.glob("backfiller_client-*.whl")
    [wheel] = dist.glob("backfiller-*.whl")
    from backfiller_client import __version__ as version

    assert f"-{version}" in wheel.name and f"-{version}" in sdist.name

    from_wheel = venv_with(
        tmp_path, "wheel", dist, str(wheel), str(client_wheel), package="backfiller"
    )
    assert run(str(from_wheel / "bin" / "backfiller"), "--version") == f"backfiller {version}\n"

    from_sdist = venv_with(
        tmp_path, "sdist", dist, str(sdist), str(client_wheel), package="backfiller"
    )
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BACKFILLER", "PYTHON"))}
    url = f"http://127.0.0.1:{port}"
    with (tmp_path / "dev.log").open("w+") as log:
        dev = subprocess.Popen(
            [str(from_sdist / "bin" / "backfiller"), "dev", "--port", str(port), "--workers", "1"],
            cwd=tmp_path,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_healthy(url, dev, log)
            page = httpx.get(f"{url}/", timeout=10)
            assert page.status_code == 200 and "<html" in page.text.lower()
            for asset in ("/ui/app.css", "/ui/js/main.js", "/ui/operations.graphql"):
                assert httpx.get(f"{url}{asset}", timeout=10).status_code == 200, asset
        finally:
            dev.terminate()
            dev.wait(30)


def test_a_checkout_installs_with_pip_as_the_readme_says(tmp_path: Path) -> None:
    """``pip install ./clients/python .`` in a clean virtual environment (the README's
    command): pip finds the client the server depends on beside it, with no index holding it.
    The checkout is copied first, so that the build leaves nothing in the real one."""
    checkout = tmp_path / "checkout"
    tracked = run("git", "ls-files", "-z").split("\0")
    for name in filter(None, tracked):
        source = REPO / name
        if source.is_file():
            target = checkout / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", str(venv))
    pip = str(venv / "bin" / "pip")
    # The README's command; --no-compile only skips writing bytecode for every dependency (a
    # third of the test's CPU), which changes neither what is resolved nor what is installed.
    run(
        pip,
        "install",
        "--quiet",
        "--no-compile",
        "./clients/python",
        ".",
        cwd=checkout,
        timeout=900,
    )
    found = installed(venv)
    assert {"backfiller", "backfiller-client", "sqlalchemy", "httpx"} <= found
    version = run(str(venv / "bin" / "backfiller"), "--version", cwd=tmp_path)
    assert version.startswith("backfiller ")
    imported = run(
        str(venv / "bin" / "python"),
        "-c",
        "import backfiller, backfiller_client; print(backfiller.__version__)",
        cwd=tmp_path,
    )
    assert imported.strip() == version.split()[1]
