"""What showing an agent in the room's awareness costs its `cell_edit` (target <= 1.05x).

A `ganymede serve` of its own holds a generated notebook, a room client stands for a person (so
every awareness frame has someone to go to), and a real `ganymede mcp` is driven over stdio by
the MCP SDK's client: the `cell_edit` round trip, p50, presence included as shipped. The anchor,
in the same run: the presence work each edit does (the caret's relative position, the state, the
frame to the room's clients), done in process on the same notebook the same number of times. The
ratio is the round trip against the round trip without that work.

    .venv/bin/python bench/presence.py [--edits 50] [--cells 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

from agent import mcp_session, timed
from common import make_notebook, notebook_bytes, open_room, p50_ms, start_ganymede
from jupyter_ydoc import YNotebook

from ganymede.agent.presence import awareness_state
from ganymede.serve.agents.presence import AgentPresence, caret_in
from ganymede.serve.rooms.presence import AwarenessRoom, RoomHold

NOTEBOOK = "edits.ipynb"


async def round_trips(server: object, edits: int, cells: int) -> list[float]:
    person = await open_room(server, NOTEBOOK, cells)  # type: ignore[arg-type]
    try:
        async with mcp_session(server) as session:  # type: ignore[arg-type]
            await timed(session, "notebook_read", {"path": NOTEBOOK})
            cell_ids = [str(ycell["id"]) for ycell in person.notebook.ycells][:edits]
            figures = []
            for round_number, cell_id in enumerate(cell_ids):
                source = f"x = {round_number}"
                figures.append(
                    await timed(
                        session, "cell_edit", {"path": NOTEBOOK, "id": cell_id, "source": source}
                    )
                )
            return figures
    finally:
        await person.close()


class Listener:
    def send(self, frame: bytes) -> None:
        self.last = frame

    def close(self, code: int, reason: str) -> None:
        """Nothing to close."""


async def presence_work(notebook: dict[str, object], edits: int) -> list[float]:
    """The presence part of each edit, alone: caret, state, announce to one listening client."""
    shared = YNotebook()
    shared.set(notebook)
    room = AwarenessRoom("json:notebook:bench", logging.getLogger("bench"))
    hold = RoomHold()
    room.join(Listener())
    room.join(hold)
    presence = AgentPresence()
    figures = []
    for index in range(edits):
        started = time.perf_counter()
        state = awareness_state("claude-code", caret_in(shared, index % len(shared.ycells)))
        presence.show("bench", room, hold, state)
        figures.append(time.perf_counter() - started)
    presence.stop()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=50)
    parser.add_argument("--cells", type=int, default=200)
    args = parser.parse_args()
    notebook = make_notebook(args.cells)
    with tempfile.TemporaryDirectory() as scratch:
        root, home = Path(scratch) / "root", Path(scratch) / "home"
        root.mkdir()
        (root / NOTEBOOK).write_bytes(notebook_bytes(notebook))
        server = start_ganymede(root, home)
        try:
            trips = asyncio.run(round_trips(server, args.edits, args.cells))
        finally:
            server.stop()
    work = asyncio.run(presence_work(json.loads(notebook_bytes(notebook)), args.edits))
    trip, cost = statistics.median(trips), statistics.median(work)
    print(f"cell_edit over stdio, p50 of {len(trips)}: {p50_ms(trips):.2f} ms (presence included)")
    print(f"presence work per edit, p50 of {len(work)}: {cost * 1e6:.0f} µs")
    print(f"ratio with / without presence: {trip / (trip - cost):.4f} (target <= 1.05)")


if __name__ == "__main__":
    sys.exit(main())
