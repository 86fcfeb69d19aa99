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
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import zmq
import zmq.asyncio
from common import RoomClient, Server, open_room, p50_ms, start_ganymede
from jupyter_client import BlockingKernelClient
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_ydoc import YNotebook
from pycrdt import Text

from ganymede.notebook.hashing import source_hash

SOURCE = "1 + 1"
LINES = 10_000
FLOODS = {
    False: f"for i in range({LINES}):\n    print(i)",
    True: f"for i in range({LINES}):\n    print(i, flush=True)",
}
"""The flood cell, without and with a flush after each line (then each is its own message)."""
FLOOD_TEXT = "".join(f"{i}\n" for i in range(LINES))
NOTEBOOK = "bench.ipynb"


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

    server: Server
    kernel_id: str
    connection_file: Path
    room: str
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


def flood_in(notebook: YNotebook) -> tuple[object, Text | None]:
    """The flood cell's execution count and stream text, as the room client holds them."""
    ycell = notebook.ycells[1]
    outputs = ycell["outputs"]
    return ycell.get("execution_count"), outputs[0]["text"] if len(outputs) else None


async def room_flood(api: httpx.AsyncClient, served: Served, room: RoomClient) -> float:
    """From the request to the room client holding every line of this run (a new count)."""
    previous_count, _ = flood_in(room.notebook)
    url = f"api/kernels/{served.kernel_id}/execute"

    def whole() -> bool:
        count, text = flood_in(room.notebook)
        full = text is not None and len(text) == len(FLOOD_TEXT)  # UTF-8 bytes: ASCII here
        return full and count not in (None, previous_count)

    started = time.perf_counter()
    answer = await api.post(url, json=served.body("flood", served.flood))
    assert answer.status_code == 200, answer.text
    await room.until(whole, "every line in the room")
    elapsed = time.perf_counter() - started
    assert str(flood_in(room.notebook)[1]) == FLOOD_TEXT
    return elapsed


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
    server = served.server
    bare: list[float] = []
    into_room: list[float] = []
    room = await open_room(server, NOTEBOOK, 2)
    async with httpx.AsyncClient(base_url=server.base, headers=server.headers, timeout=60) as api:
        await room_flood(api, served, room)  # warm up both ways once
        await bare_flood(client, served.flood)
        for _ in range(rounds):
            bare.append(await bare_flood(client, served.flood))
            into_room.append(await room_flood(api, served, room))
    await room.close()
    client.stop_channels()
    return bare, into_room


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--floods", type=int, default=20)
    parser.add_argument("--flush", action="store_true", help="flush after each printed line")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root, home = Path(scratch, "root"), Path(scratch, "jupyter")
        root.mkdir()
        write_notebook(root / NOTEBOOK, FLOODS[options.flush])
        server = start_ganymede(root, home)
        try:
            with httpx.Client(base_url=server.base, headers=server.headers, timeout=60) as api:
                kernel_id = api.post("api/kernels", json={"name": "python3"}).json()["id"]
                file_id = api.post("api/fileid/index", params={"path": NOTEBOOK}).json()["id"]
                served = Served(
                    server,
                    kernel_id,
                    home / "runtime" / f"kernel-{kernel_id}.json",
                    f"json:notebook:{file_id}",
                    FLOODS[options.flush],
                )
                bare, through_endpoint = latency_rounds(api, served, options.runs)
                bare_lines, room_lines = asyncio.run(flood_rounds(served, options.floods))
        finally:
            server.stop()
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
