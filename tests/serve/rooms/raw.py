"""The hand-written websocket client of ``tests.serve.raw``, on a room."""

from __future__ import annotations

import urllib.parse
from contextlib import AbstractAsyncContextManager

from tests.serve.conftest import RunningServer
from tests.serve.raw import RawSocket, raw_socket


def raw_room_socket(
    server: RunningServer, room: str, session_id: str
) -> AbstractAsyncContextManager[RawSocket]:
    """A connection to ``room`` that has done the handshake and read nothing since."""
    query = urllib.parse.urlencode({"sessionId": session_id})
    return raw_socket(server, f"api/collaboration/room/{room}?{query}")
