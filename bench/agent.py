"""What working through `ganymede mcp` costs an agent: reads, the @@changed line, watch latency.

A `ganymede serve` of its own holds a generated 500-cell notebook; a real `ganymede mcp` process
is driven over stdio by the MCP SDK's client, as Claude Code drives it:

- `notebook_read` of the 500-cell notebook, stdio round trip, p50;
- the @@changed overhead: a cheap tool call (`notebooks_list`) while 20 cells changed by
  another agent are pending in the reply's @@changed line, against the same call with nothing
  pending (target <= 1.2x);
- `ganymede mcp watch` latency: from the transaction that adds a person's `@agent` cell in a room
  to the line on watch's stdout, against the settle time (target <= settle + 0.5 s).

    .venv/bin/python bench/agent.py [--reads 30] [--calls 50] [--requests 5] [--settle 1]
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


def notebook_on_disk(server: Server) -> str:
    return (server.root / NOTEBOOK).read_text()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=500)
    parser.add_argument("--reads", type=int, default=30, help="notebook_read calls")
    parser.add_argument("--calls", type=int, default=50, help="quiet/pending call pairs")
    parser.add_argument("--requests", type=int, default=5, help="request cells watched")
    parser.add_argument("--settle", type=float, default=1.0, help="mcp watch --settle")
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


if __name__ == "__main__":
    main()
