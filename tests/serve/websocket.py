"""Ending a test's websocket connections properly, so no socket outlives its test.

tornado's ``close()`` only sends the close frame: the socket is released once the server's
answer comes back, which needs the event loop to run on. A test that closes and returns (or
whose ``asyncio.run`` ends) leaves the socket open until the garbage collector finds it, and its
ResourceWarning then surfaces in whichever test happens to be running.
"""

from __future__ import annotations

import asyncio

from tornado.websocket import WebSocketClientConnection

DEADLINE = 10.0


async def closed_with(connection: WebSocketClientConnection) -> tuple[int | None, str | None]:
    """Read until the server closes; its close code and reason."""
    while await asyncio.wait_for(connection.read_message(), DEADLINE) is not None:
        pass
    connection.close()  # already closed; this releases the client's side
    return connection.close_code, connection.close_reason


async def hang_up(connection: WebSocketClientConnection) -> None:
    """Close from our side and wait for the server's answer."""
    stream = connection.protocol.stream if connection.protocol is not None else None
    hung_up = stream is not None and stream.closed()  # the server vanished without a close frame
    if connection.close_code is not None or hung_up:  # nothing more will come: no end to read
        connection.close()
        return
    connection.close()
    await closed_with(connection)
