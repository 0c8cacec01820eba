"""Client command about jobs: the jobs a server defines."""

from __future__ import annotations

from typing import Any

from backfiller_client.cli._output import Output
from backfiller_client.cli.app import app
from backfiller_client.cli.remote import (
    CLIENT_PANEL,
    DEFAULT_URL,
    OutputFormat,
    OutputOption,
    TokenOption,
    UrlOption,
    connect,
)


@app.command(rich_help_panel=CLIENT_PANEL)
def jobs(
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """The jobs the server defines, with their partitions."""
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        found = client.jobs()
    if out.json_mode:
        out.json(found)
        return

    def partitions(job: Any) -> str:
        p = job.partitions
        if p.kind == "TIME":
            return f"{p.cadence} from {p.start.date() if p.start else '?'}"
        if p.kind == "DYNAMIC":
            return f"dynamic {p.dynamic_name}"
        return str(p.kind).lower()

    out.table(
        ["JOB", "PARTITIONS", "COUNT", "MAX RUNS", "RETRIES", "DESCRIPTION"],
        (
            [
                j.name,
                partitions(j),
                str(j.partitions.count),
                str(j.max_concurrent_runs or ""),
                str(j.max_retries),
                (j.description or "").splitlines()[0] if j.description else "",
            ]
            for j in found
        ),
    )
