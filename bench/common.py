"""What the benchmarks share: a `ganymede serve` of their own, a room client, percentiles.

Each benchmark runs as a script (`python bench/<name>.py`), so this module is imported by its
plain name from the benchmarks' own folder.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from jupyter_ydoc import YNotebook
from pycrdt import (
    Awareness,
    TransactionEvent,
    create_awareness_message,
    create_sync_message,
    create_update_message,
    handle_sync_message,
)
from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

SERVING = "ganymede: serving "
SYNC = 0
WAIT = 60.0  # the longest any single step may take before the run is called broken


@dataclass
class Server:
    name: str
    process: subprocess.Popen[bytes]
    base: str  # http://127.0.0.1:port/
    token: str
    root: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"}

    def stop(self) -> None:
        """SIGTERM, and SIGKILL for a server still running a minute later (said on stderr),
        so one hung server does not end a run that has measured the others."""
        self.process.terminate()
        try:
            self.process.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            print(f"{self.name} still running {WAIT:.0f} s after SIGTERM: killed", file=sys.stderr)
            self.process.kill()
            self.process.wait()


def isolated_env(home: Path) -> dict[str, str]:
    """This environment with Jupyter's data, runtime and config dirs of the benchmark's own."""
    env = dict(os.environ)
    for name in ("data", "runtime", "config"):
        (home / name).mkdir(parents=True, exist_ok=True)
        env[f"JUPYTER_{name.upper()}_DIR"] = str(home / name)
    env.pop("JUPYTER_TOKEN", None)
    return env


def start_ganymede(root: Path, home: Path, *args: str) -> Server:
    """`ganymede serve` on a free loopback port, once it prints its URL."""
    env = isolated_env(home)
    log = (home / "server.log").open("w")
    command = [sys.executable, "-m", "ganymede", "serve", str(root), "--port", "0"]
    process = subprocess.Popen(
        [*command, "--no-browser", *args], stdout=subprocess.PIPE, stderr=log, env=env, cwd=home
    )
    assert process.stdout is not None
    for raw in process.stdout:
        line = raw.decode()
        if line.startswith(SERVING):
            base, token = line.rsplit(" at ", 1)[1].strip().split("lab?token=")
            return Server("ganymede", process, base, token, root, env)
    raise SystemExit(f"ganymede serve exited {process.wait()}; see {home / 'server.log'}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_jupyter_server(
    name: str, executable: list[str], root: Path, home: Path, *args: str
) -> Server:
    """`jupyter server` (``executable``) with only a token, a root dir, a loopback port and
    ``args``, once its API answers."""
    port, token = free_port(), secrets.token_hex(16)
    command = [
        *executable,
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        "--allow-root",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        *args,
    ]
    log = (home / "server.log").open("w")
    process = subprocess.Popen(
        command, stdout=log, stderr=subprocess.STDOUT, env=isolated_env(home), cwd=home
    )
    server = Server(name, process, f"http://127.0.0.1:{port}/", token, root)
    deadline = time.monotonic() + WAIT
    with httpx.Client(headers=server.headers, timeout=5) as api:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise SystemExit(
                    f"jupyter server exited {process.returncode}:\n{Path(log.name).read_text()}"
                )
            try:
                if api.get(f"{server.base}api/status").status_code == 200:
                    return server
            except httpx.TransportError:
                pass
            time.sleep(0.1)
    raise SystemExit(f"jupyter server did not answer in {WAIT:.0f} s")


@dataclass
class RoomClient:
    """One synced copy of a room's notebook, as a docprovider client holds it."""

    connection: WebSocketClientConnection
    notebook: YNotebook = field(default_factory=YNotebook)
    news: asyncio.Event = field(default_factory=asyncio.Event)
    applying: bool = False
    reader: asyncio.Task[None] | None = None
    awareness: Awareness | None = None  # made on the first move_cursor

    def start(self) -> None:
        self.notebook.ydoc.observe(self._send_own_change)
        self.reader = asyncio.create_task(self._read())
        self.connection.write_message(create_sync_message(self.notebook.ydoc), binary=True)

    async def until(self, condition: Callable[[], bool], what: str) -> None:
        """Wait for ``condition`` to hold, checking after every message the server sends."""
        deadline = time.monotonic() + WAIT
        while True:
            self.news.clear()
            if condition():
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.reader is None or self.reader.done():
                raise SystemExit(f"gave up waiting for {what}")
            try:
                await asyncio.wait_for(self.news.wait(), remaining)
            except TimeoutError:
                continue

    async def wait_for(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Like ``until``, but False after ``timeout`` instead of giving up."""
        try:
            await asyncio.wait_for(self.until(condition, "a condition"), timeout)
        except TimeoutError:
            return False
        return True

    def source(self, index: int) -> str:
        return str(self.notebook.ycells[index]["source"])

    def append(self, index: int, text: str) -> None:
        """Type at the end of a cell and flag the tab dirty, as JupyterLab does."""
        with self.notebook.ydoc.transaction():
            source = self.notebook.ycells[index]["source"]
            source += text
            self.notebook.ystate["dirty"] = True

    def move_cursor(self, index: int) -> None:
        """Say where the cursor went, as JupyterLab's editor does when a person clicks into a
        cell (its awareness state changes)."""
        if self.awareness is None:  # one for the client, so its clock goes up as a client's does
            self.awareness = Awareness(self.notebook.ydoc)
        awareness = self.awareness
        awareness.set_local_state({"user": {"name": "bench"}, "cursors": [{"cell": index}]})
        update = awareness.encode_awareness_update([awareness.client_id])
        self.connection.write_message(create_awareness_message(update), binary=True)

    async def close(self) -> None:
        self.connection.close()
        if self.reader is not None:
            await self.reader

    async def _read(self) -> None:
        while True:
            message = await self.connection.read_message()
            if message is None:
                return
            assert isinstance(message, bytes)
            if message[0] == SYNC:
                self.applying = True
                try:
                    reply = handle_sync_message(message[1:], self.notebook.ydoc)
                finally:
                    self.applying = False
                if reply is not None:
                    self.connection.write_message(reply, binary=True)
            self.news.set()

    def _send_own_change(self, event: TransactionEvent) -> None:
        if not self.applying:
            self.connection.write_message(create_update_message(event.update), binary=True)


async def open_room(server: Server, path: str, cell_count: int) -> RoomClient:
    """Session request, websocket, sync: the client holds every cell when this returns."""
    client = await connect_room(server, path, "json", "notebook", YNotebook())
    await client.until(lambda: len(client.notebook.ycells) == cell_count, f"{path} to sync")
    return client


async def connect_room(
    server: Server, path: str, format_: str, type_: str, shared: Any
) -> RoomClient:
    """Session request and websocket for ``path`` as a ``format_``/``type_`` document, its
    sync under way into ``shared`` (anything with a ``ydoc``)."""
    segment = urllib.parse.quote(path, safe="")
    async with httpx.AsyncClient(base_url=server.base, headers=server.headers) as api:
        answer = await api.put(
            f"api/collaboration/session/{segment}", json={"format": format_, "type": type_}
        )
    answer.raise_for_status()
    session = answer.json()
    query = urllib.parse.urlencode({"sessionId": session["sessionId"]})
    url = server.base.replace("http://", "ws://", 1)
    url += f"api/collaboration/room/{format_}:{type_}:{session['fileId']}?{query}"
    request = HTTPRequest(url, headers=server.headers, request_timeout=WAIT)
    connection = await websocket_connect(request, max_message_size=1 << 30)
    client = RoomClient(connection, notebook=shared)
    client.start()
    return client


def make_notebook(cell_count: int) -> dict[str, Any]:
    """A notebook shaped like real work: code cells with printed output, a heading every five."""
    cells: list[dict[str, Any]] = []
    for index in range(cell_count):
        cell_id = f"cell-{index:05d}"
        if index % 5 == 4:
            prose = "A few sentences about what the cells above found and why. " * 4
            source = [f"## Step {index}\n", "\n", prose]
            cells.append({"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": source})
            continue
        lines = [f"value_{index}_{k} = compute({index}, {k}) + offset * {k}\n" for k in range(8)]
        printed = [f"row {k} of cell {index}: {'.' * 48}\n" for k in range(12)]
        cells.append(
            {
                "cell_type": "code",
                "execution_count": index + 1,
                "id": cell_id,
                "metadata": {"tags": ["generated"]},
                "outputs": [{"name": "stdout", "output_type": "stream", "text": printed}],
                "source": [f"# cell {index}\n", *lines, f"print(value_{index}_0)"],
            }
        )
    metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    return {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}


def notebook_bytes(notebook: dict[str, Any]) -> bytes:
    """As Jupyter writes a notebook: indent 1, sorted keys, trailing newline."""
    return (json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode()


def p50_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def p90_ms(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] * 1000 if len(values) > 1 else p50_ms(values)


def max_ms(values: list[float]) -> float:
    return max(values) * 1000
