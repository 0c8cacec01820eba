"""The ``backfiller`` command's entry point: reads the command line, then loads only what the
command needs.

- ``backfiller --version`` loads nothing but the version.
- A client command (``jobs``, ``list``, ``launch``...) loads the module of that command, not
  the other client commands nor the server's (no definitions, no SQLAlchemy).
- Everything else (a server command, ``--help``) goes through the whole command
  (``backfiller_client.cli.app``).

The client's connection options may also come before the command, as people type them
(``backfiller --url http://host:8000 jobs``, ``backfiller -o json list``): they are handed to
the command. ``--token-file PATH`` reads the token from a file (as ``BACKFILLER_TOKEN`` gives
it from the environment); a token given with ``--token`` works, with a warning, since a
command line is visible to other users of the machine and stays in the shell's history.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

# The client's commands and groups, with the module that defines each (importing it registers
# the command): a client command loads its own module only. tests/unit/test_cli_entry.py
# checks them against what the client registers.
CLIENT_COMMANDS = {
    "assets": "assets",
    "cancel": "backfills",
    "jobs": "jobs",
    "launch": "backfills",
    "list": "backfills",
    "mark": "marks",
    "marks": "marks",
    "partitions": "partitions",
    "pause": "backfills",
    "preview": "backfills",
    "resume": "backfills",
    "retry": "backfills",
    "show": "show",
    "trigger": "triggers",
    "update": "backfills",
    "watch": "backfills",
}
# The client's options that take a value, and may come before the command.
CLIENT_OPTIONS = frozenset({"--url", "--token", "--token-file", "--output", "-o"})
# The root's own options that take a value (the server's): they stay before the command.
ROOT_OPTIONS = frozenset({"--log-format", "--otlp-endpoint"})
TOKEN_VARIABLE = "BACKFILLER_TOKEN"
TOKEN_WARNING = (
    "warning: a token given with --token is visible to other users of this machine (ps) and "
    f"stays in your shell's history; prefer ${TOKEN_VARIABLE} or --token-file PATH"
)
EXIT_USAGE = 2


class UsageError(Exception):
    """The command line cannot be run (the message says why)."""


def _split_option(word: str) -> tuple[str, str | None]:
    name, equals, value = word.partition("=")
    return (name, value) if equals and name.startswith("--") else (word, None)


def prepared(argv: Sequence[str]) -> tuple[list[str], dict[str, str], list[str]]:
    """The command line as the command reads it, the environment it adds, and the warnings
    to print: client options before the command moved behind it, ``--token-file`` read.

    Raises:
        UsageError: an option lacks its value, or the token file cannot be read.
    """
    words = list(argv)
    leading: list[str] = []  # root options, in place
    moved: list[str] = []  # client options given before the command
    i = 0
    while i < len(words) and words[i].startswith("-"):
        name, value = _split_option(words[i])
        takes_value = name in CLIENT_OPTIONS or name in ROOT_OPTIONS
        if takes_value and value is None and i + 1 >= len(words):
            raise UsageError(f"option {name} needs a value")
        taken = [words[i]] if (value is not None or not takes_value) else words[i : i + 2]
        (moved if name in CLIENT_OPTIONS else leading).extend(taken)
        i += len(taken)
    if i >= len(words):  # no command: leave it to the root (--help, --version)
        rest, moved, leading = [], [], words
    else:
        rest = words[i:]
    out, env, warnings = _token_options([*leading, *rest, *moved])
    return out, env, warnings


def _token_options(words: list[str]) -> tuple[list[str], dict[str, str], list[str]]:
    out: list[str] = []
    env: dict[str, str] = {}
    warnings: list[str] = []
    i = 0
    while i < len(words):
        name, value = _split_option(words[i])
        if words[i] == "--":
            out.extend(words[i:])
            break
        if name == "--token-file":
            if value is None:
                if i + 1 >= len(words):
                    raise UsageError("option --token-file needs a value")
                value = words[i + 1]
                i += 1
            env[TOKEN_VARIABLE] = _read_token(value)
        else:
            if name == "--token" and TOKEN_WARNING not in warnings:
                warnings.append(TOKEN_WARNING)
            out.append(words[i])
        i += 1
    return out, env, warnings


def _read_token(path: str) -> str:
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as file:
            token = file.read().strip()
    except OSError as exc:
        raise UsageError(f"cannot read the token file {path}: {exc.strerror}") from None
    if not token:
        raise UsageError(f"the token file {path} is empty")
    return token


def command_of(argv: Sequence[str]) -> str | None:
    """The command a (prepared) command line runs: its first word that is not an option or
    an option's value (None for ``backfiller --help``)."""
    words = iter(argv)
    for word in words:
        name, value = _split_option(word)
        if name in ROOT_OPTIONS and value is None:
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def main(argv: Sequence[str] | None = None) -> None:
    """``backfiller``: see the module's docstring."""
    given = sys.argv[1:] if argv is None else list(argv)
    try:
        words, env, warnings = prepared(given)
    except UsageError as exc:
        print(f"Usage: backfiller [OPTIONS] COMMAND [ARGS]...\nError: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from None
    for warning in warnings:
        print(warning, file=sys.stderr)
    os.environ.update(env)
    if words in (["--version"], ["-V"]):
        from backfiller_client._version import __version__

        print(f"backfiller {__version__}")
        return
    import importlib

    from backfiller_client.cli import app as root

    command = command_of(words)
    if command in CLIENT_COMMANDS and not any(_split_option(w)[0] in ROOT_OPTIONS for w in words):
        # A client command: its own module, nothing of the server's.
        importlib.import_module(f"backfiller_client.cli.{CLIENT_COMMANDS[command]}")
    else:
        root.register_server_commands(words)
    root.app(args=words, prog_name="backfiller")


if __name__ == "__main__":
    main()
