"""Kernel restarts on `ganymede serve` against plain `jupyter server`, on the same notebook.

Two servers from this environment: `ganymede serve`, and `jupyter server` with jupyter_server's
own kernel manager (Ganymede's extension not loaded), as jupyter-collaboration runs it. Each
serves a copy of one notebook; a session starts its kernel, and a kernel websocket stays
connected across the restarts, as JupyterLab's does. Each round restarts each server's kernel
once, alternating, so a busy machine slows both alike, and measures two things:

- the answer: how long `POST /api/kernels/{id}/restart` takes;
- usable again: from the POST until the reply to a `1 + 1` sent over the kernel websocket as
  soon as the POST answered.

Prints p50, min and max of each, and the ratios ganymede / anchor.

    .venv/bin/python bench/restart.py [--restarts 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from common import WAIT, Server, p50_ms, start_ganymede, start_jupyter_server
from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

NOTEBOOK = "bench.ipynb"
SOURCE = "1 + 1"
ANCHOR = "jupyter server"


@dataclass
class KernelSocket:
    """A kernel websocket speaking the JSON protocol; replies are routed by their parent id."""

    connection: WebSocketClientConnection
    session: str = field(default_factory=lambda: uuid.uuid4().hex)
    replies: dict[str, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    reader: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.reader = asyncio.create_task(self._read())

    async def execute(self, code: str) -> dict[str, Any]:
        """Send ``code`` on shell and wait for its ``execute_reply``."""
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": "execute_request", "session": self.session}
        header |= {"username": "bench", "version": "5.3", "date": ""}
        content = {"code": code, "silent": False, "store_history": True}
        content |= {"user_expressions": {}, "allow_stdin": False, "stop_on_error": True}
        message = {"header": header, "parent_header": {}, "metadata": {}, "content": content}
        reply: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.replies[msg_id] = reply
        await self.connection.write_message(json.dumps({**message, "channel": "shell"}))
        try:
            return await asyncio.wait_for(reply, WAIT)
        finally:
            del self.replies[msg_id]

    async def close(self) -> None:
        self.connection.close()
        if self.reader is not None:
            await self.reader

    async def _read(self) -> None:
        while True:
            frame = await self.connection.read_message()
            if frame is None:
                return
            message = json.loads(frame)
            if message["channel"] != "shell":
                continue
            reply = self.replies.get(message["parent_header"].get("msg_id", ""))
            if reply is not None and not reply.done():
                reply.set_result(message["content"])


@dataclass
class Restarts:
    """One server's kernel and what its restarts took."""

    server: Server
    kernel_id: str
    socket: KernelSocket
    answers: list[float] = field(default_factory=list)
    usable: list[float] = field(default_factory=list)


async def open_kernel(server: Server) -> Restarts:
    """A session on the notebook (its kernel started), its websocket, a first cell run."""
    async with httpx.AsyncClient(base_url=server.base, headers=server.headers, timeout=WAIT) as api:
        body = {"path": NOTEBOOK, "type": "notebook", "name": "", "kernel": {"name": "python3"}}
        answer = await api.post("api/sessions", json=body)
    answer.raise_for_status()
    kernel_id = answer.json()["kernel"]["id"]
    url = server.base.replace("http://", "ws://", 1) + f"api/kernels/{kernel_id}/channels"
    connection = await websocket_connect(HTTPRequest(url, headers=server.headers))
    socket = KernelSocket(connection)
    socket.start()
    await check(socket)
    return Restarts(server, kernel_id, socket)


async def check(socket: KernelSocket) -> None:
    reply = await socket.execute(SOURCE)
    if reply.get("status") != "ok":
        raise SystemExit(f"{SOURCE!r} failed: {reply}")


async def restart_once(api: httpx.AsyncClient, restarts: Restarts) -> None:
    started = time.perf_counter()
    answer = await api.post(f"api/kernels/{restarts.kernel_id}/restart")
    answered = time.perf_counter()
    if answer.status_code != 200:
        raise SystemExit(f"{restarts.server.name}: restart answered {answer.status_code}")
    await check(restarts.socket)
    restarts.answers.append(answered - started)
    restarts.usable.append(time.perf_counter() - started)


async def measure(servers: list[Server], rounds: int) -> list[Restarts]:
    measured = [await open_kernel(server) for server in servers]
    clients = {
        restarts.server.name: httpx.AsyncClient(
            base_url=restarts.server.base, headers=restarts.server.headers, timeout=WAIT
        )
        for restarts in measured
    }
    try:
        for restarts in measured:  # once each before measuring
            await restart_once(clients[restarts.server.name], restarts)
            restarts.answers.clear()
            restarts.usable.clear()
        for _ in range(rounds):
            for restarts in measured:
                await restart_once(clients[restarts.server.name], restarts)
    finally:
        for restarts in measured:
            await clients[restarts.server.name].aclose()
            await restarts.socket.close()
    return measured


def report(ours: Restarts, anchor: Restarts) -> None:
    def row(what: str, figures: list[float]) -> None:
        spread = f"min {min(figures) * 1000:6.0f}  max {max(figures) * 1000:6.0f}"
        print(f"{what:44} p50 {p50_ms(figures):6.0f} ms  {spread}")

    print(f"restarts: {len(ours.answers)} per server, alternating")
    for restarts in (ours, anchor):
        row(f"{restarts.server.name}: restart answered", restarts.answers)
        row(f"{restarts.server.name}: restart -> {SOURCE!r} replied", restarts.usable)
    for what, attribute in (("answered", "answers"), ("usable", "usable")):
        ratio = p50_ms(getattr(ours, attribute)) / p50_ms(getattr(anchor, attribute))
        print(f"ratio {what:8} ganymede / {anchor.server.name} {ratio:5.2f}  (target <= 1.2)")


def write_notebook(path: Path) -> None:
    cell = {"cell_type": "code", "execution_count": None, "id": "sum", "metadata": {}}
    cells = [{**cell, "outputs": [], "source": SOURCE}]
    kernelspec = {"display_name": "Python 3", "language": "python", "name": "python3"}
    notebook = {"cells": cells, "metadata": {"kernelspec": kernelspec}}
    path.write_text(json.dumps({**notebook, "nbformat": 4, "nbformat_minor": 5}, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--restarts", type=int, default=20, help="restarts per server")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        servers: list[Server] = []
        try:
            for name in ("ganymede", "anchor"):
                root, home = Path(scratch, name, "root"), Path(scratch, name, "jupyter")
                root.mkdir(parents=True)
                home.mkdir()
                write_notebook(root / NOTEBOOK)
                if name == "ganymede":
                    servers.append(start_ganymede(root, home))
                else:
                    plain = [sys.executable, "-m", "jupyter_server"]
                    servers.append(start_jupyter_server(ANCHOR, plain, root, home))
            ours, anchor = asyncio.run(measure(servers, options.restarts))
        finally:
            for server in servers:
                server.stop()
    report(ours, anchor)


if __name__ == "__main__":
    main()
