"""Leaving the process once everything that matters is closed, without waiting for threads.

``ganymede serve`` and ``ganymede mcp`` both end this way: by the time they call it, their own
clean-up has run (rooms saved, kernels shut down, runtime files removed, the MCP session
deleted). What may remain are threads a normal interpreter exit would wait on forever: an anyio
worker thread still serving a request when the stop came (a contents listing of a big
directory, say), the MCP SDK's stdin reader, an embedded server's idle workers. Ctrl-C would
never return. Nothing is left to flush but the log streams and stdio.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import NoReturn


def leave_now(status: int = 0) -> NoReturn:
    """End the process with ``status`` at once, the log streams and stdio flushed first."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
