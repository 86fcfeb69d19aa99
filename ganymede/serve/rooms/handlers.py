"""The collaboration endpoints JupyterLab's docprovider calls, unchanged.

``PUT /api/collaboration/session/{path}`` (the path as one URL-encoded segment) gives the
file's id and the server's session id; the frontend then opens the websocket
``/api/collaboration/room/{format}:{type}:{fileId}?sessionId=…``. Close codes are the ones the
frontend acts on: 1003 with a JSON reason for an unknown session (a dialog offering to reload),
4404 for a file that is gone, 4400 for one the room cannot read.

Both need ``read`` on ``contents`` (a user without it is refused 403, the websocket before its
upgrade); a connection whose user may not also ``write``, or to a file whose mode makes it
read-only, is a viewer's (see ``DocumentRoom``).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Awaitable
from http import HTTPStatus
from typing import Any

from jupyter_server.auth.decorator import authorized, ws_authenticated
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from tornado import web
from tornado.iostream import StreamClosedError
from tornado.websocket import WebSocketClosedError, WebSocketHandler

from ganymede.errors import (
    FrameError,
    InvalidNotebook,
    NotebookNotFound,
    PathError,
    UnsupportedFrame,
    UsageError,
)
from ganymede.fileid import os_path_of
from ganymede.serve import metrics
from ganymede.serve.context import SETTINGS_KEY, GanymedeContext
from ganymede.serve.identity import login_name
from ganymede.serve.roles import CONTENTS, READ, WRITE, allows
from ganymede.serve.rooms.connection import ConnectionLimits, Outbox
from ganymede.serve.rooms.document import DocumentKind
from ganymede.serve.rooms.manager import RoomManager
from ganymede.serve.rooms.presence import AwarenessRoom
from ganymede.serve.rooms.protocol import (
    MAX_CLOSE_REASON,
    CloseCode,
    RoomName,
    unknown_session_reason,
)
from ganymede.serve.rooms.room import DocumentRoom

ROOMS_SETTINGS_KEY = "ganymede_rooms"
# RFC 6455 framing: the first byte of a final binary frame, and the length bytes that say a
# 16-bit or a 64-bit length follows.
FIN_BINARY = 0x82
SHORT_LENGTH, LONG_LENGTH = 126, 127
UNCOPIED_FRAME = 16 * 1024
"""Bytes from which a frame is handed to the socket as it is rather than joined with others."""


def close_reason(text: str) -> str:
    """``text`` cut to what a close frame can carry, never inside a UTF-8 sequence."""
    return text.encode("utf-8")[:MAX_CLOSE_REASON].decode("utf-8", errors="ignore")


def binary_messages(frames: list[bytes]) -> list[bytes]:
    """``frames`` as the server's websocket messages (unmasked, unfragmented binary frames),
    in as few writes as may be: small frames joined with their headers, each large one on
    its own, not copied (one frame the room sends to a hundred clients stays one buffer)."""
    writes: list[bytes] = []
    joined: list[bytes] = []
    for frame in frames:
        size = len(frame)
        if size < SHORT_LENGTH:
            joined.append(bytes((FIN_BINARY, size)))
        elif size <= 0xFFFF:
            joined.append(struct.pack("!BBH", FIN_BINARY, SHORT_LENGTH, size))
        else:
            joined.append(struct.pack("!BBQ", FIN_BINARY, LONG_LENGTH, size))
        if size < UNCOPIED_FRAME:
            joined.append(frame)
            continue
        writes += [b"".join(joined), frame]
        joined = []
    if joined:
        writes.append(b"".join(joined))
    return writes


def room_manager(settings: dict[str, Any]) -> RoomManager:
    rooms: RoomManager = settings[ROOMS_SETTINGS_KEY]
    return rooms


class SessionHandler(APIHandler):
    """Indexes the file and names the session: the frontend's first step to a room.

    A PUT, but it changes no file: a user who may only read still opens rooms.
    """

    auth_resource = CONTENTS

    @web.authenticated
    @authorized(READ, CONTENTS)
    async def put(self, path: str) -> None:
        context: GanymedeContext = self.settings[SETTINGS_KEY]
        rooms = room_manager(self.settings)
        try:
            body = json.loads(self.request.body or b"null")
            kind = DocumentKind.of(body.get("format"), body.get("type"))
        except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
            return self._refuse(HTTPStatus.BAD_REQUEST, 'body must be {"format": …, "type": …}')
        except UsageError as error:
            return self._refuse(HTTPStatus.BAD_REQUEST, str(error))
        try:
            if os_path_of(context.root, path).is_dir():
                return self._refuse(HTTPStatus.BAD_REQUEST, f"{path}: a directory, not a file")
            known = context.file_ids.get_id(path)
            # A registered type's file may not exist yet: jupyter-collaboration names it
            # anyway (its room then closes 4404 until the file is there).
            file_id = known or context.file_ids.index(path, missing_ok=kind.registered)
        except PathError as error:
            return self._refuse(HTTPStatus.BAD_REQUEST, str(error))
        except NotebookNotFound as error:
            return self._refuse(HTTPStatus.NOT_FOUND, str(error))
        self.set_status(HTTPStatus.OK if known else HTTPStatus.CREATED)
        self.set_header("Content-Type", "application/json")
        answer = {"format": kind.format, "type": kind.type, "fileId": file_id}
        self.finish(json.dumps(answer | {"sessionId": rooms.session_id}))

    def _refuse(self, status: int, message: str) -> None:
        """A JSON error body, written directly (an HTTPError would %-format the message)."""
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"message": message, "reason": HTTPStatus(status).phrase}))


class RoomHandler(WebSocketMixin, WebSocketHandler, JupyterHandler):
    """One client's connection to a room: frames in go to the room, frames out are queued.

    Authenticated as the kernels websocket is (token, cookie). Frames out go through the
    client's ``Outbox``, which also pings it (``[serve]`` limits). A frame that breaks the
    protocol, or is larger than ``max_body_size``, closes this connection only.
    """

    auth_resource = CONTENTS
    room: AwarenessRoom | None = None
    _outbox: Outbox | None = None
    _gone = False
    _may_write = False

    @property
    def ping_interval(self) -> int:
        """No pings from WebSocketMixin or tornado: the outbox pings, with ``[serve]`` timings."""
        return 0

    def set_default_headers(self) -> None:
        """None of JupyterHandler's page headers make sense on a websocket upgrade."""

    def get_compression_options(self) -> dict[str, Any] | None:
        options: dict[str, Any] | None = self.settings.get("websocket_compression_options")
        return options

    @property
    def max_message_size(self) -> int:
        context: GanymedeContext = self.settings[SETTINGS_KEY]
        return context.config.serve.max_body_size

    async def prepare(self) -> None:  # type: ignore[override]
        """Decided before the upgrade: a user who may not read is refused with a plain 403.

        Here, not in an overridden ``get``: tornado's ``get`` runs the whole connection, so its
        callers' frames (``get`` and both decorators') would live as long as the tab.
        """
        await super().prepare()
        await self._admit()

    @ws_authenticated
    @authorized(READ, CONTENTS)
    async def _admit(self) -> None:
        self._may_write = await allows(self, WRITE, CONTENTS)

    async def open(self, name: str) -> None:  # type: ignore[override]
        super().open(name)
        self._forget_the_upgrade()
        # The outbox already writes a batch at a time; Nagle's algorithm would hold a frame
        # written while the last is unacknowledged until the client's delayed ACK (40 ms).
        self.set_nodelay(True)
        context: GanymedeContext = self.settings[SETTINGS_KEY]
        limits = ConnectionLimits.of(context.config.serve)
        self._outbox = Outbox(self, limits, name=name, log=self.log)
        rooms = room_manager(self.settings)
        session_id = self.get_query_argument("sessionId", None)
        if RoomName.parse(name).is_document and session_id != rooms.session_id:
            self.close(CloseCode.UNSUPPORTED_DATA, unknown_session_reason(session_id))
            return
        try:
            room = await rooms.join(name, self)
        except NotebookNotFound:
            self.close(CloseCode.FILE_NOT_FOUND, "file not found")
            return
        except (InvalidNotebook, UsageError, UnicodeDecodeError, PathError) as error:
            self.log.warning("room %s: cannot open: %s", name, error)
            self.close(CloseCode.BAD_REQUEST, close_reason(str(error)))
            return
        if self._gone:  # the client hung up while the room was opening
            rooms.leave(room, self)
            return
        if isinstance(room, DocumentRoom) and not (self._may_write and room.file.writable()):
            room.view_only(self)  # before the client's first frame: tornado waits for open
        self.room = room
        metrics.ROOM_CLIENTS.inc()

    def _forget_the_upgrade(self) -> None:
        """Let go of what only the upgrade read or wrote: the request's headers and cookies, and
        the response's headers and login cookie, sent with the 101. A connection lives as long
        as its tab, and a classroom's hundred readers would each keep them (2 to 3 KB a reader
        from a bare client, more from a browser's); nothing reads them after the handshake.
        """
        self.request.headers.clear()  # in place: tornado's ``get`` holds it in a local
        self._headers.clear()
        vars(self.request).pop("_cookies", None)  # tornado's parse of the Cookie header
        vars(self).pop("_new_cookie", None)  # the cookies set on the response

    async def on_message(self, message: str | bytes) -> None:
        if self._outbox is not None:
            self._outbox.heard()
        room = self.room
        if room is None or self.ws_connection is None or self.ws_connection.is_closing():
            return  # refused or closed: what the client still sends goes nowhere
        if isinstance(message, str):
            self.close(CloseCode.UNSUPPORTED_DATA, "text frames are not part of the protocol")
            return
        try:
            await room.receive(self, message)
        except FrameError as error:
            unsupported = isinstance(error, UnsupportedFrame)
            code = CloseCode.UNSUPPORTED_DATA if unsupported else CloseCode.INVALID_PAYLOAD
            self.log.warning("room %s: closing a client that sent %s", room.name, error)
            self.close(code, close_reason(str(error)))

    def on_pong(self, data: bytes) -> None:
        if self._outbox is not None:
            self._outbox.heard()

    def on_close(self) -> None:
        self._gone = True
        if self._outbox is not None:
            self._outbox.stop()
        if self.room is not None:
            room_manager(self.settings).leave(self.room, self)
            self.room = None
            metrics.ROOM_CLIENTS.dec()

    @property
    def user_name(self) -> str | None:
        """Who logged in on this connection, the name a room falls back on when the client's
        awareness names nobody."""
        return login_name(self.current_user)

    def send(self, frame: bytes) -> None:
        """Queue ``frame``; a connection already closing simply misses it."""
        if self._outbox is None or self.ws_connection is None or self.ws_connection.is_closing():
            return
        self._outbox.send(frame)

    def write_frames(self, frames: list[bytes]) -> Awaitable[None]:
        """All of ``frames`` in one write to the network: tornado's ``write_message`` writes
        each message by itself, a system call each. It still frames them when the connection
        compresses (each client's compressor is its own)."""
        connection = self.ws_connection
        if connection is None or connection.is_closing() or connection.stream is None:
            raise WebSocketClosedError()
        if getattr(connection, "_compressor", None) is not None:
            written = [self.write_message(frame, binary=True) for frame in frames]
            return written[-1]
        try:
            return [connection.stream.write(data) for data in binary_messages(frames)][-1]
        except StreamClosedError:
            raise WebSocketClosedError() from None

    def abort(self, code: int, reason: str) -> None:
        """Close, then tear the connection down now: the client is gone and will not answer.

        Tornado would otherwise wait five seconds for the client's close before the room hears
        it left.
        """
        connection = self.ws_connection
        self.close(code, reason)
        if connection is not None and connection.stream is not None:
            connection.stream.close()


default_handlers = [
    (r"/api/collaboration/session/(.+)", SessionHandler),
    (r"/api/collaboration/room/(.+)", RoomHandler),
]
