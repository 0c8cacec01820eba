"""The map is total: every module of ``backfiller/`` is named by an import-linter contract of
``pyproject.toml`` (itself or a package above it), so that none can import, or be imported by,
anything unchecked; and only ``storage`` may import SQLAlchemy (every other top-level module is
a source of the contract that forbids it)."""

from __future__ import annotations

import tomllib
from typing import Any

from tests.support import REPO

ROOT = "backfiller"


def _contracts() -> list[dict[str, Any]]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    contracts: list[dict[str, Any]] = config["contracts"]
    return contracts


def _modules() -> list[str]:
    """Every module of the package, by its dotted name (a package by its own)."""
    found = []
    for path in sorted((REPO / ROOT).rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if "migrations" in parts:  # Alembic's scripts: loaded by Alembic, never imported
            parts = parts[: parts.index("migrations") + 1]
        if parts[-1] == "__init__":
            parts.pop()
        found.append(".".join(parts))
    return sorted(set(found))


def _named(contract: dict[str, Any]) -> set[str]:
    """The modules a contract names (a layer ``a | b`` names both, within its containers)."""
    names: set[str] = set()
    for layer in contract.get("layers", []):
        for part in layer.split("|"):
            names.update(f"{c}.{part.strip()}" for c in contract.get("containers", [""]))
    for key in ("source_modules", "ancestors"):
        names.update(contract.get(key, []))
    return {n.lstrip(".") for n in names}


def _covered(module: str, named: set[str]) -> bool:
    if module == ROOT:
        return ROOT in named
    parts = module.split(".")
    return any(".".join(parts[:i]) in named for i in range(2, len(parts) + 1))


def test_the_walk_finds_the_package() -> None:
    modules = _modules()
    assert {"backfiller", "backfiller.storage.records", "backfiller.domain.retries"} <= set(modules)
    assert "backfiller.storage.migrations" in modules
    assert not any(".versions." in m for m in modules)


def test_every_module_is_named_by_a_contract() -> None:
    named: set[str] = set()
    for contract in _contracts():
        if contract["type"] != "acyclic_siblings":  # names every module: proves nothing
            named |= _named(contract)
    assert [m for m in _modules() if not _covered(m, named)] == []


def test_only_storage_may_import_sqlalchemy() -> None:
    (contract,) = [c for c in _contracts() if c["id"] == "sql-in-storage-only"]
    assert contract["forbidden_modules"] == ["sqlalchemy"]
    top = {m.split(".")[1] for m in _modules() if m != ROOT}
    sources = {s.removeprefix(f"{ROOT}.") for s in contract["source_modules"]}
    assert sources == top - {"storage"}
