"""What working through `ganymede mcp` costs an agent: reads, the @@changed line, watch latency.

A `ganymede serve` of its own holds a generated 500-cell notebook; a real `ganymede mcp` process
is driven over stdio by the MCP SDK's client, as Claude Code drives it:

- `notebook_read` of the 500-cell notebook, stdio round trip, p50;
- the @@changed overhead: a cheap tool call (`notebooks_list`) while 20 cells changed by
  another agent are pending in the reply's @@changed line, against the same call with nothing
  pending (target <= 1.2x);
- `ganymede mcp watch` latency: from the transaction that adds a person's `@agent` cell in a room
  to the line on watch's stdout, against the settle time (target <= settle + 0.5 s);
- with `--reopens N`, a second server that lets an idle agent's room go (`[agent] presence_idle`
  1 s, grace period 1 s): `notebook_read` once the room closed (it opens it again) against the
  same read with the room held, and a room client's cold open of the same file for the
  open-time target.

    .venv/bin/python bench/agent.py [--reads 30] [--calls 50] [--requests 5] [--settle 1]
        [--reopens 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from common import Server, make_notebook, notebook_bytes, open_room, p50_ms, start_ganymede
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

NOTEBOOK = "big.ipynb"
CHANGED_CELLS = 20
OTHER_AGENT = "bench-editor"
HEAP_SETTLE = 1.5
"""Seconds after a room closes before the next call: the server has handed its memory back."""


@asynccontextmanager
async def mcp_session(server: Server) -> AsyncIterator[ClientSession]:
    parameters = StdioServerParameters(
        command=sys.executable, args=["-m", "ganymede", "mcp"], env=server.env, cwd=server.root
    )
    info = types.Implementation(name="claude-code", version="bench")
    with open(server.root.parent / "mcp.log", "a") as errlog:
        async with (
            stdio_client(parameters, errlog=errlog) as (read, write),
            ClientSession(read, write, client_info=info) as session,
        ):
            await session.initialize()
            yield session


async def timed(session: ClientSession, tool: str, arguments: dict[str, object]) -> float:
    started = time.perf_counter()
    result = await session.call_tool(tool, arguments)
    elapsed = time.perf_counter() - started
    if result.is_error:
        raise SystemExit(f"{tool} failed: {result.content}")
    return elapsed


def change_cells_as_another_agent(server: Server, count: int, round_number: int) -> None:
    """Another agent edits ``count`` cells through the agent API: news for the measured one."""
    with httpx.Client(base_url=server.base, headers=server.headers, timeout=60) as api:
        session = api.post("api/agent/sessions", json={"agent": OTHER_AGENT}).json()["session"]
        cells = api.post("api/agent/read", json={"session": session, "path": NOTEBOOK}).json()
        for cell in cells["notebook"]["cells"][:count]:
            body = {
                "session": session,
                "path": NOTEBOOK,
                "op": "edit",
                "id": cell["id"],
                "source": f"{cell['source']}\n# round {round_number}",
            }
            api.post("api/agent/cells", json=body).raise_for_status()
        api.delete(f"api/agent/sessions/{session}")


async def reads_and_overhead(server: Server, reads: int, calls: int) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {"read": [], "quiet": [], "pending": []}
    async with mcp_session(server) as session:
        for _ in range(reads):
            figures["read"].append(await timed(session, "notebook_read", {"path": NOTEBOOK}))
        for round_number in range(calls):
            await timed(session, "notebook_read", {"path": NOTEBOOK})  # the mark: nothing new
            figures["quiet"].append(await timed(session, "notebooks_list", {}))
            change_cells_as_another_agent(server, CHANGED_CELLS, round_number)
            figures["pending"].append(await timed(session, "notebooks_list", {}))
    return figures


async def watch_latency(server: Server, requests: int, settle: float) -> list[float]:
    """Seconds from a person's request cell landing in the room to watch's line for it."""
    watch = subprocess.Popen(
        [sys.executable, "-m", "ganymede", "mcp", "watch", "--json", "--settle", str(settle)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server.env,
        cwd=server.root,
        text=True,
    )
    assert watch.stdout is not None
    lines: asyncio.Queue[str] = asyncio.Queue()
    loop = asyncio.get_running_loop()
    loop.add_reader(watch.stdout.fileno(), lambda: lines.put_nowait(watch.stdout.readline()))
    latencies = []
    person = await open_room(server, NOTEBOOK, len(json.loads(notebook_on_disk(server))["cells"]))
    try:
        await asyncio.sleep(2 * settle + 1)  # watch is polling: its watcher has its baseline
        for number in range(requests):
            cell = {"cell_type": "markdown", "id": f"ask-{number}", "metadata": {}}
            started = time.perf_counter()
            person.notebook.append_cell({**cell, "source": f"@agent check item {number}"})
            while True:
                line = await asyncio.wait_for(lines.get(), 60)
                if f"ask-{number}" in line:
                    latencies.append(time.perf_counter() - started)
                    break
    finally:
        loop.remove_reader(watch.stdout.fileno())
        watch.terminate()
        watch.wait(timeout=30)
        await person.close()
    return latencies


def room_closes(home: Path) -> int:
    """Rooms the server has closed so far, by its log."""
    return (home / "server.log").read_text().count(": closed")


async def reads_after_release(server: Server, home: Path, rounds: int) -> dict[str, list[float]]:
    """``notebook_read`` with the room held, then once the agent's hold let go and the room
    closed (the read opens it again), ``rounds`` times; and a room client's cold opens."""
    figures: dict[str, list[float]] = {"held": [], "reopened": [], "open": []}
    cells = len(json.loads(notebook_on_disk(server))["cells"])
    async with mcp_session(server) as session:
        await timed(session, "notebook_read", {"path": NOTEBOOK})
        for _ in range(rounds):
            figures["held"].append(await timed(session, "notebook_read", {"path": NOTEBOOK}))
            closed = room_closes(home)
            while room_closes(home) == closed:
                await asyncio.sleep(0.1)
            await asyncio.sleep(HEAP_SETTLE)
            figures["reopened"].append(await timed(session, "notebook_read", {"path": NOTEBOOK}))
    for _ in range(rounds):
        closed = room_closes(home)
        while room_closes(home) == closed:
            await asyncio.sleep(0.1)  # the agent's room, then each client's, closes first
        await asyncio.sleep(HEAP_SETTLE)
        started = time.perf_counter()
        client = await open_room(server, NOTEBOOK, cells)
        figures["open"].append(time.perf_counter() - started)
        await client.close()
    return figures


def notebook_on_disk(server: Server) -> str:
    return (server.root / NOTEBOOK).read_text()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=500)
    parser.add_argument("--reads", type=int, default=30, help="notebook_read calls")
    parser.add_argument("--calls", type=int, default=50, help="quiet/pending call pairs")
    parser.add_argument("--requests", type=int, default=5, help="request cells watched")
    parser.add_argument("--settle", type=float, default=1.0, help="mcp watch --settle")
    parser.add_argument("--reopens", type=int, default=0, help="reads after a release")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root, home = Path(scratch, "root"), Path(scratch, "jupyter")
        root.mkdir()
        home.mkdir()
        (root / NOTEBOOK).write_bytes(notebook_bytes(make_notebook(args.cells)))
        server = start_ganymede(root, home)
        try:
            figures = asyncio.run(reads_and_overhead(server, args.reads, args.calls))
            watched = asyncio.run(watch_latency(server, args.requests, args.settle))
        finally:
            server.stop()
        released: dict[str, list[float]] = {}
        if args.reopens:
            released_home = Path(scratch, "released")
            released_home.mkdir()
            toml = released_home / "ganymede.toml"
            toml.write_text("[agent]\npresence_idle = 1\n")
            server = start_ganymede(
                root,
                released_home,
                f"--GanymedeExtension.ganymede_toml={toml}",
                "--GanymedeExtension.room_grace_period=1",
            )
            try:
                released = asyncio.run(reads_after_release(server, released_home, args.reopens))
            finally:
                server.stop()
    size = len(notebook_bytes(make_notebook(args.cells))) / 1e6
    print(f"notebook: {args.cells} cells, {size:.1f} MB")
    print(
        f"notebook_read over stdio, p50 of {len(figures['read'])}: {p50_ms(figures['read']):.1f} ms"
    )
    quiet, pending = p50_ms(figures["quiet"]), p50_ms(figures["pending"])
    print(f"notebooks_list, nothing pending, p50: {quiet:.1f} ms")
    print(f"notebooks_list, {CHANGED_CELLS} changed cells pending, p50: {pending:.1f} ms")
    print(f"ratio @@changed overhead {pending / quiet:.2f} (target <= 1.2)")
    watch_p50 = statistics.median(watched)
    target = args.settle + 0.5
    print(
        f"mcp watch, request cell -> line, p50 of {len(watched)}: {watch_p50:.2f} s, "
        f"max {max(watched):.2f} s (settle {args.settle:.1f} s; target <= {target:.1f} s)"
    )
    if released:
        held, reopened = p50_ms(released["held"]), p50_ms(released["reopened"])
        cold = p50_ms(released["open"])
        print(f"notebook_read, room held, p50 of {len(released['held'])}: {held:.1f} ms")
        print(
            f"notebook_read, room released and closed (opened again), p50 of "
            f"{len(released['reopened'])}: {reopened:.1f} ms (max "
            f"{max(released['reopened']) * 1000:.1f} ms); the reopen adds {reopened - held:.1f} ms"
        )
        print(f"a room client's cold open of the same file, p50: {cold:.1f} ms")


if __name__ == "__main__":
    main()
