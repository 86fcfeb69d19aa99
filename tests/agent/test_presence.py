"""An agent's awareness state: what JupyterLab's collaboration UI reads from it."""

from __future__ import annotations

import pytest

from ganymede.agent.presence import (
    COLORS,
    agent_user,
    awareness_state,
    color,
    display_name,
    global_state,
    initials,
)


@pytest.mark.parametrize(
    ("client", "readable"),
    [
        ("claude-code", "Claude Code"),
        ("Claude-Code", "Claude Code"),
        ("my_agent", "My Agent"),
        ("GPT-helper", "GPT Helper"),
        ("   ", "Agent"),
        ("…", "…"),
    ],
)
def test_display_name_is_readable(client: str, readable: str) -> None:
    assert display_name(client) == readable


@pytest.mark.parametrize(
    ("name", "letters"),
    [("Claude Code", "CC"), ("codex", "Co"), ("Gemini CLI helper", "GC"), ("", "A")],
)
def test_initials(name: str, letters: str) -> None:
    assert initials(name) == letters


def test_color_is_stable_and_from_the_palette() -> None:
    assert color("claude-code") == color("Claude-Code ")
    assert color("claude-code") in COLORS
    assert len({color(f"agent-{n}") for n in range(50)}) > 1


def test_user_has_what_the_collaboration_panel_shows() -> None:
    user = agent_user("claude-code")
    assert user["name"] == "claude-code"
    assert user["display_name"] == "Claude Code"
    assert user["initials"] == "CC"
    assert user["color"].startswith("#")


def test_caret_is_one_primary_cursor_and_none_without_a_cell() -> None:
    caret = {"item": {"client": 7, "clock": 3}, "assoc": -1}
    state = awareness_state("claude-code", caret, running="c1")
    assert state["cursors"] == [{"anchor": caret, "head": caret, "primary": True}]
    assert state["running"] == "c1"
    assert "cursors" not in awareness_state("claude-code", None)


def test_global_state_lists_the_notebooks_and_the_current_one() -> None:
    state = global_state("claude-code", ["a.ipynb", "dir/b.ipynb"])
    assert state["documents"] == ["a.ipynb", "dir/b.ipynb"]
    assert state["current"] == "notebook:dir/b.ipynb"
    assert state["user"]["display_name"] == "Claude Code"
    assert global_state("claude-code", [])["current"] is None
