"""The README and docs/clients.md, run as written: every shell, Python and GraphQL block, in
document order, against a live ``backfiller dev`` (the quick start), so the docs cannot drift
from the product.

A block that cannot run here says why, on the line above it:
``<!-- docs-test: skip (the reason) -->``. Blocks marked ``text`` are not code (file trees).
The one liberty taken: the server listens on a free port, so ``http://127.0.0.1:8000`` in a
block becomes its address (and ``BACKFILLER_URL`` points there, as ``--url`` would).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import REPO, LiveServer

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

DOCS = ("README.md", "docs/clients.md")
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[a-z]*)\s*$")
SKIP = re.compile(r"<!-- docs-test: skip \((?P<reason>.+)\) -->")
RUNNABLE = frozenset({"sh", "python", "graphql"})
NOT_CODE = frozenset({"text"})
DOCS_URL = "http://127.0.0.1:8000"


@dataclass(frozen=True)
class Block:
    doc: str
    line: int
    lang: str
    code: str
    skip: str | None

    def __str__(self) -> str:
        return f"{self.doc}:{self.line} ({self.lang or 'no language'})"


def blocks(doc: str) -> list[Block]:
    """The fenced blocks of ``doc``, with the skip reason written above each, if any."""
    lines = (REPO / doc).read_text().splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent = len(opening["indent"])
        end = i + 1
        while not re.match(rf"^ {{{indent}}}```\s*$", lines[end]):
            end += 1
        code = "\n".join(line[indent:] for line in lines[i + 1 : end]) + "\n"
        marker = SKIP.search(lines[i - 1]) if i > 0 else None
        found.append(Block(doc, i + 1, opening["lang"], code, marker["reason"] if marker else None))
        i = end + 1
    return found


ALL_BLOCKS = [block for doc in DOCS for block in blocks(doc)]


def test_every_block_runs_or_says_why_not() -> None:
    assert ALL_BLOCKS
    unaccounted = [
        str(b)
        for b in ALL_BLOCKS
        if b.skip is None and b.lang not in RUNNABLE and b.lang not in NOT_CODE
    ]
    assert unaccounted == [], "give these a runnable language or a docs-test: skip reason"


def venv_bin() -> Path:
    return Path(sys.executable).parent


def without_venv(env: dict[str, str]) -> dict[str, str]:
    """The environment of a new terminal: the virtual environment is not active."""
    path = [p for p in env.get("PATH", "").split(os.pathsep) if Path(p) != venv_bin()]
    found = {k: v for k, v in env.items() if k != "VIRTUAL_ENV" and not k.startswith("BACKFILLER")}
    found["PATH"] = os.pathsep.join(path)
    return found


def run_shell(block: Block, code: str, env: dict[str, str]) -> None:
    # A terminal at the root of the checkout where the quick start's virtual environment was
    # activated (the README's own activation block runs without that line, and must work).
    activate = "" if "source .venv/bin/activate" in code else f"source {venv_bin()}/activate\n"
    if not (REPO / ".venv").exists():
        if os.environ.get("CI"):
            pytest.fail("CI runs make, which creates .venv at the root of the checkout")
        code = code.replace("source .venv/bin/activate", f"source {venv_bin()}/activate")
    done = subprocess.run(
        ["bash", "-c", "set -eo pipefail\n" + activate + code],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, f"{block} failed:\n{code}\n{done.stdout}\n{done.stderr}"


def run_python(block: Block, code: str, env: dict[str, str], cwd: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env={**env, "PATH": f"{venv_bin()}{os.pathsep}{env['PATH']}"},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, f"{block} failed:\n{code}\n{done.stdout}\n{done.stderr}"


def user_errors(value: Any) -> list[Any]:
    """Every non-empty ``userErrors`` list anywhere in a GraphQL answer."""
    if isinstance(value, dict):
        here = value.get("userErrors") or []
        return list(here) + [e for v in value.values() for e in user_errors(v)]
    if isinstance(value, list):
        return [e for v in value for e in user_errors(v)]
    return []


def run_graphql(block: Block, code: str, url: str) -> None:
    response = httpx.post(f"{url}/graphql/v1", json={"query": code}, timeout=60)
    body = response.json()
    assert response.status_code == 200 and "errors" not in body, f"{block}: {body}"
    assert user_errors(body["data"]) == [], f"{block}: {json.dumps(body)}"


# About 40 CLI processes one after another, and the example jobs' runs: about two minutes on
# CI, far more on a crowded machine.
@pytest.mark.timeout(900)
def test_the_docs_run_as_written_against_backfiller_dev(tmp_path: Path) -> None:
    # In a fresh folder, as a newcomer's checkout would be: the example trigger's landing
    # folder and the database start empty.
    server = LiveServer(
        f"sqlite:///{tmp_path}/dev.db", command="dev", extra=["--workers", "2"], cwd=tmp_path
    )
    env = {**without_venv(dict(os.environ)), "BACKFILLER_URL": server.url}
    ran: list[str] = []
    try:
        for block in ALL_BLOCKS:
            if block.skip is not None or block.lang not in RUNNABLE:
                continue
            code = block.code.replace(DOCS_URL, server.url)
            started = time.monotonic()
            if block.lang == "sh":
                run_shell(block, code, env)
            elif block.lang == "python":
                run_python(block, code, env, tmp_path)
            else:
                run_graphql(block, code, server.url)
            ran.append(str(block))
            print(f"{block}: {time.monotonic() - started:.1f} s")  # shown when the test fails
    finally:
        server.stop()
    assert len(ran) >= 10, ran
