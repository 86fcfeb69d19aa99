"""A collaboration client as JupyterLab is one: a pycrdt document synced over a real websocket.

The document side is pycrdt's own ``Provider`` (as jupyter-collaboration's tests use it); the
transport is tornado's websocket client. Frames the provider does not handle (awareness, RAW
save answers) are kept for the test to read.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import urllib.parse
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from jupyter_ydoc import YNotebook, YUnicode
from jupyter_ydoc.ybasedoc import YBaseDoc
from pycrdt import Provider
from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, WebSocketClosedError, websocket_connect

from ganymede.serve.rooms.protocol import MessageType
from tests.serve.conftest import RunningServer
from tests.serve.websocket import DEADLINE, hang_up


async def eventually(condition: Callable[[], object], what: str, timeout: float = DEADLINE) -> None:
    """Wait until ``condition()`` holds, checking often; fail naming ``what`` at the deadline."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def open_socket(
    server: RunningServer,
    room: str,
    session_id: str | None,
    *,
    authenticated: bool = True,
    headers: dict[str, str] | None = None,
) -> Any:
    """A raw websocket to a room (``session_id`` None: no query string, as global awareness);
    ``headers`` authenticate it instead of the server's token (a browser's cookies)."""
    query = "" if session_id is None else "?" + urllib.parse.urlencode({"sessionId": session_id})
    base = server.base.replace("http://", "ws://", 1)
    if headers is None:
        headers = {"Authorization": f"token {server.token}"} if authenticated else {}
    request = HTTPRequest(f"{base}api/collaboration/room/{room}{query}", headers=headers)
    return await websocket_connect(request)


@dataclass
class Channel:
    """pycrdt's Channel over a tornado connection; non-sync frames go to ``others``."""

    connection: WebSocketClientConnection
    path: str
    others: asyncio.Queue[bytes] = field(default_factory=asyncio.Queue)

    def __aiter__(self) -> Channel:
        return self

    async def __anext__(self) -> bytes:
        while True:
            message = await self.connection.read_message()
            if message is None:
                raise StopAsyncIteration
            assert isinstance(message, bytes)
            if message[0] == MessageType.SYNC:
                return message
            await self.others.put(message)

    async def recv(self) -> bytes:
        return await self.__anext__()

    async def send(self, message: bytes) -> None:
        # Once the server closed this client, a real one would reconnect; this one just stops.
        with contextlib.suppress(WebSocketClosedError):
            await self.connection.write_message(message, binary=True)


@dataclass
class RoomClient:
    shared: YBaseDoc
    channel: Channel
    provider: Provider

    @property
    def connection(self) -> WebSocketClientConnection:
        return self.channel.connection

    async def send_raw(self, frame: bytes) -> None:
        await self.connection.write_message(frame, binary=True)

    async def next_frame(self, kind: MessageType) -> bytes:
        """The next frame of ``kind`` the server sent (others of other kinds are dropped)."""
        while True:
            frame = await asyncio.wait_for(self.channel.others.get(), DEADLINE)
            if frame[0] == kind:
                return frame


@asynccontextmanager
async def room_client(
    server: RunningServer,
    room: str,
    session_id: str,
    shared: YBaseDoc | None = None,
    headers: dict[str, str] | None = None,
) -> AsyncIterator[RoomClient]:
    """A client synced with ``room`` (``json:notebook:…`` or ``text:file:…``); ``shared`` is
    the document of a client coming back with its history, else a fresh one."""
    if shared is None:
        shared = YNotebook() if room.startswith("json:notebook:") else YUnicode()
    connection = await open_socket(server, room, session_id, headers=headers)
    channel = Channel(connection, room)
    try:
        async with Provider(shared.ydoc, channel) as provider:  # type: ignore[arg-type]
            await asyncio.wait_for(provider.synced.wait(), DEADLINE)
            yield RoomClient(shared, channel, provider)
    finally:
        await hang_up(connection)
