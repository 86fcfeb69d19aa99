"""The docs stay in step with the commands, and the README stays a five-minute read.

The strict site build (``make docs``) checks the links between pages; these check what it
cannot know: that every command ``ganymede --help`` lists has a page naming each option its
help shows, that every page is in the nav, and that the README's links and image, which are
outside the site, lead somewhere.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

import ganymede.pytest_plugin
from tests.cli.help_options import long_options_under, top_level_commands

REPO = Path(__file__).parents[1]
DOCS = REPO / "docs"
README = REPO / "README.md"
README_MAX_LINES = 150
# A Markdown link or image target, up to a title or the closing parenthesis.
LINK_TARGET = re.compile(r"\]\(\s*([^)\s]+)")


def command_page(name: str) -> Path:
    return DOCS / "commands" / f"{name}.md"


def named_options(text: str) -> set[str]:
    """Every long option a page spells out, as a whole word (``--json``, not ``--json-lines``)."""
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*(?![\w-])", text))


def plugin_options() -> set[str]:
    """The options the pytest plugin registers: the first argument of each ``addoption``."""
    tree = ast.parse(Path(ganymede.pytest_plugin.__file__).read_text(encoding="utf-8"))
    return {
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "addoption"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    }


def nav_pages(entries: Any) -> set[str]:
    """The page paths in mkdocs.yml's nav, however deep its sections go."""
    if isinstance(entries, str):
        return {entries}
    if isinstance(entries, list):
        return set().union(*(nav_pages(entry) for entry in entries))
    if isinstance(entries, dict):
        return set().union(*(nav_pages(value) for value in entries.values()))
    return set()


@pytest.mark.parametrize("name", top_level_commands())
def test_every_command_has_a_page_naming_every_option_of_its_help(name: str) -> None:
    page = command_page(name)
    assert page.is_file(), f"{page.relative_to(REPO)} is missing"
    missing = long_options_under(name) - named_options(page.read_text(encoding="utf-8"))
    assert not missing, f"{page.relative_to(REPO)} does not name {sorted(missing)}"


def test_the_pytest_page_names_every_option_of_the_plugin() -> None:
    options = plugin_options()
    assert "--ganymede" in options
    page = DOCS / "commands" / "pytest.md"
    missing = options - named_options(page.read_text(encoding="utf-8"))
    assert not missing, f"{page.relative_to(REPO)} does not name {sorted(missing)}"


def test_every_page_in_docs_is_in_the_nav() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    in_nav = nav_pages(config["nav"])
    on_disk = {path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md")}
    assert on_disk - in_nav == set(), "pages outside mkdocs.yml's nav"
    assert in_nav - on_disk == set(), "nav entries with no page"


def test_the_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_the_readme_links_and_image_lead_to_files_of_the_repository() -> None:
    text = README.read_text(encoding="utf-8")
    targets = LINK_TARGET.findall(text)
    relative = [t for t in targets if not re.match(r"[a-z]+:|#", t)]
    assert "docs/images/lab-agent-suggestion.png" in relative
    assert any(t.startswith("docs/") and t.endswith(".md") for t in relative)
    missing = [t for t in relative if not (REPO / t.split("#", 1)[0]).exists()]
    assert not missing, f"README.md links to missing files: {missing}"
