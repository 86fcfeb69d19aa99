"""What ``ganymede … --help`` offers: every command path and the long options each help shows.

The man pages (``tests/cli/test_man.py``) and the docs pages (``tests/test_docs.py``) are both
held to it, so both read the help the same way.
"""

from __future__ import annotations

import re
from functools import cache

import typer
from typer.testing import CliRunner

from ganymede.cli.main import app

LONG_OPTION_IN_HELP = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


@cache
def help_text(*words: str) -> str:
    """The ``ganymede … --help`` text the app prints, run in this process: a separate process
    per command would make the docs test, which is in the quick loop, take seconds per page."""
    done = CliRunner().invoke(app, [*words, "--help"], prog_name="ganymede")
    assert done.exit_code == 0, done.output
    return done.output


def command_paths() -> list[tuple[str, ...]]:
    """Every command and nested subcommand, as word tuples (``("lab", "extension", "install")``)."""
    found: list[tuple[str, ...]] = []

    def walk(command: object, prefix: tuple[str, ...]) -> None:
        if prefix:
            found.append(prefix)
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, (*prefix, name))

    walk(typer.main.get_command(app), ())
    return found


def top_level_commands() -> list[str]:
    """The commands ``ganymede --help`` lists, each with a man page and a docs page."""
    return sorted({path[0] for path in command_paths()})


def long_options(*words: str) -> set[str]:
    """The long options one command's ``--help`` shows."""
    return set(LONG_OPTION_IN_HELP.findall(help_text(*words)))


def long_options_under(name: str) -> set[str]:
    """The long options of a top-level command and of every subcommand under it (``mcp``
    with ``mcp watch`` and ``mcp changes``), which one page documents together."""
    found: set[str] = set()
    for path in command_paths():
        if path[0] == name:
            found |= long_options(*path)
    return found
