"""Whether memory kept after rooms close grows with each round of rooms, or levels off.

One process, one `RoomManager` (a real file-id store, real files, clients that drop what they are
sent, a 1 s grace period): each round opens ten 2,000-cell rooms and a hundred 200-cell ones,
then lets them all close; the figure is the process's RSS above the warm figure (after one
small room came and went), read with each round open and a few seconds after it closed.

    .venv/bin/python bench/memory_cycles.py [--rounds 4]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from common import make_notebook, notebook_bytes

from ganymede.fileid import FileIdStore
from ganymede.serve.rooms.manager import RoomManager
from ganymede.serve.rooms.presence import AwarenessRoom

CLOSED_WAIT = 4.0  # seconds: the grace period, the heap release a second later, and some


class QuietClient:
    def send(self, frame: bytes) -> None:
        del frame

    def close(self, code: int, reason: str) -> None:
        del code, reason


def rss_mb() -> float:
    status = Path("/proc/self/status").read_text()
    (line,) = [line for line in status.splitlines() if line.startswith("VmRSS:")]
    return int(line.split()[1]) / 1024


async def main(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch, "root")
        root.mkdir()
        names = [f"big-{n}.ipynb" for n in range(10)] + [f"small-{n}.ipynb" for n in range(100)]
        big, small = notebook_bytes(make_notebook(2000)), notebook_bytes(make_notebook(200))
        for name in names:
            (root / name).write_bytes(big if name.startswith("big") else small)
        (root / "warm.ipynb").write_bytes(notebook_bytes(make_notebook(3)))
        file_ids = FileIdStore(root, Path(scratch, "ids.db"))
        rooms = RoomManager(file_ids, grace_period=1, runtime_dir=Path(scratch, "runtime"))
        await visit(rooms, file_ids, ["warm.ipynb"])
        warm = rss_mb()
        print(f"warm: {warm:.1f} MB")
        for number in range(rounds):
            opened = await visit(rooms, file_ids, names)
            closed = rss_mb() - warm
            print(f"round {number + 1}: open +{opened - warm:.1f} MB, closed +{closed:.1f} MB")
        await rooms.stop()
        file_ids.close()


async def visit(rooms: RoomManager, file_ids: FileIdStore, names: list[str]) -> float:
    """Open every room, then let them close; the RSS while they were all open."""
    joined: list[tuple[AwarenessRoom, QuietClient]] = []
    for name in names:
        client = QuietClient()
        joined.append((await rooms.join(f"json:notebook:{file_ids.index(name)}", client), client))
    opened = rss_mb()
    for room, client in joined:
        rooms.leave(room, client)
    del joined
    await asyncio.sleep(CLOSED_WAIT)
    return opened


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    asyncio.run(main(parser.parse_args().rounds))
