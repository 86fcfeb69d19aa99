"""What running a cell through the execute endpoint costs over talking to the kernel directly.

One `ganymede serve`, one kernel started through its API, one notebook room, two measures:

- Latency: each round runs `1 + 1` twice, interleaved so a busy machine slows both alike: once
  through `POST /api/kernels/{id}/execute` with `wait` (request, checks, clearing the cell, the
  server's own kernel client, outputs written into the room, answer), once as a bare
  jupyter_client execute on the same kernel (request, reply and iopub idle).
- A flood: a cell printing 10,000 lines, interleaved the same way: the time until a room client
  (a pycrdt document synced over the room's websocket, as JupyterLab is one) holds the whole
  output, against the time until a bare jupyter_client has received all of it on iopub.
  With `--flush` each line is flushed, so each is one iopub message: the worst case.

Prints the p50 of each and the ratios.

    .venv/bin/python bench/execute_endpoint.py [--runs 200] [--floods 20] [--flush]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import zmq
import zmq.asyncio
from jupyter_client import BlockingKernelClient
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_ydoc import YNotebook
from pycrdt import Provider, Text
from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

from ganymede.notebook.hashing import source_hash

SOURCE = "1 + 1"
LINES = 10_000
FLOODS = {
    False: f"for i in range({LINES}):\n    print(i)",
    True: f"for i in range({LINES}):\n    print(i, flush=True)",
}
"""The flood cell, without and with a flush after each line (then each is its own message)."""
FLOOD_TEXT = "".join(f"{i}\n" for i in range(LINES))
SERVING = "ganymede: serving "


def start_server(root: Path, home: Path) -> tuple[subprocess.Popen[str], str]:
    env = dict(os.environ)
    for name in ("data", "runtime", "config"):
        (home / name).mkdir(parents=True, exist_ok=True)
        env[f"JUPYTER_{name.upper()}_DIR"] = str(home / name)
    env.pop("JUPYTER_TOKEN", None)
    command = [sys.executable, "-m", "ganymede", "serve", str(root), "--port", "0", "--no-browser"]
    log = (home / "server.log").open("w")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith(SERVING):
            return process, line.rsplit(" at ", 1)[1].strip()
    raise SystemExit(f"ganymede serve exited {process.wait()}; see {home / 'server.log'}")


def write_notebook(path: Path, flood: str) -> None:
    cells = [
        {
            "cell_type": "code",
            "execution_count": None,
            "id": cell_id,
            "metadata": {},
            "outputs": [],
            "source": source,
        }
        for cell_id, source in (("sum", SOURCE), ("flood", flood))
    ]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(notebook, indent=1))


@dataclass(frozen=True)
class Served:
    """The server, its kernel and the notebook's room, as both measures need them."""

    base: str
    token: str
    kernel_id: str
    connection_file: Path
    room: str
    session_id: str
    flood: str

    def body(self, cell_id: str, source: str, **extra: object) -> dict[str, object]:
        cells = [{"cell_id": cell_id, "source_hash": source_hash(source)}]
        return {"document_id": self.room, "cells": cells, **extra}


def bare_execute(client: BlockingKernelClient) -> float:
    started = time.perf_counter()
    reply = client.execute_interactive(SOURCE, output_hook=lambda message: None, timeout=60)
    elapsed = time.perf_counter() - started
    assert reply["content"]["status"] == "ok"
    return elapsed


def endpoint_execute(api: httpx.Client, served: Served) -> float:
    body = served.body("sum", SOURCE, wait=60)
    started = time.perf_counter()
    answer = api.post(f"api/kernels/{served.kernel_id}/execute", json=body)
    elapsed = time.perf_counter() - started
    assert answer.status_code == 200 and answer.json()["finished"], answer.text
    return elapsed


def latency_rounds(api: httpx.Client, served: Served, runs: int) -> tuple[list[float], ...]:
    client = BlockingKernelClient(connection_file=str(served.connection_file))
    client.load_connection_file()
    client.start_channels(hb=False)  # no heartbeat: a starting kernel reads as dead
    client.wait_for_ready(timeout=60)
    endpoint_execute(api, served)  # the server connects to the kernel
    bare: list[float] = []
    through_endpoint: list[float] = []
    for _ in range(runs):
        bare.append(bare_execute(client))
        through_endpoint.append(endpoint_execute(api, served))
    client.stop_channels()
    return bare, through_endpoint


class RoomSocket:
    """pycrdt's channel over the room's websocket; every received frame counts as a change."""

    def __init__(self, connection: WebSocketClientConnection, path: str) -> None:
        self.connection = connection
        self.path = path
        self.changed = asyncio.Event()

    def __aiter__(self) -> RoomSocket:
        return self

    async def __anext__(self) -> bytes:
        message = await self.connection.read_message()
        if message is None:
            raise StopAsyncIteration
        self.changed.set()
        return message if isinstance(message, bytes) else message.encode()

    async def recv(self) -> bytes:
        return await self.__anext__()

    async def send(self, message: bytes) -> None:
        await self.connection.write_message(message, binary=True)


@asynccontextmanager
async def room_client(served: Served) -> AsyncIterator[tuple[YNotebook, RoomSocket]]:
    query = urllib.parse.urlencode({"sessionId": served.session_id})
    url = f"{served.base.replace('http://', 'ws://', 1)}api/collaboration/room/{served.room}"
    headers = {"Authorization": f"token {served.token}"}
    connection = await websocket_connect(HTTPRequest(f"{url}?{query}", headers=headers))
    notebook = YNotebook()
    socket = RoomSocket(connection, served.room)
    try:
        async with Provider(notebook.ydoc, socket) as provider:  # type: ignore[arg-type]
            await asyncio.wait_for(provider.synced.wait(), 60)
            yield notebook, socket
    finally:
        connection.close()


def flood_in(notebook: YNotebook) -> tuple[object, Text | None]:
    """The flood cell's execution count and stream text, as the room client holds them."""
    ycell = notebook.ycells[1]
    outputs = ycell["outputs"]
    return ycell.get("execution_count"), outputs[0]["text"] if len(outputs) else None


async def room_flood(api: httpx.AsyncClient, served: Served, room: Any) -> float:
    """From the request to the room client holding every line of this run (a new count)."""
    notebook, socket = room
    previous_count, _ = flood_in(notebook)
    url = f"api/kernels/{served.kernel_id}/execute"
    started = time.perf_counter()
    answer = await api.post(url, json=served.body("flood", served.flood))
    assert answer.status_code == 200, answer.text
    while True:
        socket.changed.clear()
        count, text = flood_in(notebook)
        full = text is not None and len(text) == len(FLOOD_TEXT)  # UTF-8 bytes: ASCII here
        if full and count not in (None, previous_count):
            elapsed = time.perf_counter() - started
            assert str(text) == FLOOD_TEXT
            return elapsed
        await asyncio.wait_for(socket.changed.wait(), 60)


async def bare_flood(client: AsyncKernelClient, flood: str) -> float:
    """From the request to the last line received on iopub."""
    while await client.iopub_channel.msg_ready():  # the endpoint's run, seen on iopub too
        await client.get_iopub_msg()
    started = time.perf_counter()
    msg_id = client.execute(flood)
    received = 0
    while received < len(FLOOD_TEXT):
        message = await client.get_iopub_msg(timeout=60)
        if message["parent_header"].get("msg_id") == msg_id and message["msg_type"] == "stream":
            received += len(message["content"]["text"])
    elapsed = time.perf_counter() - started
    reply = await client.get_shell_msg(timeout=60)
    assert reply["content"]["status"] == "ok"
    return elapsed


async def flood_rounds(served: Served, rounds: int) -> tuple[list[float], ...]:
    client = AsyncKernelClient(context=zmq.asyncio.Context())
    client.load_connection_file(str(served.connection_file))
    client.context.setsockopt(zmq.RCVHWM, 0)  # as the server's own client: no line dropped
    client.start_channels(hb=False)
    await client.wait_for_ready(timeout=60)
    headers = {"Authorization": f"token {served.token}"}
    bare: list[float] = []
    into_room: list[float] = []
    async with (
        httpx.AsyncClient(base_url=served.base, headers=headers, timeout=60) as api,
        room_client(served) as room,
    ):
        await room_flood(api, served, room)  # warm up both ways once
        await bare_flood(client, served.flood)
        for _ in range(rounds):
            bare.append(await bare_flood(client, served.flood))
            into_room.append(await room_flood(api, served, room))
    client.stop_channels()
    return bare, into_room


def p50_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--floods", type=int, default=20)
    parser.add_argument("--flush", action="store_true", help="flush after each printed line")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root, home = Path(scratch, "root"), Path(scratch, "jupyter")
        root.mkdir()
        write_notebook(root / "bench.ipynb", FLOODS[options.flush])
        process, url = start_server(root, home)
        base, token = url.split("lab?token=")
        try:
            headers = {"Authorization": f"token {token}"}
            with httpx.Client(base_url=base, headers=headers, timeout=60) as api:
                kernel_id = api.post("api/kernels", json={"name": "python3"}).json()["id"]
                session = api.put(
                    "api/collaboration/session/bench.ipynb",
                    json={"format": "json", "type": "notebook"},
                ).json()
                served = Served(
                    base,
                    token,
                    kernel_id,
                    home / "runtime" / f"kernel-{kernel_id}.json",
                    f"json:notebook:{session['fileId']}",
                    session["sessionId"],
                    FLOODS[options.flush],
                )
                bare, through_endpoint = latency_rounds(api, served, options.runs)
                bare_lines, room_lines = asyncio.run(flood_rounds(served, options.floods))
        finally:
            process.terminate()
            process.wait(timeout=60)
    print(f"runs: {options.runs} of {SOURCE!r}, interleaved")
    print(f"bare jupyter_client execute  p50 {p50_ms(bare):7.2f} ms")
    print(f"execute endpoint with wait   p50 {p50_ms(through_endpoint):7.2f} ms")
    print(f"ratio endpoint / bare        {p50_ms(through_endpoint) / p50_ms(bare):7.2f}")
    flushed = ", each flushed" if options.flush else ""
    print(f"floods: {options.floods} of {LINES:,} printed lines{flushed}, interleaved")
    print(f"bare client has every line   p50 {p50_ms(bare_lines):7.2f} ms")
    print(f"room client has every line   p50 {p50_ms(room_lines):7.2f} ms")
    print(f"ratio room / bare            {p50_ms(room_lines) / p50_ms(bare_lines):7.2f}")


if __name__ == "__main__":
    main()
