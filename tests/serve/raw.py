"""A websocket client written by hand on a plain socket, for clients that misbehave.

It does the opening handshake and then reads nothing until told to: the server's frames pile up
in the socket buffers behind a tiny receive window and its pings go unanswered, as with a frozen
tab or a vanished laptop. Room tests and kernel websocket tests both use it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import socket
import struct
import urllib.parse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from tests.serve.conftest import RunningServer
from tests.serve.websocket import DEADLINE

TEXT, CLOSE = 0x1, 0x8
# A small receive window, so a client that does not read stalls the server after a few frames.
RECEIVE_BUFFER = 4096


@dataclass
class RawSocket:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    async def send_text(self, text: str) -> None:
        """One masked text frame, as a browser sends it."""
        payload = text.encode()
        mask = os.urandom(4)
        header = bytes([0x80 | TEXT])
        if len(payload) < 126:
            header += bytes([0x80 | len(payload)])
        else:
            header += bytes([0x80 | 126]) + struct.pack("!H", len(payload))
        masked = bytes(byte ^ mask[i % 4] for i, byte in enumerate(payload))
        self.writer.write(header + mask + masked)
        await self.writer.drain()

    async def read_frame(self, timeout: float) -> tuple[int, bytes] | None:
        """The next frame's opcode and payload; None when the server hung up."""
        try:
            header = await asyncio.wait_for(self.reader.readexactly(2), timeout)
        except asyncio.IncompleteReadError:
            return None
        length = header[1] & 0x7F
        if length == 126:
            (length,) = struct.unpack("!H", await self.reader.readexactly(2))
        elif length == 127:
            (length,) = struct.unpack("!Q", await self.reader.readexactly(8))
        return header[0] & 0x0F, await self.reader.readexactly(length)

    async def close_code(self, timeout: float = DEADLINE) -> int | None:
        """Read every frame the server sent; the code of its close frame, None if it hung up."""
        while (frame := await self.read_frame(timeout)) is not None:
            opcode, payload = frame
            if opcode == CLOSE:
                return int(struct.unpack("!H", payload[:2])[0]) if payload else None
        return None


@asynccontextmanager
async def raw_socket(server: RunningServer, target: str) -> AsyncIterator[RawSocket]:
    """A connection to ``target`` (a path below the server's base, with its query) that has done
    the handshake and read nothing since; aborted on the way out."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", server.port))
    reader, writer = await asyncio.open_connection(sock=sock)
    path = urllib.parse.urlsplit(server.base).path
    key = base64.b64encode(os.urandom(16)).decode()
    request = (
        f"GET {path}{target} HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{server.port}\r\n"
        "Upgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
        f"Authorization: token {server.token}\r\n\r\n"
    )
    writer.write(request.encode())
    await writer.drain()
    answer = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), DEADLINE)
    try:
        assert answer.startswith(b"HTTP/1.1 101 "), answer
        yield RawSocket(reader, writer)
    finally:
        writer.transport.abort()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
