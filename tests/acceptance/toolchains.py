"""The toolchains of the generated Go and Java clients' tests: found, or a clear skip on a
developer's machine; never a skip on CI (CI=true), where .ci/run installs them."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def require(what: str, present: bool, install: str) -> None:
    if present:
        return
    message = f"{what} is missing: install {install} (.ci/run does on Debian)"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI must run this test: {message}")
    pytest.skip(message)


def executable(name: str, install: str) -> str:
    found = shutil.which(name)
    require(name, found is not None, install)
    assert found is not None
    return found


def require_path(path: Path, install: str) -> Path:
    require(str(path), path.exists(), install)
    return path


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 600) -> str:
    """Run a toolchain command; fail the test with its output when it fails."""
    done = subprocess.run(
        args,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout
