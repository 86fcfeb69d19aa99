"""Where one open room's memory goes: a 2,000-cell notebook's room, taken apart in-process.

A room opens in a `RoomManager` of this process (a real file, a real file-id store, one client
that drops what it is sent), then its parts are let go one by one, largest suspects first; each
line is what letting that part go gave back, as Python's allocator counts it (tracemalloc) and
as the process's resident set shows it after `malloc_trim` (which also sees Rust's heap: the Y
document lives there). What is left when every part but the document is gone is the document.

    .venv/bin/python bench/memory_breakdown.py [--cells 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import logging
import sys
import tempfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from common import make_notebook, notebook_bytes
from pycrdt import Doc

from ganymede.fileid import FileIdStore
from ganymede.serve.rooms.manager import RoomManager
from ganymede.serve.rooms.room import DocumentRoom


class QuietClient:
    """A connected client that keeps nothing it is sent (a room's cost is the server's)."""

    user_name = "bench"

    def send(self, frame: bytes) -> None:
        del frame

    def close(self, code: int, reason: str) -> None:
        del code, reason


def rss_mb() -> float:
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    status = Path("/proc/self/status").read_text()
    (line,) = [line for line in status.splitlines() if line.startswith("VmRSS:")]
    return int(line.split()[1]) / 1024


def traced_mb() -> float:
    gc.collect()
    return tracemalloc.get_traced_memory()[0] / 2**20


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "root"
        root.mkdir()
        data = notebook_bytes(make_notebook(args.cells))
        (root / "big.ipynb").write_bytes(data)
        file_ids = FileIdStore(root, Path(scratch) / "ids.db")
        rooms = RoomManager(file_ids, runtime_dir=Path(scratch) / "runtime")
        rooms.log.setLevel(logging.WARNING)
        # The first room opens what every room uses (imports, caches): not a room's cost.
        (root / "warm.ipynb").write_bytes(notebook_bytes(make_notebook(5)))
        warm = QuietClient()
        warm_room = await rooms.join(f"json:notebook:{file_ids.index('warm.ipynb')}", warm)
        tracemalloc.start()
        before_rss, before_traced = rss_mb(), traced_mb()
        client = QuietClient()
        room = await rooms.join(f"json:notebook:{file_ids.index('big.ipynb')}", client)
        assert isinstance(room, DocumentRoom)
        await asyncio.sleep(0.5)
        opened_rss, opened_traced = rss_mb(), traced_mb()
        print(f"file: {len(data) / 2**20:.1f} MB, {args.cells} cells")
        print(f"{'part':<58} {'traced MB':>9} {'RSS MB':>7}")
        print(
            f"{'the whole room':<58} {opened_traced - before_traced:9.1f} "
            f"{opened_rss - before_rss:7.1f}"
        )
        top = tracemalloc.take_snapshot().statistics("filename")[:8]
        parts: list[tuple[str, Callable[[], None]]] = [
            ("parsed file versions (document._parsed)", lambda: room.document._parsed.clear()),
            ("the loaded update kept for the first save", lambda: _drop_loaded(room)),
            ("the merge base: the file's bytes (room._base)", lambda: setattr(room, "_base", b"")),
            ("output trust (per-cell marks, vouched outputs)", lambda: room._trust.close()),
            ("attribution (per-cell authors)", lambda: setattr(room, "attribution", None)),
        ]
        rss, traced = opened_rss, opened_traced
        for label, drop in parts:
            drop()
            now_rss, now_traced = rss_mb(), traced_mb()
            print(f"{label:<58} {traced - now_traced:9.1f} {rss - now_rss:7.1f}")
            rss, traced = now_rss, now_traced
        print(
            f"{'left: the Y document (Rust) and the room itself':<58} "
            f"{traced - before_traced:9.1f} {rss - before_rss:7.1f}"
        )
        alone_before = rss_mb()
        alone = Doc()
        alone.apply_update(room.document.doc.get_update())
        alone_mb = rss_mb() - alone_before
        print(f"{'the same Y document alone, in a fresh Doc':<58} {'':9} {alone_mb:7.1f}")
        print("\nlargest Python allocations of the open room, by file:")
        for stat in top:
            print(f"  {stat.size / 2**20:7.1f} MB  {stat.traceback[0].filename}")
        tracemalloc.stop()
        del warm_room
        await rooms.stop()
        file_ids.close()


def _drop_loaded(room: DocumentRoom) -> None:
    room._loaded_content = None
    room._saved = b""


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=2000)
    asyncio.run(main(parser.parse_args()))
    sys.exit(0)
