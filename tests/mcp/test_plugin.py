"""The Claude Code plugin: its JSON files are well formed and every command they run exists."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ganymede.cli.mcp import HOOKS

PLUGIN = Path(__file__).parents[2] / "plugin"


def load(relative: str) -> Any:
    return json.loads((PLUGIN / relative).read_text())


def hook_commands() -> list[str]:
    hooks = load("hooks/hooks.json")["hooks"]
    return [
        hook["command"]
        for event in ("UserPromptSubmit", "PostToolUse")
        for group in hooks[event]
        for hook in group["hooks"]
    ]


def commands() -> list[list[str]]:
    """Every command line the plugin runs, as words."""
    servers = load(".mcp.json")["mcpServers"]
    lines = [[server["command"], *server["args"]] for server in servers.values()]
    lines += [shlex.split(command) for command in hook_commands()]
    lines += [shlex.split(monitor["command"]) for monitor in load("monitors/monitors.json")]
    return lines


def test_the_manifest_names_the_plugin() -> None:
    manifest = load(".claude-plugin/plugin.json")
    assert manifest["name"] == "ganymede"
    assert manifest["version"] and manifest["description"]


def test_both_hooks_ask_for_changes_in_their_own_format() -> None:
    hooks = load("hooks/hooks.json")["hooks"]
    assert set(hooks) == {"UserPromptSubmit", "PostToolUse"}
    answers = [shlex.split(command) for command in hook_commands()]
    assert [words[words.index("--hook") + 1] for words in answers] == list(HOOKS)
    assert all(
        hook["type"] == "command" for group in hooks["PostToolUse"] for hook in group["hooks"]
    )


def test_monitors_have_a_name_a_command_and_a_description() -> None:
    monitors = load("monitors/monitors.json")
    assert monitors
    for monitor in monitors:
        assert {"name", "command", "description"} <= set(monitor)
        assert shlex.split(monitor["command"])[:3] == ["ganymede", "mcp", "watch"]


def test_the_skill_has_front_matter_naming_it() -> None:
    text = (PLUGIN / "skills/journal/SKILL.md").read_text()
    front = text.split("---\n")[1]
    assert "name: journal" in front and "description:" in front
    for tool in ("notebook_read", "request_done", "cell_edit", "cell_add", "suggestions_list"):
        assert tool in text


@pytest.mark.parametrize("words", commands(), ids=" ".join)
def test_every_command_the_plugin_runs_exists_with_its_options(words: list[str]) -> None:
    assert words[0] == "ganymede"
    # click parses every option before it shows the help: an unknown one fails.
    done = subprocess.run(
        [sys.executable, "-m", "ganymede", *words[1:], "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Usage: ganymede {' '.join(words[1:3])}")
