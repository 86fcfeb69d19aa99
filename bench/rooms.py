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
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import (
    Server,
    make_notebook,
    max_ms,
    notebook_bytes,
    open_room,
    p50_ms,
    p90_ms,
    start_ganymede,
    start_jupyter_server,
)

ANCHOR_PACKAGE = "jupyter-collaboration"
EDITED_CELL = 1
DISK_CELL = 1500
SAVE_WAIT = 5.0  # how long to wait for a room to write a kept edit to the file


def with_disk_change(notebook: dict[str, Any], marker: str) -> bytes:
    changed = json.loads(json.dumps(notebook))
    changed["cells"][DISK_CELL]["source"].insert(0, f"# {marker}\n")
    return notebook_bytes(changed)


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


def start_anchor(venv: Path, root: Path, home: Path, *args: str) -> Server:
    """jupyter-collaboration as shipped: its defaults (poll 1 s, save delay 1 s, SQLite store),
    but for ``args``."""
    executable = [str(venv / "bin" / "jupyter-server")]
    return start_jupyter_server("jupyter-collaboration", executable, root, home, *args)


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
