"""Client commands about dynamic partitions: add and delete keys."""

from __future__ import annotations

from typing import Annotated

import typer

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

partitions_app = typer.Typer(help="Add or delete keys of dynamic partitions.", no_args_is_help=True)
app.add_typer(partitions_app, name="partitions", rich_help_panel=CLIENT_PANEL)

NameArgument = Annotated[str, typer.Argument(help="The dynamic partitions' name.")]
KeysArgument = Annotated[list[str], typer.Argument(help="Partition keys.")]


@partitions_app.command("add")
def partitions_add(
    name: NameArgument,
    keys: KeysArgument,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """Add keys to a dynamic partitions definition (existing keys are kept)."""
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        changed = client.add_dynamic_partitions(name, keys)
    if out.json_mode:
        out.json({"name": name, "keys_changed": changed})
    else:
        out.line(f"added {changed} of {len(keys)} keys to {name}")


@partitions_app.command("delete")
def partitions_delete(
    name: NameArgument,
    keys: KeysArgument,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    output: OutputOption = OutputFormat.text,
) -> None:
    """Delete keys of a dynamic partitions definition."""
    out = Output(output is OutputFormat.json)
    with connect(url, token, out) as client:
        changed = client.delete_dynamic_partitions(name, keys)
    if out.json_mode:
        out.json({"name": name, "keys_changed": changed})
    else:
        out.line(f"deleted {changed} of {len(keys)} keys from {name}")
