"""How an agent shows in a room's awareness: the ``user`` JupyterLab's collaboration UI lists,
and the ``cursors`` its editors draw.

JupyterLab's Collaboration panel lists every awareness state's ``user`` (``display_name``,
``initials`` and ``color`` on the avatar); its editors draw, for each state, the entries of
``cursors`` (``anchor`` and ``head``: Yjs relative positions in JSON, ``primary`` the one the
name flag hangs on) that resolve into the cell's own ``source`` text. An agent has no editor,
so its cursor is a caret: anchor and head at one place. Pure, no I/O.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

# Readable names of the clients people meet most; any other name is title-cased by words.
KNOWN_NAMES = {
    "claude-code": "Claude Code",
    "claude-ai": "Claude",
    "cursor-vscode": "Cursor",
    "codex-mcp-client": "Codex",
    "gemini-cli-mcp-client": "Gemini CLI",
}
WORD = re.compile(r"[A-Za-z0-9]+")
# Distinct, readable under white text: JupyterLab writes the initials in white on this colour.
COLORS = (
    "#d55e00",
    "#0072b2",
    "#009e73",
    "#cc79a7",
    "#7b4ea3",
    "#b8860b",
    "#1f7a8c",
    "#c0392b",
)


def display_name(client_name: str) -> str:
    """``claude-code`` → ``Claude Code``: what the Collaboration panel writes."""
    known = KNOWN_NAMES.get(client_name.strip().lower())
    if known is not None:
        return known
    words = WORD.findall(client_name)
    if not words:
        return client_name.strip() or "Agent"
    return " ".join(word if word.isupper() else word.capitalize() for word in words)


def initials(name: str) -> str:
    """The first letter of the first two words (one word: its first two letters)."""
    words = WORD.findall(name)
    if not words:
        return "A"
    if len(words) == 1:
        return words[0][:2].capitalize()
    return (words[0][0] + words[1][0]).upper()


def color(client_name: str) -> str:
    """The same colour for the same agent in every room and every run of the server."""
    digest = hashlib.sha256(client_name.strip().lower().encode("utf-8")).digest()
    return COLORS[digest[0] % len(COLORS)]


def agent_user(client_name: str) -> dict[str, str]:
    """The awareness ``user`` of an agent, shaped as JupyterLab's own ``user`` is."""
    readable = display_name(client_name)
    return {
        "username": client_name,
        "name": client_name,
        "display_name": readable,
        "initials": initials(readable),
        "color": color(client_name),
        "kind": "agent",
    }


def awareness_state(
    client_name: str,
    caret: Mapping[str, Any] | None,
    *,
    running: str | None = None,
) -> dict[str, Any]:
    """An agent's awareness state in a document's room; ``caret`` a relative position (JSON) in
    the source of the cell it works on, None when it works on no cell (it only reads).
    ``running``: the id of the cell it has running, so a client can say who runs what."""
    state: dict[str, Any] = {"user": agent_user(client_name)}
    if caret is not None:
        state["cursors"] = [{"anchor": dict(caret), "head": dict(caret), "primary": True}]
    if running is not None:
        state["running"] = running
    return state


def global_state(client_name: str, documents: Sequence[str]) -> dict[str, Any]:
    """An agent's state in JupyterLab's global awareness, which its Collaboration panel lists:
    the notebooks it is in (``documents``, paths) and the one it worked in last (``current``,
    as JupyterLab writes a notebook tab: ``notebook:<path>``)."""
    return {
        "user": agent_user(client_name),
        "documents": list(documents),
        "current": f"notebook:{documents[-1]}" if documents else None,
    }
