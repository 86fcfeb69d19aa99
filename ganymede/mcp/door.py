"""Opening and closing the MCP door, whichever transport carries it (stdio or HTTP).

Both transports serve one ``NotebookDoor`` over one agent session: the server that serves the
directory (or the ``--url`` one), else one embedded in this process, which stops with the door.
What differs between them is only how MCP frames come in and go out.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ganymede.client.discover import ServerInfo, server_at, server_for
from ganymede.mcp.client import AgentClient
from ganymede.mcp.link import AgentLink
from ganymede.mcp.server import NotebookDoor

if TYPE_CHECKING:
    from ganymede.mcp.embedded import EmbeddedServer


@dataclass(frozen=True)
class DoorOptions:
    url: str | None
    token: str | None
    agent: str | None
    root: Path
    config_file: Path | None = None


@dataclass(frozen=True)
class OpenDoor:
    door: NotebookDoor
    embedded: bool  # the process then has server threads that a normal exit would wait on


@asynccontextmanager
async def open_door(options: DoorOptions) -> AsyncIterator[OpenDoor]:
    """The door to the running server (or to one embedded here), closed on the way out: the
    agent session deleted, then an embedded server's rooms saved and the server stopped."""
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
    try:
        rediscover = None if embedded is not None else lambda: _running_server(options)
        door = NotebookDoor(AgentLink(AgentClient(server), options.agent, rediscover))
        try:
            if options.agent is not None:
                await door.link.open(None)
            yield OpenDoor(door, embedded is not None)
        finally:
            await door.close()
    finally:
        if embedded is not None:
            await asyncio.to_thread(embedded.stop)


def _running_server(options: DoorOptions) -> ServerInfo | None:
    if options.url is not None:
        return server_at(options.url, options.token)
    return server_for(options.root)
