"""``--log-output``: a running cell's outputs as text on stderr, as they arrive (papermill's
``--log-output``), so a long headless run shows what it is doing in a CI log.

Pure logic: ``message_text`` turns one iopub message into the text a terminal would show;
``LinePrefixer`` marks each line with its notebook when several run at once, holding a partial
line back until it is finished so two notebooks' lines never mix within one line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def message_text(msg_type: str, content: Mapping[str, Any], *, color: bool) -> str:
    """What one iopub message shows as text; empty for messages that show nothing."""
    if msg_type == "stream":
        return str(content.get("text", ""))
    if msg_type == "error":
        traceback = "\n".join(content.get("traceback") or []) + "\n"
        return traceback if color else _ANSI.sub("", traceback)
    if msg_type in ("display_data", "execute_result"):
        text = (content.get("data") or {}).get("text/plain")
        if text is None:
            return ""
        return "".join(text) + "\n" if isinstance(text, list) else f"{text}\n"
    return ""


class LinePrefixer:
    """Text of many sources, each finished line prefixed with its source's name."""

    def __init__(self) -> None:
        self._partial: dict[str, str] = {}

    def feed(self, source: str, text: str) -> str:
        """The finished lines ``text`` completes, prefixed; the rest waits for more."""
        pending = self._partial.pop(source, "") + text
        finished, newline, rest = pending.rpartition("\n")
        if rest:
            self._partial[source] = rest
        if not newline:
            return ""
        return "".join(f"{source}: {line}\n" for line in finished.split("\n"))

    def flush(self, source: str) -> str:
        """Whatever partial line ``source`` left, as a line of its own."""
        rest = self._partial.pop(source, "")
        return f"{source}: {rest}\n" if rest else ""
