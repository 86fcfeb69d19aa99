"""Terminal escape sequences out of text: tracebacks as plain text for JSON and pipes.

IPython colours its tracebacks with ANSI SGR codes (and may wrap file names in OSC 8 links);
a program reading ``--json`` or a log file wants the words, not the escapes.
"""

from __future__ import annotations

import re

_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: hyperlinks, titles
    r"|\x1b[@-Z\\-_]"  # other two-character escapes
)


def strip_ansi(text: str) -> str:
    """``text`` without its terminal escape sequences."""
    return _ESCAPES.sub("", text) if "\x1b" in text else text
