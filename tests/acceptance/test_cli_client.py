"""The client commands of the ``backfiller`` CLI, run as real processes against a live server
(and a daemon for ``watch``): every command, ``--output json`` parsed, every exit code."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from typer.testing import CliRunner

from backfiller.cli.app import app, register_commands
from tests.acceptance.client_support import DEFS, create_token
from tests.support import REPO, LiveProcess, LiveServer, free_port, live_server

register_commands()  # as main() does


@dataclass
class Done:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def cli(*args: str, url: str | None, token: str | None = None, timeout: float = 60) -> Done:
    """``backfiller ARGS`` in a subprocess, with the server in BACKFILLER_URL."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BACKFILLER_")}
    env.setdefault("PYTHONPATH", str(REPO))
    if url is not None:
        env["BACKFILLER_URL"] = url
    if token is not None:
        env["BACKFILLER_TOKEN"] = token
    done = subprocess.run(
        [sys.executable, "-m", "backfiller", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Done(done.returncode, done.stdout, done.stderr)


def cli_in_process(*args: str, url: str | None, token: str | None = None) -> Done:
    """The same command in this process: for the long matrices, where a process start per
    case (about 3 s of imports on this machine) would dominate. Real HTTP all the same."""
    env: dict[str, str | None] = {"BACKFILLER_URL": url, "BACKFILLER_TOKEN": token}
    result = CliRunner().invoke(app, list(args), env=env)
    return Done(result.exit_code, result.stdout, result.stderr)


server = live_server(DEFS, scope="module", database="module_database_url")


@pytest.fixture(scope="module")
def daemon(module_database_url: str, server: LiveServer) -> Iterator[LiveProcess]:
    process = LiveProcess(
        [
            "daemon",
            "--database",
            module_database_url,
            "--definitions",
            DEFS,
            "--workers",
            "1",
            "--api-url",
            server.url,
        ]
    )
    yield process
    process.stop()


@pytest.fixture
def run(server: LiveServer) -> Any:
    """A client command against the server, in this process."""

    def run_in_process(*args: str) -> Done:
        return cli_in_process(*args, url=server.url)

    return run_in_process


@pytest.fixture
def proc(server: LiveServer) -> Any:
    """A client command against the server, as the installed command in a subprocess."""

    def run_as_process(*args: str, timeout: float = 60) -> Done:
        return cli(*args, url=server.url, timeout=timeout)

    return run_as_process


def launched_id(done: Done) -> str:
    assert done.code == 0, done.stderr
    backfill_id = done.json()["id"]
    assert isinstance(backfill_id, str)
    return backfill_id


# -- exit 0: every command, in text and in JSON ----------------------------------------------


def test_launch_preview_list_show_and_steer(run: Any, proc: Any) -> None:
    text = proc("launch", "daily_sales", "--from", "2024-02-01", "--to", "2024-02-10", "--tag",
               "suite=cli-text", "--title", "ten days")  # fmt: skip
    assert text.code == 0, text.stderr
    assert text.stdout.startswith("launched bf_")
    assert "REQUESTED" in text.stdout

    done = run("launch", "daily_sales", "--keys", "2024-03-01,2024-03-05", "--tag", "suite=cli",
               "--tag", "owner=me", "--max-concurrent", "2", "--order", "newest_first",
               "--reprocess", "all", "--idempotency-key", "cli-1", "-o", "json")  # fmt: skip
    backfill = done.json()
    backfill_id = launched_id(done)
    assert backfill["partitions"] == {"keys": ["2024-03-01", "2024-03-05"]}
    assert backfill["tags"] == {"suite": "cli", "owner": "me"}
    assert backfill["max_concurrent_runs"] == 2
    assert (backfill["order"], backfill["reprocess"]) == ("NEWEST_FIRST", "ALL")
    assert backfill["counts"]["total"] == 2
    again = run("launch", "daily_sales", "--keys", "2024-03-01,2024-03-05", "--tag", "suite=cli",
                "--tag", "owner=me", "--max-concurrent", "2", "--order", "NEWEST_FIRST",
                "--reprocess", "ALL", "--idempotency-key", "cli-1", "-o", "json")  # fmt: skip
    assert launched_id(again) == backfill_id

    preview = run("preview", "daily_sales", "--from", "2024-02-01", "--to", "2024-02-28")
    assert preview.code == 0
    assert "28 runs of 28 partitions" in preview.stdout
    preview_json = run("preview", "region_report", "--all", "--config", '{"currency": "EUR"}',
                       "-o", "json").json()  # fmt: skip
    assert (preview_json["job"], preview_json["total"]) == ("region_report", 3)

    listed = run("list")
    assert listed.code == 0
    assert backfill_id in listed.stdout and "ten days" in listed.stdout
    filtered = run("list", "--tag", "suite=cli", "--job", "daily_sales", "--status", "requested",
                   "-o", "json").json()  # fmt: skip
    assert [b["id"] for b in filtered] == [backfill_id]
    assert run("list", "--limit", "1", "-o", "json").json()[0]["id"] == backfill_id
    both = run("list", "--tag", "suite=cli", "--tag", "owner=me", "-o", "json").json()
    assert [b["id"] for b in both] == [backfill_id]
    searched = run("list", "--search", "TEN DAYS", "--created-after", "2000-01-01",
                   "--job", "daily_sales", "-o", "json").json()  # fmt: skip
    assert [b["title"] for b in searched] == ["ten days"]
    assert (
        run("list", "--search", "ten days", "--created-before", "2000-01-01").stdout.count("bf_")
        == 0
    )

    shown = run("show", backfill_id)
    assert shown.code == 0
    assert "progress 0/2 (0.0%)" in shown.stdout
    assert "strip    .." in shown.stdout
    shown_json = run("show", backfill_id, "-o", "json").json()
    assert shown_json["backfill"]["id"] == backfill_id
    assert shown_json["partition_status_ranges"][0]["status"] == "PENDING"
    assert shown_json["recent_runs"] == []

    assert [e["kind"] for e in shown_json["recent_events"]] == ["LAUNCHED"]
    assert "LAUNCHED" in shown.stdout

    assert run("pause", backfill_id, "-o", "json").json()["status"] == "PAUSED"
    paused = run("show", backfill_id, "-o", "json").json()
    assert [e["kind"] for e in paused["recent_events"]] == ["PAUSED", "LAUNCHED"]
    assert "PAUSED" in run("show", backfill_id).stdout
    resumed = run("resume", backfill_id)
    assert resumed.code == 0 and "REQUESTED" in resumed.stdout
    assert run("cancel", backfill_id, "-o", "json").json()["status"] == "CANCELED"
    retried = run("retry", backfill_id, "--include", "canceled,not-run", "-o", "json")
    child = retried.json()
    assert retried.code == 0
    assert child["parent_id"] == backfill_id
    assert child["counts"]["total"] == 2


def test_jobs_partitions_and_triggers(run: Any, proc: Any) -> None:
    jobs = run("jobs")
    assert jobs.code == 0
    assert "daily_sales" in jobs.stdout and "daily from 2024-01-01" in jobs.stdout
    names = [j["name"] for j in run("jobs", "-o", "json").json()]
    assert "customer_sync" in names and "picky" in names

    added = run("partitions", "add", "customers", "acme", "globex")
    assert (added.code, added.stdout.strip()) == (0, "added 2 of 2 keys to customers")
    again = run("partitions", "add", "customers", "acme", "-o", "json").json()
    assert again == {"name": "customers", "keys_changed": 0}
    deleted = run("partitions", "delete", "customers", "acme", "-o", "json")
    assert deleted.json() == {"name": "customers", "keys_changed": 1}
    customers = next(j for j in run("jobs", "-o", "json").json() if j["name"] == "customer_sync")
    assert customers["partitions"]["count"] == 1

    listed = run("trigger", "list")
    assert listed.code == 0 and "may_week" in listed.stdout and "on demand" in listed.stdout
    dry = run("trigger", "evaluate", "may_week", "--dry-run")
    assert dry.code == 0
    assert "(dry run)" in dry.stdout and "would launch daily_sales" in dry.stdout
    real = proc("trigger", "evaluate", "may_week", "-o", "json").json()
    assert real["outcome"] == "LAUNCHED" and real["dry_run"] is False
    assert [b["title"] for b in real["backfills"]] == ["May week"]
    quiet = run("trigger", "evaluate", "quiet")
    assert quiet.code == 0 and "skipped: nothing landed" in quiet.stdout
    triggers = {t["name"]: t for t in run("trigger", "list", "-o", "json").json()}
    assert triggers["quiet"]["last_evaluation"]["outcome"] == "SKIPPED"


def test_mark_and_marks_and_the_python_client(run: Any, proc: Any, server: LiveServer) -> None:
    from backfiller_client import Client, PartitionKeys, PartitionMarkStatus

    done = proc("mark", "daily_sales", "--keys", "2024-01-06,2024-01-01", "--status", "skipped",
                "--reason", "known-bad day", "-o", "json")  # fmt: skip
    assert done.code == 0, done.stderr
    assert done.json() == {"target": "daily_sales", "status": "SKIPPED", "marked": 2}
    text = run("mark", "daily_sales", "--from", "2024-01-02", "--to", "2024-01-03",
               "--reason", "loaded by hand")  # fmt: skip
    assert (text.code, text.stdout.strip()) == (0, "marked 2 partitions of daily_sales succeeded")
    listed = run("marks", "daily_sales", "-o", "json").json()
    assert {(m["partition_key"], m["status"], m["reason"]) for m in listed} == {
        ("2024-01-03", "SUCCEEDED", "loaded by hand"),
        ("2024-01-02", "SUCCEEDED", "loaded by hand"),
        ("2024-01-06", "SKIPPED", "known-bad day"),
        ("2024-01-01", "SKIPPED", "known-bad day"),
    }
    no_reason = run("mark", "daily_sales", "--keys", "2024-01-04")
    assert no_reason.code == 2 and "--reason" in no_reason.stderr
    unknown = run("mark", "no_such_job", "--keys", "2024-01-04", "--reason", "x")
    assert unknown.code == 1 and "JOB_NOT_FOUND" in unknown.stderr

    with Client(server.url) as client:
        marked = client.mark_partitions(
            "daily_sales",
            partitions=PartitionKeys(["2024-01-05"]),
            status="SUCCEEDED",
            reason="from the Python client",
        )
        assert marked == 1
        (mark,) = client.partition_marks("daily_sales", partition_key="2024-01-05")
        assert (mark.status, mark.reason) == (
            PartitionMarkStatus.SUCCEEDED,
            "from the Python client",
        )


def test_asset_launch_preview_show_list_and_the_graph(run: Any, proc: Any) -> None:
    graph = run("assets")
    assert graph.code == 0, graph.stderr
    assert "raw_events" in graph.stdout and "daily from 2024-01-01" in graph.stdout
    assert "unpartitioned" in graph.stdout
    listed = run("assets", "-o", "json").json()
    names = [a["asset"]["name"] for a in listed]
    assert names == ["raw_events", "daily_visits", "monthly_report", "visits_summary"]
    assert listed[1]["asset"]["upstream"] == ["raw_events"]
    one = run("assets", "show", "daily_visits")
    assert one.code == 0
    assert "upstream    raw_events" in one.stdout
    assert "downstream  monthly_report" in one.stdout

    march = ("--assets", "daily_visits", "--downstream", "--from", "2024-03-01", "--to",
             "2024-03-31")  # fmt: skip
    preview = run("preview", *march)
    assert preview.code == 0, preview.stderr
    assert "monthly_report" in preview.stdout and "visits_summary" in preview.stdout
    per_asset = run("preview", *march, "-o", "json").json()["assets"]
    assert [(a["name"], a["level"], a["total"]) for a in per_asset] == [
        ("daily_visits", 0, 31),
        ("monthly_report", 1, 1),
        ("visits_summary", 2, 1),
    ]

    launched = proc("launch", *march, "--title", "march visits", "-o", "json")
    backfill_id = launched_id(launched)
    backfill = launched.json()
    assert backfill["job"] is None
    assert backfill["assets"] == {"names": ["daily_visits"], "upstream": False,
                                  "downstream": True}  # fmt: skip
    assert backfill["counts"]["total"] == 33
    assert "daily_visits +downstream" in run("list", "--limit", "1").stdout

    shown = run("show", backfill_id)
    assert shown.code == 0
    assert "assets   daily_visits, monthly_report, visits_summary" in shown.stdout
    assert "assets:" in shown.stdout and "0/31 (0.0%)" in shown.stdout
    shown_json = run("show", backfill_id, "-o", "json").json()
    assert [(a["name"], a["counts"]["total"]) for a in shown_json["assets"]] == [
        ("daily_visits", 31),
        ("monthly_report", 1),
        ("visits_summary", 1),
    ]
    assert run("cancel", backfill_id).code == 0  # the daemon of later tests has no need of it


# -- exit 1: userErrors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["launch", "no_such_job", "--all"], "JOB_NOT_FOUND"),
        (["launch", "daily_sales", "--from", "2024-02-10", "--to", "2024-02-01"], None),
        (["launch", "region_report", "--all", "--config", '{"currency": "GBP"}'], None),
        (["preview", "daily_sales", "--keys", "not-a-day"], None),
        (["launch", "--assets", "no_such_asset", "--all"], "ASSET_NOT_FOUND"),
        (["preview", "--assets", "raw_events", "--keys", "not-a-day"], None),
        (["assets", "show", "no_such_asset"], "ASSET_NOT_FOUND"),
        (["show", "bf_999999"], "BACKFILL_NOT_FOUND"),
        (["watch", "bf_999999"], "BACKFILL_NOT_FOUND"),
        (["pause", "bf_999999"], "BACKFILL_NOT_FOUND"),
        (["resume", "bf_999999"], "BACKFILL_NOT_FOUND"),
        (["cancel", "bf_999999"], "BACKFILL_NOT_FOUND"),
        (["retry", "bf_999999"], "BACKFILL_NOT_FOUND"),
        (["update", "bf_999999", "--priority", "3"], "BACKFILL_NOT_FOUND"),
        (["launch", "daily_sales", "--all", "--priority", "5000"], "INVALID_ARGUMENT"),
        (["trigger", "evaluate", "no_such_trigger"], "TRIGGER_NOT_FOUND"),
        (["partitions", "add", "no_such_partitions", "x"], None),
    ],
    ids=lambda v: "-".join(v) if isinstance(v, list) else str(v),
)
def test_user_errors_exit_1_with_code_and_message(
    server: LiveServer, args: list[str], code: str | None
) -> None:
    def run(*args: str) -> Done:
        return cli_in_process(*args, url=server.url)

    text = run(*args)
    assert text.code == 1, text.stdout + text.stderr
    assert text.stderr.startswith("error: ")
    as_json = run(*args, "-o", "json")
    assert as_json.code == 1
    errors = as_json.json()["userErrors"]
    assert errors and all(e["message"] for e in errors)
    if code is not None:
        assert errors[0]["code"] == code
    assert errors[0]["code"] in text.stderr and errors[0]["message"] in text.stderr


def test_user_errors_exit_1_from_the_installed_command(proc: Any) -> None:
    text = proc("launch", "no_such_job", "--all")
    assert text.code == 1
    assert text.stderr == "error: JOB_NOT_FOUND (target.job): no job named 'no_such_job'\n"
    as_json = proc("show", "bf_999999", "-o", "json")
    assert as_json.code == 1
    assert as_json.json()["userErrors"][0]["code"] == "BACKFILL_NOT_FOUND"


def test_a_state_that_forbids_the_change_exits_1(run: Any) -> None:
    backfill_id = launched_id(run("launch", "daily_sales", "--keys", "2024-04-01", "-o", "json"))
    refused = run("retry", backfill_id)
    assert refused.code == 1 and "INVALID_STATE" in refused.stderr
    assert run("cancel", backfill_id).code == 0
    again = run("pause", backfill_id, "-o", "json")
    assert again.code == 1
    assert again.json()["userErrors"][0]["code"] == "INVALID_STATE"


# -- exit 2: usage ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["launch", "daily_sales"],
        ["launch", "daily_sales", "--all", "--keys", "a"],
        ["launch", "daily_sales", "--from", "2024-01-01"],
        ["launch", "daily_sales", "--all", "--tag", "no-equals"],
        ["launch", "daily_sales", "--all", "--config", "{not json"],
        ["launch", "daily_sales", "--all", "--config", "[1, 2]"],
        ["launch", "daily_sales", "--all", "--config", "@/nonexistent/config.json"],
        ["launch", "daily_sales", "--all", "--max-concurrent", "0"],
        ["launch", "daily_sales", "--all", "--order", "sideways"],
        ["launch"],
        ["launch", "daily_sales", "--assets", "raw_events", "--all"],
        ["launch", "daily_sales", "--downstream", "--all"],
        ["launch", "--assets", ",", "--all"],
        ["preview", "--all"],
        ["assets", "show"],
        ["list", "--status", "DONE"],
        ["list", "--limit", "0"],
        ["retry", "bf_1", "--include", "everything"],
        ["show"],
        ["partitions", "add", "customers"],
        ["no-such-command"],
    ],
    ids=lambda v: "-".join(v),
)
def test_usage_errors_exit_2(server: LiveServer, args: list[str]) -> None:
    done = cli_in_process(*args, url=server.url)
    assert done.code == 2, done.stdout + done.stderr
    assert "Usage:" in done.stderr


def test_usage_errors_exit_2_from_the_installed_command(proc: Any) -> None:
    for args in (["launch", "daily_sales"], ["no-such-command"]):
        done = proc(*args)
        assert done.code == 2, done.stdout + done.stderr
        assert "Usage:" in done.stderr


# -- exit 3: no server, bad token ------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["list"],
        ["show", "bf_1"],
        ["watch", "bf_1"],
        ["launch", "daily_sales", "--all"],
        ["preview", "daily_sales", "--all"],
        ["pause", "bf_1"],
        ["resume", "bf_1"],
        ["cancel", "bf_1"],
        ["retry", "bf_1"],
        ["jobs"],
        ["assets"],
        ["assets", "show", "raw_events"],
        ["launch", "--assets", "raw_events", "--all"],
        ["partitions", "delete", "customers", "x"],
        ["trigger", "list"],
        ["trigger", "evaluate", "quiet"],
    ],
    ids=lambda v: "-".join(v),
)
def test_a_server_that_is_down_exits_3(args: list[str]) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    done = cli_in_process(*args, url=down)
    assert done.code == 3, done.stdout + done.stderr
    assert f"cannot reach the server at {down}" in done.stderr
    as_json = cli_in_process(*args, "--output", "json", url=down)
    assert as_json.code == 3
    assert as_json.json()["error"]["kind"] == "connection"


def test_a_server_that_is_down_exits_3_from_the_installed_command() -> None:
    down = f"http://127.0.0.1:{free_port()}"
    done = cli("list", url=down)
    assert done.code == 3
    assert done.stderr.startswith(f"error: cannot reach the server at {down}")
    as_json = cli("watch", "bf_1", "-o", "json", url=down)
    assert (as_json.code, as_json.json()["error"]["kind"]) == (3, "connection")


def test_the_url_option_wins_over_the_environment(server: LiveServer) -> None:
    done = cli_in_process("jobs", "--url", server.url, url=f"http://127.0.0.1:{free_port()}")
    assert done.code == 0


def test_tokens_bad_missing_and_forbidden(module_database_url: str) -> None:
    url = module_database_url
    secured = LiveServer(url, DEFS, auth="token")
    try:
        operator = create_token(url, "operator", name="cli-operator")
        viewer = create_token(url, "viewer")
        ok = cli_in_process("launch", "daily_sales", "--keys", "2024-06-01", "-o", "json",
                            url=secured.url, token=operator)  # fmt: skip
        backfill_id = launched_id(ok)
        assert ok.json()["creator"] == "cli-operator"
        assert cli_in_process("show", backfill_id, url=secured.url, token=viewer).code == 0

        bad = cli("list", url=secured.url, token="bft_not-a-real-token")
        assert bad.code == 3
        assert "refused the token" in bad.stderr

        forbidden = cli_in_process("cancel", backfill_id, "-o", "json", url=secured.url,
                                   token=viewer)  # fmt: skip
        assert forbidden.code == 3
        assert forbidden.json()["error"]["kind"] == "auth"
        for token in ("bft_not-a-real-token", None):
            for args in (["list"], ["show", backfill_id], ["launch", "daily_sales", "--all"]):
                done = cli_in_process(*args, url=secured.url, token=token)
                assert done.code == 3, done.stdout + done.stderr
                assert "refused the token" in done.stderr
            refused = cli_in_process("jobs", "-o", "json", url=secured.url, token=token)
            assert (refused.code, refused.json()["error"]["kind"]) == (3, "auth")
        via_option = cli_in_process("jobs", "--token", operator, url=secured.url, token="bft_wrong")
        assert via_option.code == 0
    finally:
        secured.stop()


# -- watch, with the daemon ------------------------------------------------------------------


def test_watch_follows_a_backfill_to_success(run: Any, proc: Any, daemon: LiveProcess) -> None:
    backfill_id = launched_id(run("launch", "daily_sales", "--from", "2024-07-01", "--to",
                                  "2024-07-06", "-o", "json"))  # fmt: skip
    watched = proc("watch", backfill_id, "--interval", "0.2", timeout=120)
    assert watched.code == 0, watched.stdout + watched.stderr
    lines = watched.stdout.strip().splitlines()
    assert all(backfill_id in line for line in lines)
    assert lines[-1].startswith(f"{backfill_id} ended COMPLETED_SUCCESS: 6/6 (100.0%)")
    assert "\x1b[" not in watched.stdout  # plain lines, no terminal codes

    as_json = run("watch", backfill_id, "-o", "json")
    assert as_json.code == 0
    updates = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert updates[-1]["backfill"]["status"] == "COMPLETED_SUCCESS"
    assert updates[-1]["backfill"]["counts"]["succeeded"] == 6

    shown = run("show", backfill_id)
    assert "strip    SSSSSS" in shown.stdout
    assert "recent runs:" in shown.stdout and "SUCCESS" in shown.stdout


def test_launch_wait_exits_1_when_a_partition_fails_and_retry_relaunches_it(
    run: Any, proc: Any, daemon: LiveProcess
) -> None:
    waited = proc("launch", "picky", "--all", "--wait", "--interval", "0.2", timeout=120)
    assert waited.code == 1, waited.stdout + waited.stderr
    assert "ended COMPLETED_FAILED" in waited.stdout
    backfill_id = waited.stdout.split()[1].rstrip(":")
    shown = run("show", backfill_id, "-o", "json").json()
    assert shown["backfill"]["counts"]["failed"] == 1
    assert any(r["error_message"] for r in shown["recent_runs"])
    text = run("show", backfill_id).stdout
    assert "strip    SFS" in text and "broken on purpose" in text

    retried = run("retry", backfill_id, "-o", "json").json()
    assert retried["counts"]["total"] == 1
    assert retried["partitions"] == {"keys": ["broken"]}


def test_an_asset_backfill_runs_and_the_graph_shows_its_statuses(
    run: Any, proc: Any, daemon: LiveProcess
) -> None:
    waited = proc("launch", "--assets", "daily_visits", "--upstream", "--keys", "2024-05-01",
                  "--wait", "--interval", "0.2", timeout=120)  # fmt: skip
    assert waited.code == 0, waited.stdout + waited.stderr
    backfill_id = waited.stdout.split()[1].rstrip(":")
    shown = run("show", backfill_id, "-o", "json").json()
    assert [(a["name"], a["counts"]["succeeded"]) for a in shown["assets"]] == [
        ("raw_events", 1),
        ("daily_visits", 1),
    ]
    assert {r["asset"] for r in shown["recent_runs"]} == {"raw_events", "daily_visits"}
    assert all(r["worker"]["host"] for r in shown["recent_runs"])
    text = run("show", backfill_id).stdout
    assert "recent runs:" in text and "ASSET" in text
    one = run("assets", "show", "daily_visits")
    assert "SUCCESS  2024-05-01  2024-05-01  1" in " ".join(one.stdout.split("\n"))
    statuses = run("assets", "show", "raw_events", "-o", "json").json()["status_ranges"]
    assert {"status": "SUCCESS", "start_key": "2024-05-01", "end_key": "2024-05-01",
            "count": 1} in statuses  # fmt: skip
    graph = run("assets", "-o", "json").json()
    latest = {a["asset"]["name"]: a["latest_statuses"] for a in graph}
    assert {"key": "2024-05-01", "status": "SUCCESS"} in latest["daily_visits"]


def watch_env(**extra: str) -> dict[str, str]:
    """This environment without BACKFILLER_* settings, the repository importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BACKFILLER_")}
    env.update(PYTHONPATH=str(REPO), **extra)
    return env


def watch_process(
    backfill_id: str, url: str, env: dict[str, str], **streams: Any
) -> subprocess.Popen[Any]:
    """``backfiller watch`` of a backfill in a subprocess, polling every 0.1 s."""
    command = ["watch", backfill_id, "--url", url, "--interval", "0.1"]
    return subprocess.Popen(
        [sys.executable, "-m", "backfiller", *command],
        env=env,
        cwd=REPO,
        **streams,
    )


def test_watch_ends_with_exit_1_when_the_backfill_is_canceled(run: Any, server: LiveServer) -> None:
    launched = run(
        "launch", "slow_rebuild", "--from", "2025-02-01", "--to", "2025-02-10", "-o", "json"
    )
    backfill_id = launched_id(launched)  # ten slow partitions, two at a time: still running
    watcher = watch_process(
        backfill_id,
        server.url,
        watch_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = watcher.stdout.readline() if watcher.stdout else ""
        assert backfill_id in first
        assert run("cancel", backfill_id).code == 0
        out, err = watcher.communicate(timeout=60)
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait()
    assert watcher.returncode == 1, out + err
    assert f"{backfill_id} ended CANCELED" in out


def test_watch_draws_a_progress_bar_on_a_terminal(
    run: Any, server: LiveServer, daemon: LiveProcess
) -> None:
    backfill_id = launched_id(run("launch", "daily_sales", "--from", "2024-09-01", "--to",
                                  "2024-09-08", "-o", "json"))  # fmt: skip
    env = watch_env(TERM="xterm-256color", COLUMNS="160")
    env.pop("NO_COLOR", None)
    primary, secondary = pty.openpty()
    watcher = watch_process(
        backfill_id, server.url, env, stdin=secondary, stdout=secondary, stderr=secondary
    )
    os.close(secondary)
    seen = b""
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 1)
            if ready:
                try:
                    chunk = os.read(primary, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
            elif watcher.poll() is not None:
                break
        watcher.wait(timeout=30)
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait()
        os.close(primary)
    screen = seen.decode(errors="replace")
    assert watcher.returncode == 0, screen
    assert "partitions/s" in screen
    assert "100%" in screen
    assert "━" in screen  # the bar
    assert f"{backfill_id} ended COMPLETED_SUCCESS" in screen


def test_a_launch_that_runs_nothing_says_why_and_options_come_first_too(
    proc: Any, daemon: LiveProcess
) -> None:
    days = ("--from", "2024-08-01", "--to", "2024-08-03")
    first = proc("launch", "daily_sales", *days, "--wait", "--interval", "0.2", timeout=120)
    assert first.code == 0, first.stdout + first.stderr
    again = proc("-o", "text", "launch", "daily_sales", *days)
    assert again.code == 0, again.stdout + again.stderr
    assert "3 skipped: already succeeded; use --reprocess all to run them again" in again.stdout
    quiet = proc("launch", "daily_sales", *days, "--reprocess", "all", "--quiet")
    assert quiet.code == 0 and "skipped" not in quiet.stdout


def test_launch_with_a_priority_then_update_it(server: LiveServer) -> None:
    def run(*args: str) -> Done:
        return cli_in_process(*args, url=server.url)

    # Two years of 50 ms runs, 8 at a time: still running while it is updated, whatever daemon
    # an earlier test of this module left behind.
    launched = run(
        "launch", "daily_sales", "--from", "2024-01-01", "--to", "2025-12-31", "--priority", "7",
        "--max-concurrent", "8", "-o", "json",
    )  # fmt: skip
    assert launched.code == 0, launched.stdout + launched.stderr
    backfill = launched.json()
    assert backfill["priority"] == 7 and backfill["max_concurrent_runs"] == 8
    updated = run(
        "update", backfill["id"], "--max-concurrent-runs", "2", "--priority", "-1", "--title",
        "slower", "-o", "json",
    )  # fmt: skip
    assert updated.code == 0, updated.stdout + updated.stderr
    after = updated.json()
    assert (after["max_concurrent_runs"], after["priority"], after["title"]) == (2, -1, "slower")
    text = run("update", backfill["id"], "--no-limit")
    assert text.code == 0 and text.stdout.startswith(f"updated {backfill['id']}")
    assert run("update", backfill["id"]).code == 2  # nothing to change: usage
    assert run("update", backfill["id"], "--no-limit", "--max-concurrent-runs", "3").code == 2
    assert run("cancel", backfill["id"]).code == 0  # the daemon of later tests has no need of it
