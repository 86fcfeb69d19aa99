"""The one-line texts ``mcp watch`` and ``mcp changes`` print, from the server's entries. Pure.

A watch line names the notebook, the cell, who, and the call to make, e.g.::

    journal.ipynb: Thomas asked in cell 3f2a (request): "check the 2019 rows"
    → notebook_read(path: "journal.ipynb")

(all on one line).

``mcp changes`` gives the same facts for a hook: per notebook, one line per changed cell, then
the server's ``@@changed`` line, cut to what a hook may add to the agent's context.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

QUOTE_LIMIT = 80
HOOK_CONTEXT_LIMIT = 10_000
HOOK_EVENTS = {"user-prompt": "UserPromptSubmit", "post-tool": "PostToolUse"}
_ADDRESS = re.compile(r"^\s*@[\w.-]+[:,]?\s*")
_VERBS = {
    "added": "added",
    "edited": "edited",
    "moved": "moved",
    "deleted": "deleted",
    "ran": "ran",
}


def watch_line(event: Mapping[str, Any]) -> str:
    """One settled change as a person (or an agent's monitor) reads it."""
    path = str(event.get("path", ""))
    who = str(event.get("by") or "someone")
    changes = [str(change) for change in event.get("change") or []]
    kind = "request" if "request" in changes else str(event.get("cell_type", "cell"))
    if "request" in changes:
        what = f"{who} asked in cell {event.get('id')} ({kind})"
    else:
        done = " and ".join(_VERBS.get(change, change) for change in changes) or "changed"
        what = f"{who} {done} cell {event.get('id')} ({kind})"
    quote = _quote(str(event.get("source") or ""), strip_address="request" in changes)
    said = f": {quote}" if quote else ""
    return f"{path}: {what}{said} → notebook_read(path: {json.dumps(path)})"


def watch_json(event: Mapping[str, Any]) -> str:
    return json.dumps(event, sort_keys=True, ensure_ascii=False)


def changes_text(notebooks: Iterable[Mapping[str, Any]]) -> str:
    """What others changed, per notebook: a line per cell, then the ``@@changed`` line."""
    blocks = []
    for notebook in notebooks:
        lines = [f"Changes by others in {notebook['path']} since your last read:"]
        lines += [f"- {_change_line(entry)}" for entry in notebook.get("changes") or []]
        lines.append(str(notebook["line"]))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def hook_output(event: str, text: str) -> str:
    """Claude Code's hook answer adding ``text`` to the context (``event``: a HOOK_EVENTS key)."""
    if len(text) > HOOK_CONTEXT_LIMIT:
        note = "\n… more changes: call notebook_read(since: …) as the line above says."
        text = text[: HOOK_CONTEXT_LIMIT - len(note)] + note
    answer = {
        "hookSpecificOutput": {"hookEventName": HOOK_EVENTS[event], "additionalContext": text}
    }
    return json.dumps(answer, ensure_ascii=False)


def _change_line(entry: Mapping[str, Any]) -> str:
    changes = ", ".join(str(change) for change in entry.get("change") or []) or "changed"
    where = str(entry.get("cell_type", "cell"))
    if entry.get("index") is not None:
        where += f", index {entry['index']}"
    return f"cell {entry.get('id')} ({where}): {changes} by {entry.get('by') or 'someone'}"


def _quote(source: str, strip_address: bool) -> str:
    """The cell's first line, without the ``@agent`` it may start with, cut short."""
    first = next((line.strip() for line in source.splitlines() if line.strip()), "")
    if strip_address:
        first = _ADDRESS.sub("", first, count=1)
    if len(first) > QUOTE_LIMIT:
        first = first[: QUOTE_LIMIT - 1] + "…"
    return json.dumps(first, ensure_ascii=False) if first else ""
