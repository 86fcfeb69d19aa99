"""Every command's man page names exactly the options its ``--help`` shows."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from ganymede.cli.main import app

MAN = Path(__file__).parents[2] / "man"
LONG_OPTION_IN_HELP = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
LONG_OPTION_IN_MAN = re.compile(r"\\-\\-([a-z](?:[a-z0-9]|\\-)*)")


def help_text(*words: str) -> str:
    """The real ``ganymede … --help`` output, from a separate process."""
    done = subprocess.run(
        [sys.executable, "-m", "ganymede", *words, "--help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout


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


def man_options(text: str) -> set[str]:
    return {"--" + name.replace("\\-", "-") for name in LONG_OPTION_IN_MAN.findall(text)}


def section(text: str, title: str) -> str:
    return text.split(f".SH {title}", 1)[1].split("\n.SH", 1)[0]


def without_section(text: str, title: str) -> str:
    """The page less one section: ``ganymede-execute.1``'s PAPERMILL section names papermill's
    options beside ours, and its PYTEST section the pytest plugin's; neither are ours to have
    in ``--help``."""
    if f".SH {title}" not in text:
        return text
    return text.replace(f".SH {title}" + section(text, title), "")


TOP_LEVEL = sorted({path[0] for path in command_paths()})


@pytest.mark.parametrize("name", TOP_LEVEL)
def test_man_page_lists_exactly_the_options_of_help(name: str) -> None:
    page = MAN / f"ganymede-{name}.1"
    assert page.is_file(), f"{page.name} is missing"
    in_help: set[str] = set()
    for path in command_paths():
        if path[0] == name:
            in_help |= set(LONG_OPTION_IN_HELP.findall(help_text(*path)))
    text = without_section(without_section(page.read_text(), "PAPERMILL"), "PYTEST")
    assert man_options(text) == in_help


def test_main_page_names_every_command_and_option() -> None:
    text = (MAN / "ganymede.1").read_text()
    listed = set(re.findall(r"^\.B (\S+)$", section(text, "COMMANDS"), re.M))
    assert listed == set(TOP_LEVEL)
    in_help = set(LONG_OPTION_IN_HELP.findall(help_text()))
    assert man_options(section(text, "OPTIONS")) == in_help
