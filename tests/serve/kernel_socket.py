"""The kernel websocket as JupyterLab speaks it: a real websocket on /api/kernels/{id}/channels,
JSON text frames or JupyterLab 4's binary framing, keeping every message it receives."""

from __future__ import annotations

import asyncio
import itertools
import json
import uuid
from typing import Any

from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

from tests.serve.conftest import RunningServer

WAIT = 60
V1 = "v1.kernel.websocket.jupyter.org"
"""JupyterLab 4's binary framing; without it the server speaks JSON text frames."""
PARTS = ("header", "parent_header", "metadata", "content")


def v1_encode(channel: str, message: dict[str, Any]) -> bytes:
    """A message as JupyterLab frames it: part offsets, then the channel and the JSON parts."""
    parts = [channel.encode(), *(json.dumps(message[key]).encode() for key in PARTS)]
    offsets, position = [], 8 * (len(parts) + 2)
    for part in parts:
        offsets.append(position)
        position += len(part)
    offsets.append(position)
    counts = [len(offsets), *offsets]
    return b"".join([*(number.to_bytes(8, "little") for number in counts), *parts])


def v1_decode(frame: bytes) -> dict[str, Any]:
    count = int.from_bytes(frame[:8], "little")
    offsets = [int.from_bytes(frame[8 * (i + 1) : 8 * (i + 2)], "little") for i in range(count)]
    channel, *parts = (frame[start:end] for start, end in itertools.pairwise(offsets))
    message = {key: json.loads(part) for key, part in zip(PARTS, parts[:4], strict=True)}
    return {**message, "channel": channel.decode(), "msg_type": message["header"]["msg_type"]}


class KernelSocket:
    """The kernel websocket as JupyterLab speaks it (default protocol), keeping every message."""

    def __init__(self, connection: WebSocketClientConnection, session: str, v1: bool) -> None:
        self.connection = connection
        self.session = session
        self.v1 = v1
        self.received: list[dict[str, Any]] = []
        self.sent: set[str] = set()
        self._arrived = asyncio.Condition()
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        while True:
            frame = await self.connection.read_message()
            if frame is None:
                return
            message = v1_decode(frame) if isinstance(frame, bytes) else json.loads(frame)
            async with self._arrived:
                self.received.append(message)
                self._arrived.notify_all()

    async def send(
        self,
        channel: str,
        msg_type: str,
        content: dict[str, Any],
        metadata: dict[str, Any] | None = None,
    ) -> str:
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": msg_type, "session": self.session}
        header |= {"username": "test", "version": "5.3", "date": ""}
        message = {
            "header": header,
            "parent_header": {},
            "metadata": metadata or {},
            "content": content,
        }
        self.sent.add(msg_id)
        if self.v1:
            await self.connection.write_message(v1_encode(channel, message), binary=True)
        else:
            await self.connection.write_message(json.dumps({**message, "channel": channel}))
        return msg_id

    async def wait_for(self, check: Any) -> dict[str, Any]:
        async def found() -> dict[str, Any]:
            async with self._arrived:
                while True:
                    for message in self.received:
                        if check(message):
                            return message
                    await self._arrived.wait()

        return await asyncio.wait_for(found(), WAIT)

    async def answering(self) -> None:
        """Wait until the kernel's answer to a kernel_info_request comes on both shell and
        iopub, asking again every half second: after a restart the server's iopub subscription
        reconnects to the new kernel in its own time, and what the kernel publishes before
        that is lost (jupyter_server waits the same way when a websocket opens)."""
        deadline = asyncio.get_running_loop().time() + WAIT
        while True:
            msg_id = await self.send("shell", "kernel_info_request", {})

            def answered(m: dict[str, Any], msg_id: str = msg_id) -> bool:
                return m["msg_type"] == "status" and m["parent_header"].get("msg_id") == msg_id

            try:
                await asyncio.wait_for(self.wait_for(answered), 0.5)
                return
            except TimeoutError:
                if asyncio.get_running_loop().time() > deadline:
                    raise

    async def run(self, code: str) -> tuple[dict[str, Any], str]:
        msg_id = await self.execute(code)
        return await self.finished(msg_id)

    async def execute(self, code: str, cell_id: str | None = None) -> str:
        """Send ``code`` to run; with ``cell_id``, as JupyterLab runs a notebook's cell."""
        content = {"code": code, "silent": False, "store_history": True, "allow_stdin": False}
        metadata = {"cellId": cell_id} if cell_id is not None else None
        return await self.send("shell", "execute_request", content, metadata)

    async def finished(self, msg_id: str) -> tuple[dict[str, Any], str]:
        reply = await self.wait_for(
            lambda m: m["msg_type"] == "execute_reply" and m["parent_header"]["msg_id"] == msg_id
        )
        await self.wait_for(
            lambda m: (
                m["msg_type"] == "status"
                and m["parent_header"].get("msg_id") == msg_id
                and m["content"]["execution_state"] == "idle"
            )
        )
        return reply["content"], self.stdout(msg_id)

    def stdout(self, msg_id: str) -> str:
        return "".join(
            m["content"]["text"]
            for m in self.received
            if m["msg_type"] == "stream" and m["parent_header"].get("msg_id") == msg_id
        )

    async def close(self) -> None:
        self.connection.close()
        await self._reader


async def connect(server: RunningServer, kernel_id: str, v1: bool = False) -> KernelSocket:
    session = uuid.uuid4().hex
    url = server.base.replace("http", "ws", 1) + f"api/kernels/{kernel_id}/channels"
    request = HTTPRequest(
        f"{url}?session_id={session}", headers={"Authorization": f"token {server.token}"}
    )
    connection = await websocket_connect(request, subprotocols=[V1] if v1 else None)
    assert connection.selected_subprotocol == (V1 if v1 else None)
    return KernelSocket(connection, session, v1)
