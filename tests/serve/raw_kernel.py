"""A kernel websocket client written by hand on a socket with a tiny receive window, which
reads nothing until told to: it shows whether the server bounds what waits for such a client."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import struct
import urllib.parse
import uuid

from tests.serve.conftest import RunningServer
from tests.serve.rooms.client import eventually

# A shared limit for the servers these tests start ([serve] in their ganymede.toml).
MAX_BODY = 256 * 1024
QUEUE_MESSAGES = 50
BOUNDED_CONFIG = f"[serve]\nmax_body_size = {MAX_BODY}\nclient_queue_messages = {QUEUE_MESSAGES}\n"
LINES = 1000
PRINT_LOTS = f"for i in range({LINES}):\n    print(str(i).rjust(20000, 'x'), flush=True)\n"
TEXT, CLOSE = 0x1, 0x8
RECEIVE_BUFFER = 4096
DEADLINE = 60.0


class RawKernelSocket:
    """Just enough websocket to send requests and read what the server sent, when told to."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def send(self, message: dict[str, object]) -> None:
        payload = json.dumps(message).encode()
        mask = os.urandom(4)
        header = bytes([0x80 | TEXT])
        if len(payload) < 126:
            header += bytes([0x80 | len(payload)])
        else:
            header += bytes([0x80 | 126]) + struct.pack("!H", len(payload))
        masked = bytes(byte ^ mask[i % 4] for i, byte in enumerate(payload))
        self.writer.write(header + mask + masked)
        await self.writer.drain()

    async def receive(self) -> dict[str, object] | None:
        """The next message, None when the server closed."""
        header = await self.reader.readexactly(2)
        length = header[1] & 0x7F
        if length == 126:
            (length,) = struct.unpack("!H", await self.reader.readexactly(2))
        elif length == 127:
            (length,) = struct.unpack("!Q", await self.reader.readexactly(8))
        payload = await self.reader.readexactly(length)
        if header[0] & 0x0F == CLOSE:
            return None
        return json.loads(payload)


async def connect(server: RunningServer, kernel_id: str) -> RawKernelSocket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", server.port))
    reader, writer = await asyncio.open_connection(sock=sock)
    path = urllib.parse.urlsplit(server.base).path
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        (
            f"GET {path}api/kernels/{kernel_id}/channels HTTP/1.1\r\n"
            f"Host: 127.0.0.1:{server.port}\r\n"
            "Upgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Authorization: token {server.token}\r\n\r\n"
        ).encode()
    )
    await writer.drain()
    answer = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), DEADLINE)
    assert answer.startswith(b"HTTP/1.1 101 "), answer
    return RawKernelSocket(reader, writer)


def request(msg_type: str, content: dict[str, object]) -> dict[str, object]:
    msg_id = uuid.uuid4().hex
    header = {"msg_id": msg_id, "msg_type": msg_type, "session": "s", "username": "test"}
    header |= {"version": "5.3", "date": ""}
    return {"header": header, "parent_header": {}, "metadata": {}, "content": content} | {
        "channel": "shell"
    }


async def reply_to(client: RawKernelSocket, sent: dict[str, object]) -> tuple[dict, int]:
    """Read until the shell reply to ``sent``; it, and how many stream outputs came first."""
    msg_id = sent["header"]["msg_id"]  # type: ignore[index]
    streams = 0
    while True:
        message = await asyncio.wait_for(client.receive(), DEADLINE)
        assert message is not None, "the server closed the kernel websocket"
        if message["msg_type"] == "stream":
            streams += 1
        parent = message["parent_header"]
        if message["channel"] == "shell" and parent.get("msg_id") == msg_id:  # type: ignore[union-attr]
            return message, streams


async def output_is_dropped_and_the_connection_stays(server: RunningServer, kernel_id: str) -> None:
    """A client that stops reading while its kernel prints megabytes: the server says it drops
    output, and once the client reads again the replies are there, the connection open."""
    client = await connect(server, kernel_id)
    try:
        execute = request("execute_request", {"code": PRINT_LOTS, "silent": False})
        await client.send(execute)
        dropping = f"kernel {kernel_id}: a client is "
        await eventually(lambda: dropping in server.log.read_text(), "output dropped", DEADLINE)

        reply, streams = await reply_to(client, execute)
        assert reply["content"]["status"] == "ok"
        assert 0 < streams < LINES
        info = request("kernel_info_request", {})
        await client.send(info)
        reply, _ = await reply_to(client, info)
        assert reply["content"]["status"] == "ok"
    finally:
        client.writer.transport.abort()
