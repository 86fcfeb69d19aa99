"""The first edit after a pause: what a packed document costs to bring back, against the anchor.

Ganymede packs an idle room's document away (``[serve] pack_idle_after``, here 1 s so the bench
is short) and rebuilds it for the next update. Two clients, A and B, sit on one room of the
same generated notebook (2,000 cells by default) on each server, jupyter-collaboration from the
venv bench/rooms.py makes; each round waits out the pause (long enough for Ganymede's room to
pack once its autosave is done, checked on its ``/metrics``), then A appends to a cell and the
time until B holds it is taken, on each server in turn. A few edits without a pause give the
live figure beside it, and a third kind of round has A move its cursor into the cell 0.1 s before
it types, as a person clicking into a cell does (Ganymede rebuilds the document on that change
of A's awareness).

    .venv/bin/python bench/paused_edits.py [--cells 2000] [--rounds 7] [--pause 3.0]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import httpx
from common import Server, make_notebook, notebook_bytes, open_room, p50_ms, start_ganymede
from rooms import ensure_anchor, start_anchor

PACK_IDLE_AFTER = 1.0
LIVE_EDITS = 20
CLICK_TO_KEY = 0.1
"""Seconds between a person's click into a cell and the first key (quick for a person)."""
LIVE, PAUSED, CLICKED = "live", "after a pause", "after a pause, a click first"


async def edit_latency(
    servers: list[Server], args: argparse.Namespace
) -> dict[str, dict[str, list[float]]]:
    pairs = {
        server.name: (
            await open_room(server, "paused.ipynb", args.cells),
            await open_room(server, "paused.ipynb", args.cells),
        )
        for server in servers
    }
    times: dict[str, dict[str, list[float]]] = {
        server.name: {LIVE: [], PAUSED: [], CLICKED: []} for server in servers
    }
    rounds = [(LIVE, number) for number in range(LIVE_EDITS)]
    for paused in (PAUSED, CLICKED):
        rounds += [(paused, len(rounds) + number) for number in range(args.rounds)]
    for kind, number in rounds:
        if kind != LIVE:
            await asyncio.sleep(args.pause)
            ours = next(server for server in servers if server.name == "ganymede")
            assert packed_documents(ours) == 1, "the room had not packed its document"
        index, marker = (number * 7) % args.cells, f" e{number}"
        for server in servers:
            writer, reader = pairs[server.name]
            if kind == CLICKED:
                writer.move_cursor(index)
                await asyncio.sleep(CLICK_TO_KEY)
            started = time.perf_counter()
            writer.append(index, marker)
            await reader.until(lambda r=reader, i=index, m=marker: r.source(i).endswith(m), "edit")
            times[server.name][kind].append(time.perf_counter() - started)
    for writer, reader in pairs.values():
        await writer.close()
        await reader.close()
    return times


def packed_documents(server: Server) -> float:
    answer = httpx.get(f"{server.base}metrics", headers=server.headers, timeout=10)
    for line in answer.text.splitlines():
        if line.startswith("ganymede_room_documents_packed "):
            return float(line.split()[1])
    raise AssertionError("no ganymede_room_documents_packed on /metrics")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7, help="edits after a pause")
    parser.add_argument("--pause", type=float, default=3.0, help="seconds before each")
    parser.add_argument(
        "--anchor-venv", type=Path, default=Path(".bench-venvs/jupyter-collaboration")
    )
    args = parser.parse_args()
    venv = args.anchor_venv.absolute()
    versions = ensure_anchor(venv)
    data = notebook_bytes(make_notebook(args.cells))
    with tempfile.TemporaryDirectory() as scratch:
        servers = []
        try:
            for name in ("ganymede", "jupyter-collaboration"):
                root, home = Path(scratch, name, "root"), Path(scratch, name, "jupyter")
                root.mkdir(parents=True)
                home.mkdir()
                (root / "paused.ipynb").write_bytes(data)
                if name == "ganymede":
                    toml = f"[serve]\npack_idle_after = {PACK_IDLE_AFTER}\n"
                    (root / "ganymede.toml").write_text(toml)
                    servers.append(start_ganymede(root, home))
                else:
                    servers.append(start_anchor(venv, root, home))
            times = asyncio.run(edit_latency(servers, args))
        finally:
            for server in servers:
                server.stop()
    print(f"anchor: {versions}; {args.cells} cells ({len(data) / 1e6:.1f} MB)")
    header = f"{'edit A -> B, p50 (ms)':36} {'ganymede':>9} {'jupyter-collaboration':>22}"
    print(f"{header} {'ratio':>6}")
    for kind in (LIVE, PAUSED, CLICKED):
        ours = p50_ms(times["ganymede"][kind])
        anchor = p50_ms(times["jupyter-collaboration"][kind])
        label = f"{kind} ({len(times['ganymede'][kind])})"
        print(f"{label:36} {ours:9.1f} {anchor:22.1f} {ours / anchor:6.2f}")


if __name__ == "__main__":
    main()
