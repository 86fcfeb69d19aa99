"""Every command's man page names exactly the options its ``--help`` shows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cli.help_options import long_options, long_options_under, top_level_commands

MAN = Path(__file__).parents[2] / "man"
LONG_OPTION_IN_MAN = re.compile(r"\\-\\-([a-z](?:[a-z0-9]|\\-)*)")


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


TOP_LEVEL = top_level_commands()


@pytest.mark.parametrize("name", TOP_LEVEL)
def test_man_page_lists_exactly_the_options_of_help(name: str) -> None:
    page = MAN / f"ganymede-{name}.1"
    assert page.is_file(), f"{page.name} is missing"
    text = without_section(without_section(page.read_text(), "PAPERMILL"), "PYTEST")
    assert man_options(text) == long_options_under(name)


def test_main_page_names_every_command_and_option() -> None:
    text = (MAN / "ganymede.1").read_text()
    listed = set(re.findall(r"^\.B (\S+)$", section(text, "COMMANDS"), re.M))
    assert listed == set(TOP_LEVEL)
    assert man_options(section(text, "OPTIONS")) == long_options()
