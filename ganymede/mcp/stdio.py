"""``ganymede mcp`` over stdio: find the server (or embed one), open the door, close it cleanly.

stdout carries MCP frames only: the SDK points file descriptor 1 at stderr while it serves, so
kernels the server starts and stray prints cannot break the wire, and the embedded server's
logs and banner go to stderr. SIGTERM (how clients stop their servers) ends the door as
closing stdin does: the session is deleted and an embedded server saves its rooms and stops.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ganymede.client.discover import ServerInfo, server_at, server_for
from ganymede.mcp.client import AgentClient
from ganymede.mcp.link import AgentLink
from ganymede.mcp.server import NotebookDoor
from ganymede.process_exit import leave_now

if TYPE_CHECKING:
    from ganymede.mcp.embedded import EmbeddedServer


@dataclass(frozen=True)
class DoorOptions:
    url: str | None
    token: str | None
    agent: str | None
    root: Path
    config_file: Path | None = None


async def serve_stdio(options: DoorOptions) -> bool:
    """Serve MCP on stdin/stdout until the client hangs up; True if a server was embedded.

    On SIGTERM the process ends here, once the session is closed and the embedded server
    stopped: the SDK's stdin reader sits in a thread no cancellation reaches.
    """
    embedded: EmbeddedServer | None = None
    server = _running_server(options)
    if server is None:
        from ganymede.mcp.embedded import EmbeddedServer  # jupyter_server: only when embedding

        embedded = EmbeddedServer(options.root, options.config_file)
        server = await asyncio.to_thread(embedded.start)
        print(
            f"ganymede mcp: no server serves {options.root}; serving it here: "
            f"{server.url}lab?token={server.token}",
            file=sys.stderr,
            flush=True,
        )
    terminated = False
    try:
        rediscover = None if embedded is not None else lambda: _running_server(options)
        door = NotebookDoor(AgentLink(AgentClient(server), options.agent, rediscover))
        try:
            if options.agent is not None:
                await door.link.open(None)
            terminated = await _until_hung_up_or_terminated(door)
        finally:
            await door.close()
    finally:
        if embedded is not None:
            await asyncio.to_thread(embedded.stop)
    if terminated:
        leave_now()
    return embedded is not None


def _running_server(options: DoorOptions) -> ServerInfo | None:
    if options.url is not None:
        return server_at(options.url, options.token)
    return server_for(options.root)


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
        return False
    return True
