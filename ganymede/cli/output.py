"""What every subcommand shares for talking to a person: one-line errors, warnings, colour rules."""

from __future__ import annotations

import os
import sys
from typing import NoReturn, TextIO

EXIT_OK = 0
EXIT_USAGE = 2


def fail(message: str, code: int, command: str = "ganymede") -> NoReturn:
    """Print ``<command>: error: <message>`` as one line on stderr and exit with ``code``."""
    print(f"{command}: error: {message}", file=sys.stderr)
    sys.exit(code)


def warn(message: str) -> None:
    """A one-line warning on stderr."""
    print(f"ganymede: warning: {message}", file=sys.stderr)


def wants_color(stream: TextIO) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    return stream.isatty() and not os.environ.get("NO_COLOR")
