"""The import rules of ``docs/architecture.md``, as declared in ``pyproject.toml``
(``[tool.importlinter]``), checked with import-linter's command: one test per contract, so a
broken rule names itself and shows the offending import chain."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.support import REPO

CONTRACTS: list[str] = [
    c["id"]
    for c in tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"
    ]
]

# Contracts that work in flight elsewhere will keep (the imports they forbid are still here).
PENDING: dict[str, str] = {}  # contract id -> why it does not hold yet (a strict xfail)

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


@pytest.mark.parametrize(
    "contract",
    [
        pytest.param(c, marks=pytest.mark.xfail(reason=PENDING[c], strict=True))
        if c in PENDING
        else c
        for c in CONTRACTS
    ],
)
def test_imports_keep_the_contract(contract: str) -> None:
    found = subprocess.run(
        [str(LINT_IMPORTS), "--no-logo", "--no-cache", "--contract", contract],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert found.returncode == 0, found.stdout + found.stderr
