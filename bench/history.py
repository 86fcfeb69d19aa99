"""The history store against jupyter-collaboration's: the timeline, and what recording costs.

Three servers run side by side: `ganymede serve` with its history (the default), `ganymede serve`
with `[history] enabled = false`, and `jupyter server` with jupyter-collaboration (its SQLite
store on, as shipped) from a venv of its own, made on first use. In the same run:

- edit latency: client A appends to a cell's source, time until client B holds it (p50), on
  each server in turn; the ratio of ganymede with history to ganymede without is what
  recording costs;
- timeline: `GET /api/collaboration/timeline/{path}` (what JupyterLab's Document Timeline
  button calls) on a notebook whose history holds 1,000 edits, each its own point: on the
  anchor, 1,000 edits made live by a client; on ganymede, 1,000 points written to its store
  before the server starts (its recorder would batch edits that fast into a few points);
- undo: one `PUT /api/collaboration/undo_redo/…?action=undo&steps=500` on that timeline's
  fork, the slider dragged half way back.

    .venv/bin/python bench/history.py [--cells 100] [--edits 300] [--timelines 5]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

import httpx
from common import Server, make_notebook, notebook_bytes, open_room, p50_ms, start_ganymede
from jupyter_ydoc import YNotebook
from rooms import ensure_anchor, measure_edits, start_anchor

from ganymede.fileid import FileIdStore
from ganymede.history import HistoryStore, NewPoint, PointKind
from ganymede.history.store import DB_NAME

POINTS = 1000
UNDO_STEPS = 500
ANCHOR_STORE_WAIT = 5.0  # the anchor writes its store in the background: let it finish


async def live_edits(server: Server, path: str, cell_count: int, count: int) -> None:
    """``count`` edits by one client, each seen by another before the next."""
    writer = await open_room(server, path, cell_count)
    reader = await open_room(server, path, cell_count)
    for number in range(count):
        marker = f" p{number}"
        writer.append(number % cell_count, marker)
        await reader.until(
            lambda n=number, m=marker: reader.source(n % cell_count).endswith(m), "edit"
        )
    await writer.close()
    await reader.close()


def prefill_history(home: Path, root: Path, path: str, data: bytes, count: int) -> None:
    """``count`` edit points of ``path`` in ganymede's store, one second apart, ending now."""
    import nbformat

    jupyter_data = home / "data"
    jupyter_data.mkdir(parents=True, exist_ok=True)
    file_ids = FileIdStore(root, jupyter_data / "ganymede_file_ids.db")
    file_id = file_ids.index(path)
    file_ids.close()
    notebook = YNotebook()
    updates: list[bytes] = []
    notebook.ydoc.observe(lambda event: updates.append(event.update))
    notebook.set(nbformat.reads(data.decode(), as_version=4))
    load = notebook.ydoc.get_update()
    updates.clear()
    cell_count = len(notebook.ycells)
    for number in range(count):
        source = notebook.ycells[number % cell_count]["source"]
        source += f" p{number}"
    start = time.time() - count
    points = [NewPoint(file_id, "prefilled", start, "file", PointKind.LOAD, load)]
    points += [
        NewPoint(file_id, "prefilled", start + 1 + i, "bench", PointKind.EDIT, update)
        for i, update in enumerate(updates)
    ]
    store = HistoryStore(jupyter_data / DB_NAME)
    store.append(points)
    store.close()


async def timeline_times(
    server: Server, path: str, cell_count: int, repetitions: int
) -> tuple[list[float], int, float]:
    """Timeline requests while the notebook is open, as the page asks with its tab open: their
    times, the points the last answered, and one half-way undo's time."""
    holder = await open_room(server, path, cell_count)
    times: list[float] = []
    async with httpx.AsyncClient(base_url=server.base, headers=server.headers, timeout=120) as api:
        for _ in range(repetitions):
            started = time.perf_counter()
            answer = await api.get(f"api/collaboration/timeline/{path}?format=json&&type=notebook")
            times.append(time.perf_counter() - started)
            answer.raise_for_status()
        reply = answer.json()
        room = urllib.parse.quote(str(reply["roomId"]), safe="")
        started = time.perf_counter()
        undone = await api.put(
            f"api/collaboration/undo_redo/{room}?action=undo&&steps={UNDO_STEPS}"
            f"&&forkRoom={reply['forkRoom']}"
        )
        undo = time.perf_counter() - started
        undone.raise_for_status()
    await holder.close()
    return times, len(reply["timestamps"]), undo


async def measure(servers: list[Server], cell_count: int, args: argparse.Namespace) -> None:
    ours, off, anchor = servers
    latencies = await measure_edits(servers, cell_count, args.edits)
    await live_edits(anchor, "timeline.ipynb", cell_count, POINTS)
    await asyncio.sleep(ANCHOR_STORE_WAIT)
    timeline: dict[str, tuple[list[float], int, float]] = {}
    for server in (ours, anchor):
        timeline[server.name] = await timeline_times(
            server, "timeline.ipynb", cell_count, args.timelines
        )

    def row(what: str, *figures: str) -> None:
        print(f"{what:44}" + "".join(f"{figure:>24}" for figure in figures))

    row("", *(server.name for server in servers))
    row(
        f"edit A -> B, p50 of {args.edits} (ms)",
        *(f"{p50_ms(latencies[server.name]):.2f}" for server in servers),
    )
    row(
        f"timeline, p50 of {args.timelines} (ms)",
        f"{p50_ms(timeline[ours.name][0]):.1f}",
        "-",
        f"{p50_ms(timeline[anchor.name][0]):.1f}",
    )
    row(
        "timeline points answered",
        str(timeline[ours.name][1]),
        "-",
        str(timeline[anchor.name][1]),
    )
    row(
        f"undo {UNDO_STEPS} steps (ms)",
        f"{timeline[ours.name][2] * 1000:.1f}",
        "-",
        f"{timeline[anchor.name][2] * 1000:.1f}",
    )
    recording = p50_ms(latencies[ours.name]) / p50_ms(latencies[off.name])
    versus = p50_ms(timeline[ours.name][0]) / p50_ms(timeline[anchor.name][0])
    print(f"ratio recording  ganymede / ganymede without history {recording:5.2f}  (target <= 1.1)")
    print(f"ratio timeline   ganymede / {anchor.name} {versus:5.2f}  (target <= 0.5)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=100)
    parser.add_argument("--edits", type=int, default=300, help="edits per server")
    parser.add_argument("--timelines", type=int, default=5, help="timeline requests per server")
    parser.add_argument(
        "--anchor-venv", type=Path, default=Path(".bench-venvs/jupyter-collaboration")
    )
    args = parser.parse_args()
    venv = args.anchor_venv.absolute()
    versions = ensure_anchor(venv)
    data = notebook_bytes(make_notebook(args.cells))
    with tempfile.TemporaryDirectory() as scratch:
        servers: list[Server] = []
        try:
            for name in ("ganymede", "ganymede-off", "anchor"):
                root = Path(scratch, name, "root")
                root.mkdir(parents=True)
                for file_name in ("edit.ipynb", "timeline.ipynb"):
                    (root / file_name).write_bytes(data)
                home = Path(scratch, name, "jupyter")
                home.mkdir()
                if name == "ganymede":
                    prefill_history(home, root, "timeline.ipynb", data, POINTS)
                    servers.append(start_ganymede(root, home))
                elif name == "ganymede-off":
                    (root / "ganymede.toml").write_text("[history]\nenabled = false\n")
                    server = start_ganymede(root, home)
                    server.name = "ganymede, no history"
                    servers.append(server)
                else:
                    servers.append(start_anchor(venv, root, home))
            print(f"notebook: {args.cells} cells, {len(data) / 1e3:.0f} kB; anchor: {versions}")
            asyncio.run(measure(servers, args.cells, args))
        finally:
            for server in servers:
                server.stop()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
