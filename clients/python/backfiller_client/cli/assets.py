"""Client commands about assets: ``backfiller assets`` lists the graph with the latest status of
each asset's partitions, ``backfiller assets show NAME`` one asset and its partitions' latest
statuses as ranges."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated

import typer

from backfiller_client import Asset, AssetPartition, Client, PartitionsInfo, UserErrorDetail
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
    refused,
)

# Latest run statuses, in the order a summary lists them.
RUN_STATUSES = ("SUCCESS", "FAILED", "RUNNING", "QUEUED", "CANCELED", "UNKNOWN")

assets_app = typer.Typer(
    help="The asset graph, and the latest status of each asset's partitions.",
    invoke_without_command=True,
)
app.add_typer(assets_app, name="assets", rich_help_panel=CLIENT_PANEL)


@dataclass(frozen=True, slots=True)
class StatusRange:
    """Consecutive partitions (by key) of an asset whose latest runs share one status."""

    status: str
    start_key: str
    end_key: str
    count: int


def status_ranges(partitions: Iterable[AssetPartition]) -> list[StatusRange]:
    found: list[StatusRange] = []
    for p in partitions:
        last = found[-1] if found else None
        if last is not None and last.status == p.status.value:
            found[-1] = StatusRange(last.status, last.start_key, p.key, last.count + 1)
        else:
            found.append(StatusRange(p.status.value, p.key, p.key, 1))
    return found


def status_summary(partitions: Sequence[AssetPartition], info: PartitionsInfo | None) -> str:
    """``365 SUCCESS, 2 FAILED, 1 never ran``: the latest status of each partition."""
    counts = Counter(p.status.value for p in partitions)
    parts = [f"{counts[s]} {s}" for s in RUN_STATUSES if counts[s]]
    total = info.count if info is not None else 1
    if total > len(partitions):
        parts.append(f"{total - len(partitions)} never ran")
    return ", ".join(parts)


def partitions_text(info: PartitionsInfo | None) -> str:
    if info is None:
        return "unpartitioned"
    if info.kind == "TIME":
        return f"{info.cadence} from {info.start.date() if info.start else '?'}"
    if info.kind == "DYNAMIC":
        return f"dynamic {info.dynamic_name}"
    return f"{str(info.kind).lower()} ({info.count})"


@assets_app.callback()
def assets_list(
    ctx: typer.Context,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """The assets the server defines, in dependency order, with the latest status of their
    partitions (any backfill). `backfiller assets show NAME` for one."""
    if ctx.invoked_subcommand is not None:
        return
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        found = [(a, list(client.asset_partitions(a.name))) for a in client.assets()]
    if out.json_mode:
        out.json([{"asset": a, "latest_statuses": p} for a, p in found])
        return
    out.table(
        ["ASSET", "PARTITIONS", "UPSTREAM", "DOWNSTREAM", "LATEST"],
        (
            [
                a.name,
                partitions_text(a.partitions),
                ", ".join(a.upstream),
                ", ".join(a.downstream),
                status_summary(p, a.partitions),
            ]
            for a, p in found
        ),
    )


def read_asset(client: Client, out: Output, name: str) -> tuple[Asset, list[AssetPartition]]:
    found = client.asset(name)
    if found is None:
        refused(out, [UserErrorDetail("ASSET_NOT_FOUND", ("name",), f"no asset named {name!r}")])
    return found, list(client.asset_partitions(name))


@assets_app.command("show")
def assets_show(
    name: Annotated[str, typer.Argument(help="The asset's name.", show_default=False)],
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """One asset: its partitions, upstream and downstream assets, and the latest status of
    its partitions folded into ranges of consecutive keys."""
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        asset, partitions = read_asset(client, out, name)
    ranges = status_ranges(partitions)
    if out.json_mode:
        out.json({"asset": asset, "status_ranges": ranges})
        return
    out.line(f"{asset.name}  {asset.description or ''}".rstrip())
    out.line(f"partitions  {partitions_text(asset.partitions)}")
    out.line(f"level       {asset.level}")
    out.line(f"upstream    {', '.join(asset.upstream) or '-'}")
    out.line(f"downstream  {', '.join(asset.downstream) or '-'}")
    out.line(f"latest      {status_summary(partitions, asset.partitions) or 'never ran'}")
    if ranges:
        out.table(
            ["STATUS", "FROM", "TO", "COUNT"],
            ([r.status, r.start_key, r.end_key, str(r.count)] for r in ranges),
        )
