"""The Go client (clients/go), generated with gqlclientgen: generated code current, built with
Debian's Go packages only (GOPATH mode, no module proxy), and run against live servers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.acceptance.client_support import DEFS, create_token
from tests.acceptance.toolchains import executable, require_path, run
from tests.support import REPO, LiveServer

pytestmark = pytest.mark.acceptance

PACKAGE = REPO / "clients" / "go"
GENERATED = PACKAGE / "backfiller" / "generated.go"
DEBIAN_GOCODE = Path("/usr/share/gocode")
INSTALL = "golang-go, gqlclient and golang-sourcehut-emersion-gqlclient-dev"


@pytest.fixture(scope="module")
def go() -> str:
    executable("gqlclientgen", INSTALL)
    require_path(DEBIAN_GOCODE / "src" / "git.sr.ht" / "~emersion" / "gqlclient", INSTALL)
    return executable("go", INSTALL)


def go_env(tmp: Path) -> dict[str, str]:
    """GOPATH mode over a private tree (the client under the import path
    backfiller/clients/go) and Debian's packaged sources: no network, no module proxy."""
    tree = tmp / "gopath" / "src" / "backfiller" / "clients"
    tree.mkdir(parents=True)
    (tree / "go").symlink_to(PACKAGE, target_is_directory=True)
    return {
        "GO111MODULE": "off",
        "GOPATH": f"{tmp / 'gopath'}:{DEBIAN_GOCODE}",
        "GOCACHE": str(tmp / "gocache"),
        "GOPROXY": "off",
    }


def test_generated_code_is_current(go: str, tmp_path: Path) -> None:
    fresh = tmp_path / "generated.go"
    run(["sh", str(PACKAGE / "generate.sh"), str(fresh)], cwd=tmp_path)
    assert fresh.read_text() == GENERATED.read_text(), "run clients/go/generate.sh"
    # The drift check notices a stale operation document.
    stale = tmp_path / "stale.go"
    operations = PACKAGE / "operations.graphql"
    changed = tmp_path / "operations.graphql"
    changed.write_text(operations.read_text().replace("  title\n", "  title\n  description\n", 1))
    run(
        ["gqlclientgen", "-s", str(REPO / "schema.graphql"), "-q", str(changed), "-o",
         str(stale), "-n", "backfiller"],
        cwd=tmp_path,
    )  # fmt: skip
    assert "description" in stale.read_text().split("fragment GoBackfill", 1)[1][:200]


@pytest.fixture
def servers(database_url: str) -> Iterator[tuple[LiveServer, LiveServer]]:
    plain = LiveServer(database_url, DEFS)
    try:
        secured = LiveServer(database_url, DEFS, auth="token")
        try:
            yield plain, secured
        finally:
            secured.stop()
    finally:
        plain.stop()


def test_it_builds_and_works_against_a_live_server(
    go: str, tmp_path: Path, servers: tuple[LiveServer, LiveServer], database_url: str
) -> None:
    env = go_env(tmp_path)
    source = Path(env["GOPATH"].split(":")[0]) / "src" / "backfiller" / "clients" / "go"
    run([go, "vet", "./..."], cwd=source, env=env)
    binary = tmp_path / "livetest"
    run([go, "build", "-o", str(binary), "./livetest"], cwd=source, env=env)
    plain, secured = servers
    output = run(
        [str(binary)],
        cwd=tmp_path,
        env={
            "BACKFILLER_URL": plain.url,
            "BACKFILLER_AUTH_URL": secured.url,
            "BACKFILLER_TOKEN": create_token(database_url, "operator", name="go-operator"),
        },
        timeout=180,
    )
    steps = [line for line in output.splitlines() if line.startswith("ok ")]
    for step in ("launch all", "launch keys", "launch range", "preview", "read with counts",
                 "list with paging", "pause", "resume", "cancel", "retry",
                 "userErrors are typed", "a token", "no token is refused",
                 "unknown enum value tolerated", "JSON run config read back",
                 "DateTime is a time", "update", "update read back",
                 "update refuses a limit of 0", "mark a partition skipped",
                 "mark refuses a blank reason"):  # fmt: skip
        assert f"ok {step}" in steps, output
