"""What an open room costs in server memory: `ganymede serve` against jupyter-collaboration.

Both servers run side by side, as in bench/rooms.py (the anchor from a venv of its own, made on
first use), and one Python client opens the same notebooks in each; the figure is each server's
resident set size (RSS, from /proc), read once the server has settled:

- at start, and after a warm-up room (one small notebook opened and closed: code both servers
  import on their first room is not a room's cost);
- per open room: ten copies of a 2,000-cell notebook (about 3 MB) opened one after another, each
  client left connected; (RSS with all ten open - RSS after the warm-up) / 10;
- per idle room: the same, once every room has gone unused for Ganymede's ``[serve]
  pack_idle_after`` (60 s, the default) and packed its document away; the anchor keeps its
  documents live, and is read after the same wait;
- a hundred rooms: a hundred copies of a 200-cell notebook open at once, then idle;
- after they close: every client gone and each room past its grace period (1 s on both
  servers here); memory should come back to within 10% of the warm figure.

    .venv/bin/python bench/memory.py [--copies 10] [--cells 2000] [--many 100] [--many-cells 200]
        [--pack-idle-after 60]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from common import Server, make_notebook, notebook_bytes, open_room, start_ganymede
from rooms import ensure_anchor, start_anchor

GRACE = 1.0  # seconds a clientless room stays open, on both servers
SETTLE = 2.0  # seconds to let a server finish what an open or a close set going
CLOSE_WAIT = 15.0  # seconds after the last client leaves before "after close" is read


def rss_mb(server: Server) -> float:
    """The server process's resident set, in MB."""
    status = Path(f"/proc/{server.process.pid}/status").read_text()
    (line,) = [line for line in status.splitlines() if line.startswith("VmRSS:")]
    return int(line.split()[1]) / 1024


@dataclass
class Figures:
    start: float = 0.0
    warm: float = 0.0
    big_open: list[float] = field(default_factory=list)  # RSS after each big room opens
    big_idle: float = 0.0
    big_closed: float = 0.0
    many_open: float = 0.0
    many_idle: float = 0.0
    many_closed: float = 0.0

    def per_room(self) -> float:
        return (self.big_open[-1] - self.warm) / len(self.big_open)

    def per_idle_room(self) -> float:
        return (self.big_idle - self.warm) / len(self.big_open)


async def settled(server: Server, seconds: float = SETTLE) -> float:
    await asyncio.sleep(seconds)
    return rss_mb(server)


def idle_wait(args: argparse.Namespace) -> float:
    """Long enough for every room to pack: the idle time, then the room manager's next look
    (a quarter of it later at most), then the memory going back to the system."""
    return args.pack_idle_after * 1.25 + SETTLE


async def measure(server: Server, args: argparse.Namespace) -> Figures:
    figures = Figures(start=await settled(server))
    warm_up = await open_room(server, "warm-up.ipynb", 3)
    await warm_up.close()
    figures.warm = await settled(server, GRACE + SETTLE)
    big = []
    for copy in range(args.copies):
        big.append(await open_room(server, f"big-{copy}.ipynb", args.cells))
        figures.big_open.append(await settled(server))
    figures.big_idle = await settled(server, idle_wait(args))
    for client in big:
        await client.close()
    figures.big_closed = await settled(server, CLOSE_WAIT)
    many = [
        await open_room(server, f"many-{copy}.ipynb", args.many_cells) for copy in range(args.many)
    ]
    figures.many_open = await settled(server)
    figures.many_idle = await settled(server, idle_wait(args))
    for client in many:
        await client.close()
    del big, many
    gc.collect()
    figures.many_closed = await settled(server, CLOSE_WAIT)
    return figures


def report(results: dict[str, Figures], args: argparse.Namespace, big_mb: float) -> None:
    ours, anchor = results["ganymede"], results["jupyter-collaboration"]

    def row(what: str, first: float, second: float) -> None:
        print(f"{what:52} {first:>9.1f} {second:>22.1f}")

    print(f"{'RSS, MB':52} {'ganymede':>9} {'jupyter-collaboration':>22}")
    row("at start", ours.start, anchor.start)
    row("after a warm-up room", ours.warm, anchor.warm)
    for index in range(args.copies):
        row(f"{index + 1} of {args.copies} rooms open ({big_mb:.1f} MB each)",
            ours.big_open[index], anchor.big_open[index])  # fmt: skip
    row("per open room, in use", ours.per_room(), anchor.per_room())
    row("all of them idle", ours.big_idle, anchor.big_idle)
    row("per open room, idle", ours.per_idle_room(), anchor.per_idle_room())
    row("those rooms closed", ours.big_closed, anchor.big_closed)
    row(f"{args.many} rooms of {args.many_cells} cells open", ours.many_open, anchor.many_open)
    row("all of them idle", ours.many_idle, anchor.many_idle)
    row("those closed", ours.many_closed, anchor.many_closed)
    for name, figures in results.items():
        back = figures.many_closed / figures.warm
        print(f"{name}: after close {back:.2f}x the warm figure (target <= 1.10)")
    for what, ratio in (
        ("in use", ours.per_room() / anchor.per_room()),
        ("idle", ours.per_idle_room() / anchor.per_idle_room()),
    ):
        print(f"ratio per open room, {what:6}  ganymede / jupyter-collaboration {ratio:5.2f}"
              "  (target <= 0.5)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=10, help="big rooms open at once")
    parser.add_argument("--cells", type=int, default=2000, help="cells of a big notebook")
    parser.add_argument("--many", type=int, default=100, help="small rooms open at once")
    parser.add_argument("--many-cells", type=int, default=200, help="cells of a small notebook")
    parser.add_argument(
        "--pack-idle-after", type=float, default=60.0, help="Ganymede's [serve] pack_idle_after"
    )
    parser.add_argument(
        "--anchor-venv", type=Path, default=Path(".bench-venvs/jupyter-collaboration")
    )
    args = parser.parse_args()
    venv = args.anchor_venv.absolute()
    versions = ensure_anchor(venv)
    big = notebook_bytes(make_notebook(args.cells))
    small = notebook_bytes(make_notebook(args.many_cells))
    results: dict[str, Figures] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name in ("ganymede", "jupyter-collaboration"):
            root = Path(scratch, name, "root")
            root.mkdir(parents=True)
            (root / "warm-up.ipynb").write_bytes(notebook_bytes(make_notebook(3)))
            for copy in range(args.copies):
                (root / f"big-{copy}.ipynb").write_bytes(big)
            for copy in range(args.many):
                (root / f"many-{copy}.ipynb").write_bytes(small)
            home = Path(scratch, name, "jupyter")
            home.mkdir()
            if name == "ganymede":
                toml = f"[serve]\npack_idle_after = {args.pack_idle_after}\n"
                (root / "ganymede.toml").write_text(toml)
                grace = f"--GanymedeExtension.room_grace_period={GRACE}"
                server = start_ganymede(root, home, grace)
            else:
                server = start_anchor(
                    venv, root, home, f"--YDocExtension.document_cleanup_delay={GRACE}"
                )
            started = time.perf_counter()
            try:
                results[name] = asyncio.run(measure(server, args))
            finally:
                server.stop()
            print(f"{name}: measured in {time.perf_counter() - started:.0f} s")
    print(f"anchor: {versions}")
    report(results, args, len(big) / 1e6)


if __name__ == "__main__":
    main()
