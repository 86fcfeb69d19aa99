"""A served notebook's kernel calls the host while a JupyterLab-like client watches its websocket.

The client must see the cell's own messages and nothing of the host comm: no comm messages, no
status or other message caused by what the server sent, no host comm in ``comm_info_reply``;
and the kernel reads busy over REST while the cell waits on host calls.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server

NOTEBOOK = "journal/today.ipynb"
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


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    home = tmp_path_factory.mktemp("host-ws")
    root = home / "root"
    (root / "journal").mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), root / NOTEBOOK)
    nbformat.write(nbformat.v4.new_notebook(), root / "journal" / "older.ipynb")
    running = start_server(root, jupyter_env(home / "jupyter"))
    yield running
    stop_server(running)


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

    async def send(self, channel: str, msg_type: str, content: dict[str, Any]) -> str:
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": msg_type, "session": self.session}
        header |= {"username": "test", "version": "5.3", "date": ""}
        message = {"header": header, "parent_header": {}, "metadata": {}, "content": content}
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

    async def run(self, code: str) -> tuple[dict[str, Any], str]:
        msg_id = await self.execute(code)
        return await self.finished(msg_id)

    async def execute(self, code: str) -> str:
        content = {"code": code, "silent": False, "store_history": True, "allow_stdin": False}
        return await self.send("shell", "execute_request", content)

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


def start_session(server: RunningServer) -> str:
    with server.client() as api:
        body = {"path": NOTEBOOK, "type": "notebook", "name": "", "kernel": {"name": "python3"}}
        created = api.post("api/sessions", json=body)
        assert created.status_code == 201, created.text
        return str(created.json()["kernel"]["id"])


def kernel_state(server: RunningServer, kernel_id: str) -> str:
    with server.client() as api:
        return str(api.get(f"api/kernels/{kernel_id}").json()["execution_state"])


CALLING_CELL = """
import os
from ganymede.kernel import host
h = host()
print(h.notebook, h.has('notebooks.list'), sorted(e['path'] for e in h.notebooks.list('journal')))
print('calling', flush=True)
calls = 0
while not os.path.exists('GO_FILE'):
    h.notebooks.list('journal')
    calls += 1
print('calls made', calls > 0)
"""


@pytest.mark.parametrize("v1", [False, True], ids=["json", "v1"])
async def test_host_traffic_stays_off_the_kernel_websocket(served: RunningServer, v1: bool) -> None:
    kernel_id = start_session(served)
    socket = await connect(served, kernel_id, v1)
    try:
        await socket.wait_for(lambda m: m["msg_type"] == "status")  # the connection is live
        go_file = f"go-{uuid.uuid4().hex}"
        msg_id = await socket.execute(CALLING_CELL.replace("GO_FILE", go_file))
        await socket.wait_for(lambda m: "calling" in socket.stdout(msg_id))
        busy_during_calls = kernel_state(served, kernel_id)
        (served.root / "journal" / go_file).touch()
        reply, stdout = await socket.finished(msg_id)
        assert reply["status"] == "ok", reply
        assert stdout.splitlines() == [
            f"{NOTEBOOK} True ['journal/older.ipynb', 'journal/today.ipynb']",
            "calling",
            "calls made True",
        ]
        assert busy_during_calls == "busy"
        info_id = await socket.send("shell", "comm_info_request", {})
        info = await socket.wait_for(
            lambda m: m["msg_type"] == "comm_info_reply" and m["parent_header"]["msg_id"] == info_id
        )
        assert info["content"] == {"status": "ok", "comms": {}}
    finally:
        await socket.close()
    comm_messages = [m for m in socket.received if m["msg_type"].startswith("comm_")]
    assert [m["msg_type"] for m in comm_messages] == ["comm_info_reply"]
    foreign = [
        m
        for m in socket.received
        if m["parent_header"] and m["parent_header"].get("session") != socket.session
    ]
    assert foreign == []


async def test_restarted_kernel_gets_the_comm_again(served: RunningServer) -> None:
    kernel_id = start_session(served)
    socket = await connect(served, kernel_id)
    try:
        reply, stdout = await socket.run("from ganymede.kernel import host\nprint(host().notebook)")
        assert (reply["status"], stdout) == ("ok", f"{NOTEBOOK}\n")
        with served.client() as api:
            assert api.post(f"api/kernels/{kernel_id}/restart").status_code == 200
        reply, stdout = await socket.run(
            "import os\nfrom ganymede.kernel import host\n"
            "print(os.getpid() > 0, host().notebook, host().has('notebooks.read'))"
        )
        assert (reply["status"], stdout) == ("ok", f"True {NOTEBOOK} True\n")
    finally:
        await socket.close()
    assert not [m for m in socket.received if m["msg_type"] in ("comm_open", "comm_msg")]


def test_server_log_is_clean(served: RunningServer, tmp_path: Path) -> None:
    assert "host: " not in served.log.read_text()
