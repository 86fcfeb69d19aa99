"""``ganymede mcp`` over stdio: the door (``door.py``) served on stdin/stdout.

stdout carries MCP frames only: the SDK points file descriptor 1 at stderr while it serves, so
kernels the server starts and stray prints cannot break the wire, and the embedded server's
logs and banner go to stderr. SIGTERM (how clients stop their servers) ends the door as
closing stdin does: the session is deleted and an embedded server saves its rooms and stops.
"""

from __future__ import annotations

import asyncio
import signal
import sys

from ganymede.mcp.door import DoorOptions, open_door
from ganymede.mcp.server import NotebookDoor
from ganymede.process_exit import leave_now


async def serve_stdio(options: DoorOptions) -> bool:
    """Serve MCP on stdin/stdout until the client hangs up; True if a server was embedded.

    On SIGTERM the process ends here, once the door is closed: the SDK's stdin reader sits in
    a thread no cancellation reaches.
    """
    async with open_door(options) as opened:
        terminated = await _until_hung_up_or_terminated(opened.door)
    if terminated:
        leave_now()
    return opened.embedded


async def _until_hung_up_or_terminated(door: NotebookDoor) -> bool:
    """Serve until the client closes stdin (False) or SIGTERM comes (True)."""
    loop = asyncio.get_running_loop()
    terminated = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, terminated.set)
    serving = asyncio.ensure_future(door.mcp.run_stdio_async())
    ending = asyncio.ensure_future(terminated.wait())
    try:
        await asyncio.wait({serving, ending}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        ending.cancel()
    if serving.done():
        serving.result()
        print("ganymede mcp: the client closed stdin; closing", file=sys.stderr, flush=True)
        return False
    print("ganymede mcp: SIGTERM; closing", file=sys.stderr, flush=True)
    return True
