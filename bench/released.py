"""What an agent keeps of a notebook once its hold let go and the room closed, in-process.

The agent core of this process (real rooms, a real file and file-id store, no kernels) opens a
session that reads a generated notebook and edits one cell; its hold lets go `--idle` seconds
later and the room closes a moment after (having saved). Printed: the process's resident set
(after `malloc_trim`) before the room, with it held, and after it closed; and the bytes the
agent core still keeps for that notebook (its read marks, and the closed room's record of who
changed which cell and the cells' fingerprints), counted object by object.

    .venv/bin/python bench/released.py [--cells 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import logging
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

from common import make_notebook, notebook_bytes

from ganymede.core import Notebooks
from ganymede.errors import UsageError
from ganymede.fileid import FileIdStore
from ganymede.grant import Grant, Grants, GrantStore
from ganymede.host.runs import RunOrder, RunResult, Runs
from ganymede.serve.agents.manager import Agents
from ganymede.serve.execution import Executions
from ganymede.serve.kernels.host_rooms import room_notebook_reader
from ganymede.serve.kernels.notebooks import NotebookKernels
from ganymede.serve.rooms.manager import RoomManager

NOTEBOOK = "big.ipynb"
SHARED = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)


def rss_mb() -> float:
    """The resident set once free heap pages went back to the system."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * 4096 / 2**20


def deep_size(root: Any) -> int:
    """Bytes of ``root`` and every object it reaches (classes, modules, functions excluded)."""
    seen: set[int] = set()
    stack, total = [root], 0
    while stack:
        value = stack.pop()
        if id(value) in seen or isinstance(value, SHARED):
            continue
        seen.add(id(value))
        total += sys.getsizeof(value)
        stack.extend(gc.get_referents(value))
    return total


async def no_runs(order: RunOrder) -> RunResult:
    raise UsageError("this benchmark runs no notebooks")


async def measure(root: Path, scratch: Path, idle: float) -> dict[str, float]:
    file_ids = FileIdStore(root, scratch / "ids.db")
    rooms = RoomManager(file_ids, grace_period=0.1, runtime_dir=scratch / "runtime")
    notebooks = Notebooks(root, room_notebook_reader(rooms))
    log = logging.getLogger("bench")
    grants = Grants(root, Grant(), GrantStore(scratch / "grants.toml"), file_ids)
    agents = Agents(
        rooms,
        file_ids,
        notebooks,
        log,
        kernels=NotebookKernels(None, None),
        executions=Executions(None, rooms, log),
        runs=Runs(notebooks, grants, no_runs),
        kernel_specs=None,
        presence_idle=idle,
    )
    figures = {"before": rss_mb()}
    session = agents.open_session("claude-code")
    read = await agents.read(session.id, NOTEBOOK, None)
    first = read["notebook"]["cells"][0]
    await agents.edit(session.id, NOTEBOOK, "edit", cell_id=first["id"], source="# edited")
    await asyncio.sleep(0.5)  # the open's scratch goes back a second after it (as in a server)
    figures["held"] = rss_mb()
    while rooms.notebook_rooms():
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.5)
    figures["released"] = rss_mb()
    figures["marks_kb"] = deep_size(agents.marks) / 1024
    file_id = file_ids.index(NOTEBOOK)
    figures["record_kb"] = deep_size(agents.kept.get(file_id)) / 1024
    figures["both_kb"] = deep_size((agents.marks, agents.kept.get(file_id))) / 1024
    figures["source_kb"] = sum(len(cell["source"].encode()) for cell in read["notebook"]["cells"])
    figures["source_kb"] /= 1024
    await agents.stop()
    await rooms.stop()
    file_ids.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=2000)
    parser.add_argument("--idle", type=float, default=1.0, help="[agent] presence_idle")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        scratch = Path(temporary)
        root = scratch / "root"
        root.mkdir()
        data = notebook_bytes(make_notebook(args.cells))
        (root / NOTEBOOK).write_bytes(data)
        figures = asyncio.run(measure(root, scratch, args.idle))
    sources = figures["source_kb"]
    print(f"notebook: {args.cells} cells, {len(data) / 1e6:.1f} MB, sources {sources:.0f} KB")
    print(f"RSS before the room: {figures['before']:.1f} MB")
    print(f"RSS with the agent's room held: {figures['held']:.1f} MB")
    print(f"RSS after its hold let go and the room closed: {figures['released']:.1f} MB")
    print(
        f"kept for the agent: marks {figures['marks_kb']:.0f} KB, the closed room's record "
        f"{figures['record_kb']:.0f} KB, both {figures['both_kb']:.0f} KB (they share fingerprints)"
    )


if __name__ == "__main__":
    main()
