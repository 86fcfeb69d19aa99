"""Document rooms of `ganymede serve` against jupyter-collaboration's, on the same big notebook.

Two servers run side by side, on copies of one generated notebook (2,000 cells, about 3 MB):
`ganymede serve` from this environment, and `jupyter server` with jupyter-collaboration's
server side (jupyter-server-ydoc) from a venv of its own, made on first use. One Python client
(pycrdt over tornado websockets, the y-protocols sync the JupyterLab docprovider speaks) measures
both, interleaved, in the same run:

- open: session PUT, websocket, until the client's document holds every cell; each repetition
  opens a fresh copy, so every open is the first of its file on its server (cold);
- edit latency: client A appends to a cell's source, time until client B holds it (p50);
- change on disk: while A holds an unsaved edit to cell 1, the file is rewritten with cell 1500
  changed; time until B sees that change, and whether A's edit survived in the room and, once
  saved, in the file.

    .venv/bin/python bench/rooms.py [--opens 5] [--edits 200] [--disk-changes 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from jupyter_ydoc import YNotebook
from pycrdt import TransactionEvent, create_sync_message, create_update_message, handle_sync_message
from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

SERVING = "ganymede: serving "
ANCHOR_PACKAGE = "jupyter-collaboration"
SYNC = 0
SYNC_STEP2 = 1
EDITED_CELL = 1
DISK_CELL = 1500
WAIT = 60.0  # the longest any single step may take before the run is called broken
SAVE_WAIT = 5.0  # how long to wait for a room to write a kept edit to the file


@dataclass
class Server:
    name: str
    process: subprocess.Popen[bytes]
    base: str  # http://127.0.0.1:port/
    token: str
    root: Path

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"}

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


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


def with_disk_change(notebook: dict[str, Any], marker: str) -> bytes:
    changed = json.loads(json.dumps(notebook))
    changed["cells"][DISK_CELL]["source"].insert(0, f"# {marker}\n")
    return notebook_bytes(changed)


def isolated_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("data", "runtime", "config"):
        (home / name).mkdir(parents=True, exist_ok=True)
        env[f"JUPYTER_{name.upper()}_DIR"] = str(home / name)
    env.pop("JUPYTER_TOKEN", None)
    return env


def ensure_anchor(venv: Path) -> str:
    """The anchor's venv (made and filled on first use); returns the versions it runs."""
    python = venv / "bin" / "python"
    if not (venv / "bin" / "jupyter-server").exists():
        print(f"installing {ANCHOR_PACKAGE} into {venv} ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        install = [str(python), "-m", "pip", "install", "--quiet", ANCHOR_PACKAGE]
        subprocess.run(install, check=True)
    names = ["jupyter-collaboration", "jupyter-server-ydoc", "jupyter-ydoc", "pycrdt"]
    script = (
        "import importlib.metadata as m, sys; "
        "print(', '.join(n + ' ' + m.version(n) for n in sys.argv[1:]))"
    )
    return subprocess.run(
        [str(python), "-c", script, *names], check=True, capture_output=True, text=True
    ).stdout.strip()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_ganymede(root: Path, home: Path) -> Server:
    log = (home / "server.log").open("w")
    command = [sys.executable, "-m", "ganymede", "serve", str(root), "--port", "0", "--no-browser"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=log, env=isolated_env(home), cwd=home
    )
    assert process.stdout is not None
    for raw in process.stdout:
        line = raw.decode()
        if line.startswith(SERVING):
            base, token = line.rsplit(" at ", 1)[1].strip().split("lab?token=")
            return Server("ganymede", process, base, token, root)
    raise SystemExit(f"ganymede serve exited {process.wait()}; see {home / 'server.log'}")


def start_anchor(venv: Path, root: Path, home: Path) -> Server:
    """jupyter-collaboration as shipped: its defaults (poll 1 s, save delay 1 s, SQLite store)."""
    port, token = free_port(), secrets.token_hex(16)
    command = [
        str(venv / "bin" / "jupyter-server"),
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        "--allow-root",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
    ]
    log = (home / "server.log").open("w")
    process = subprocess.Popen(
        command, stdout=log, stderr=subprocess.STDOUT, env=isolated_env(home), cwd=home
    )
    server = Server("jupyter-collaboration", process, f"http://127.0.0.1:{port}/", token, root)
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
            except asyncio.TimeoutError:
                continue

    async def wait_for(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Like ``until``, but False after ``timeout`` instead of giving up."""
        try:
            await asyncio.wait_for(self.until(condition, "a condition"), timeout)
        except asyncio.TimeoutError:
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
    segment = urllib.parse.quote(path, safe="")
    async with httpx.AsyncClient(base_url=server.base, headers=server.headers) as api:
        answer = await api.put(
            f"api/collaboration/session/{segment}", json={"format": "json", "type": "notebook"}
        )
    answer.raise_for_status()
    session = answer.json()
    query = urllib.parse.urlencode({"sessionId": session["sessionId"]})
    url = server.base.replace("http://", "ws://", 1)
    url += f"api/collaboration/room/json:notebook:{session['fileId']}?{query}"
    request = HTTPRequest(url, headers=server.headers, request_timeout=WAIT)
    connection = await websocket_connect(request, max_message_size=1 << 30)
    client = RoomClient(connection)
    client.start()
    await client.until(lambda: len(client.notebook.ycells) == cell_count, f"{path} to sync")
    return client


async def measure_open(server: Server, path: str, cell_count: int) -> float:
    started = time.perf_counter()
    client = await open_room(server, path, cell_count)
    elapsed = time.perf_counter() - started
    await client.close()
    return elapsed


async def measure_edits(
    servers: list[Server], cell_count: int, edits: int
) -> dict[str, list[float]]:
    """A and B on one room per server; one edit on each server in turn, each to another cell."""
    pairs = {}
    for server in servers:
        pairs[server.name] = (
            await open_room(server, "edit.ipynb", cell_count),
            await open_room(server, "edit.ipynb", cell_count),
        )
    latencies: dict[str, list[float]] = {server.name: [] for server in servers}
    for number in range(edits):
        index, marker = (number * 7) % cell_count, f" e{number}"
        for server in servers:
            writer, reader = pairs[server.name]
            started = time.perf_counter()
            writer.append(index, marker)
            await reader.until(lambda r=reader, i=index, m=marker: r.source(i).endswith(m), "edit")
            latencies[server.name].append(time.perf_counter() - started)
    for writer, reader in pairs.values():
        await writer.close()
        await reader.close()
    return latencies


@dataclass(frozen=True)
class DiskChange:
    visible_after: float
    kept_in_room: bool
    kept_in_file: bool


async def measure_disk_change(
    server: Server, path: str, notebook: dict[str, Any], marker: str
) -> DiskChange:
    cell_count = len(notebook["cells"])
    writer = await open_room(server, path, cell_count)
    reader = await open_room(server, path, cell_count)
    edit = f"\n# unsaved edit {secrets.token_hex(4)}"
    writer.append(EDITED_CELL, edit)
    await reader.until(lambda: reader.source(EDITED_CELL).endswith(edit), "the unsaved edit")
    data = with_disk_change(notebook, marker)
    started = time.perf_counter()
    (server.root / path).write_bytes(data)
    await reader.until(lambda: marker in reader.source(DISK_CELL), "the change on disk")
    visible_after = time.perf_counter() - started

    def on_disk() -> str:
        return (server.root / path).read_text()

    # A room may write more than once (and an anchor overwrite a save): judge the file as
    # it is once it holds both changes, or at the deadline.
    deadline = time.monotonic() + SAVE_WAIT
    while not (edit.strip() in on_disk() and marker in on_disk()):
        if time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    kept_in_room = reader.source(EDITED_CELL).endswith(edit) and marker in reader.source(DISK_CELL)
    final = on_disk()
    await writer.close()
    await reader.close()
    return DiskChange(visible_after, kept_in_room, edit.strip() in final and marker in final)


def p50_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def max_ms(values: list[float]) -> float:
    return max(values) * 1000


def p90_ms(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] * 1000 if len(values) > 1 else p50_ms(values)


async def measure(
    servers: list[Server], notebook: dict[str, Any], args: argparse.Namespace
) -> None:
    cell_count = len(notebook["cells"])
    opens: dict[str, list[float]] = {server.name: [] for server in servers}
    for repetition in range(args.opens):
        for server in servers:
            elapsed = await measure_open(server, f"open-{repetition}.ipynb", cell_count)
            opens[server.name].append(elapsed)
    edits = await measure_edits(servers, cell_count, args.edits)
    disk: dict[str, list[DiskChange]] = {server.name: [] for server in servers}
    for repetition in range(args.disk_changes):
        for server in servers:
            marker = f"changed on disk {repetition}"
            path = f"disk-{repetition}.ipynb"
            disk[server.name].append(await measure_disk_change(server, path, notebook, marker))
    report(servers, opens, edits, disk)


def report(
    servers: list[Server],
    opens: dict[str, list[float]],
    edits: dict[str, list[float]],
    disk: dict[str, list[DiskChange]],
) -> None:
    ours, anchor = (server.name for server in servers)
    visible = {name: [change.visible_after for change in disk[name]] for name in disk}

    def row(what: str, first: str, second: str) -> None:
        print(f"{what:40} {first:>10} {second:>22}")

    def times(what: str, figures: dict[str, list[float]], percentile: Callable[..., float]) -> None:
        row(what, f"{percentile(figures[ours]):.1f}", f"{percentile(figures[anchor]):.1f}")

    def kept(what: str, attribute: str) -> None:
        counts = [f"{sum(getattr(c, attribute) for c in disk[n])}/{len(disk[n])}" for n in disk]
        row(what, *counts)

    row("", ours, anchor)
    times(f"open, cold, p50 of {len(opens[ours])} (ms)", opens, p50_ms)
    times(f"edit A -> B, p50 of {len(edits[ours])} (ms)", edits, p50_ms)
    times("edit A -> B, p90 (ms)", edits, p90_ms)
    times(f"change on disk -> visible, p50 of {len(disk[ours])} (ms)", visible, p50_ms)
    times("change on disk -> visible, max (ms)", visible, max_ms)
    kept("room then holds the edit and the change", "kept_in_room")
    kept("file then holds the edit and the change", "kept_in_file")
    for what, figures, target in (
        ("open", opens, "target <= 0.5"),
        ("edit latency", edits, "target <= 1"),
        ("change on disk -> visible", visible, "target: ganymede <= 700 ms, edit kept"),
    ):
        ratio = p50_ms(figures[ours]) / p50_ms(figures[anchor])
        print(f"ratio {what:26} ganymede / {anchor} {ratio:5.2f}  ({target})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=2000)
    parser.add_argument("--opens", type=int, default=5, help="cold opens per server")
    parser.add_argument("--edits", type=int, default=200, help="edits per server")
    parser.add_argument("--disk-changes", type=int, default=3, help="rewrites per server")
    parser.add_argument(
        "--anchor-venv", type=Path, default=Path(".bench-venvs/jupyter-collaboration")
    )
    args = parser.parse_args()
    venv = args.anchor_venv.absolute()
    versions = ensure_anchor(venv)
    notebook = make_notebook(args.cells)
    data = notebook_bytes(notebook)
    names = [f"open-{n}.ipynb" for n in range(args.opens)] + ["edit.ipynb"]
    names += [f"disk-{n}.ipynb" for n in range(args.disk_changes)]
    with tempfile.TemporaryDirectory() as scratch:
        servers: list[Server] = []
        try:
            for name in ("ganymede", "anchor"):
                root = Path(scratch, name, "root")
                root.mkdir(parents=True)
                for file_name in names:
                    (root / file_name).write_bytes(data)
                home = Path(scratch, name, "jupyter")
                home.mkdir()
                if name == "ganymede":
                    servers.append(start_ganymede(root, home))
                else:
                    servers.append(start_anchor(venv, root, home))
            print(f"notebook: {args.cells} cells, {len(data) / 1e6:.1f} MB; anchor: {versions}")
            asyncio.run(measure(servers, notebook, args))
        finally:
            for server in servers:
                server.stop()


if __name__ == "__main__":
    main()
