"""No function over 60 lines without a reason written beside it.

A function may be longer when a comment ``# long: <reason>`` stands on its ``def`` line or on
the line just above it (above its decorators too). Alembic migrations are exempt: a migration
is one long list of operations, written once and never changed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = (REPO / "backfiller", REPO / "clients" / "python")
MAX_LINES = 60
MIGRATIONS = REPO / "backfiller" / "storage" / "migrations" / "versions"

# (file relative to the repository, function name): exemptions to drop when they are split.
EXEMPT: set[tuple[str, str]] = set()


def _python_files() -> Iterator[Path]:
    for root in ROOTS:
        for path in sorted(root.rglob("*.py")):
            parts = set(path.relative_to(REPO).parts)
            if parts & {".venv", "node_modules", "build", "dist"}:
                continue
            if path.is_relative_to(MIGRATIONS):
                continue
            yield path


def _has_reason(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    candidates = [lines[node.lineno - 1]]
    if first >= 2:
        candidates.append(lines[first - 2])
    return any("# long:" in line and line.split("# long:", 1)[1].strip() for line in candidates)


def long_functions(text: str, relative: str) -> list[str]:
    """``file:line name (N lines)`` of each function of ``text`` over the limit, unexplained."""
    lines = text.splitlines()
    found: list[str] = []
    for node in ast.walk(ast.parse(text, filename=relative)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        assert node.end_lineno is not None
        length = node.end_lineno - node.lineno + 1
        if length <= MAX_LINES or (relative, node.name) in EXEMPT or _has_reason(lines, node):
            continue
        found.append(f"{relative}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_function_is_over_60_lines_without_a_reason() -> None:
    files = list(_python_files())
    assert len(files) > 50  # the walk found the packages
    found = [
        f
        for path in files
        for f in long_functions(path.read_text(encoding="utf-8"), path.relative_to(REPO).as_posix())
    ]
    assert found == [], "split these, or write `# long: <reason>` on the def line:\n" + "\n".join(
        found
    )


def test_the_check_sees_long_functions_and_honours_a_written_reason() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES))
    source = (
        f"def long_one():\n{body}\n"
        f"async def also_long():  # long: a table of cases\n{body}\n"
        f"# long: one SQL statement, read top to bottom\n@decorated\ndef explained():\n{body}\n"
        f"# long:\ndef no_reason_given():\n{body}\n"
        "def short():\n    return 1\n"
    )
    assert long_functions(source, "probe.py") == [
        f"probe.py:1 long_one ({MAX_LINES + 1} lines)",
        f"probe.py:{3 * MAX_LINES + 10} no_reason_given ({MAX_LINES + 1} lines)",
    ]
