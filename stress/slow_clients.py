"""Slow and dead clients: one that stops reading, one killed, one that vanishes without a word.

- A client that stops reading (a hand-made websocket that reads nothing after its handshake)
  while another floods the room: the server must close it 1008 once it is
  ``[serve] client_queue_messages`` (10,000 by default; the short run configures 2,000) messages
  behind, and a reading client must get every edit before and after. It must reach that limit
  before its stalled write passes the write deadline (30 s), or it is dropped for that instead,
  which the run reports as a failure rather than flooding on.
- A client process killed with SIGKILL: its socket closes without a close frame; the room must
  let it go at once and carry on.
- A client that vanishes (its socket stays open, nothing comes back, pings go unanswered): the
  server must drop it after ``[serve] ping_timeout`` (90 s by default; the short run configures
  1 s pings and a 3 s timeout), and the others carry on.

The stalled and killed clients meet a server with pings off, the vanishing one a second server
with pings on: a client that reads nothing is silent too, and must be seen to hit each limit.

    .venv/bin/python -m stress.slow_clients [--long]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from jupyter_ydoc import YNotebook

from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server
from tests.serve.rooms.client import eventually, room_client
from tests.serve.rooms.conftest import edit_first_cell, notebook_bytes, open_session, sources, write
from tests.serve.rooms.raw import raw_room_socket


@dataclass(frozen=True)
class Limits:
    """The ``[serve]`` settings the run configures."""

    queue_messages: int
    ping_interval: float
    ping_timeout: float

    def stalled_toml(self) -> bytes:
        """Pings off while a client stalls: with them on, a client that reads nothing is also
        silent, and whichever limit it reaches first ends it (a race, not a test)."""
        queue = f"client_queue_messages = {self.queue_messages}"
        return f"[serve]\n{queue}\nping_interval = 0\n".encode()

    def pings_toml(self) -> bytes:
        return (
            f"[serve]\nping_interval = {self.ping_interval}\nping_timeout = {self.ping_timeout}\n"
        ).encode()


SHORT = Limits(queue_messages=2_000, ping_interval=1.0, ping_timeout=3.0)
LONG = Limits(queue_messages=10_000, ping_interval=30.0, ping_timeout=90.0)  # the defaults
FLOOD_CHUNK = "x" * 256
FLOOD_BURST = 200
GIVE_UP = 600.0
GRACE = 0.5  # an empty room's grace period here, so the room closing shows its client left
# A client in a process of its own, which the script kills: it joins the room, says so, waits.
KILLED_CLIENT = """
import asyncio, sys
from tests.serve.conftest import RunningServer
from tests.serve.rooms.client import room_client

async def main():
    server = RunningServer(None, None, sys.argv[1], None)
    async with room_client(server, sys.argv[2], sys.argv[3]):
        print("joined", flush=True)
        await asyncio.Event().wait()

asyncio.run(main())
"""


@dataclass
class Figures:
    limits: Limits
    stalled_close_code: int | None
    stalled_behind: int  # messages queued for it when it was closed, as the server logged
    flood_edits: int
    flood_seconds: float
    reader_missed: int
    killed_left_seconds: float  # from the kill to its room closing, less the grace period
    silent_close_code: int | None
    silent_dropped_after: float  # seconds it was silent when dropped, as the server logged
    others_carried_on: bool

    def print(self) -> None:
        print("slow clients:")
        print(
            f"  stopped reading   closed {self.stalled_close_code} at {self.stalled_behind} "
            f"messages behind, after {self.flood_edits} edits in {self.flood_seconds:.1f} s; "
            f"the reader missed {self.reader_missed}"
        )
        print(f"  killed (SIGKILL)  let go of after {self.killed_left_seconds:.2f} s")
        print(
            f"  vanished          closed {self.silent_close_code} after "
            f"{self.silent_dropped_after:.1f} s silent "
            f"(ping_timeout {self.limits.ping_timeout:.0f} s)"
        )
        print(f"  others carried on {self.others_carried_on}")

    @property
    def clean(self) -> bool:
        return (
            self.stalled_close_code == 1008
            and self.stalled_behind == self.limits.queue_messages
            and self.reader_missed == 0
            and self.silent_close_code == 1001
            and self.silent_dropped_after >= self.limits.ping_timeout
            and self.others_carried_on
        )


def flood_edit(notebook: YNotebook, n: int) -> None:
    with notebook.ydoc.transaction():
        notebook.ystate["flood"] = f"{n}:{FLOOD_CHUNK}"


def has_edit(notebook: YNotebook, n: int) -> bool:
    return notebook.ystate.get("flood") == f"{n}:{FLOOD_CHUNK}"


async def stop_reading(server: RunningServer) -> tuple[int | None, int, int, float, int]:
    """Flood a room as fast as a reading client keeps up, until the stalled one is closed."""
    write(server.root / "flood.ipynb", notebook_bytes("a"))
    with server.client() as api:
        name, session = open_session(api, "flood.ipynb")
    closing = f"room {name}: closing a client "
    dropped = f"room {name}: dropping a client: "
    async with (
        room_client(server, name, session) as flooder,
        room_client(server, name, session) as reader,
        raw_room_socket(server, name, session) as stalled,
    ):
        notebook: YNotebook = flooder.shared  # type: ignore[assignment]
        seen: YNotebook = reader.shared  # type: ignore[assignment]
        edits, started = 0, time.monotonic()
        missed = 0
        while closing not in (log := server.log.read_text()):
            if dropped in log:
                why = log.split(dropped, 1)[1].splitlines()[0]
                raise AssertionError(f"the stalled client was dropped ({why}), not closed 1008")
            if time.monotonic() - started > GIVE_UP:
                raise AssertionError(f"no close after {edits} edits in {GIVE_UP:.0f} s")
            for _ in range(FLOOD_BURST):
                edits += 1
                flood_edit(notebook, edits)
                await asyncio.sleep(0)
            await eventually(functools.partial(has_edit, seen, edits), "the reader to keep up", 60)
        flood_seconds = time.monotonic() - started
        code = await stalled.close_code()
        edits += 1
        flood_edit(notebook, edits)
        try:
            await eventually(lambda: has_edit(seen, edits), "the reader to get the last edit")
        except AssertionError:
            missed = 1
        line = next(x for x in server.log.read_text().splitlines() if closing in x)
        behind = int(line.split(closing, 1)[1].split()[0])
    return code, behind, edits, flood_seconds, missed


async def killed(server: RunningServer) -> float:
    """Seconds from its only client's SIGKILL to a room knowing it left (its grace period of
    ``GRACE`` seconds taken off the time it took to close)."""
    write(server.root / "killed.ipynb", notebook_bytes("k"))
    with server.client() as api:
        name, session = open_session(api, "killed.ipynb")
    root = Path(__file__).resolve().parent.parent
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_CLIENT, server.url, name, session],
        stdout=subprocess.PIPE,
        text=True,
        cwd=root,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "joined"
    process.send_signal(signal.SIGKILL)
    process.wait()
    process.stdout.close()
    killed_at = time.monotonic()
    closed = f"room {name}: closed"
    await eventually(lambda: closed in server.log.read_text(), "the killed client to leave", 30)
    return time.monotonic() - killed_at - GRACE


async def vanish(server: RunningServer) -> tuple[int | None, float, bool]:
    """A silent client beside a live one: when it is dropped, and whether the live one stays."""
    write(server.root / "vanish.ipynb", notebook_bytes("here"))
    with server.client() as api:
        name, session = open_session(api, "vanish.ipynb")
    dropped = f"room {name}: dropping a client: silent"
    async with (
        room_client(server, name, session) as ada,
        raw_room_socket(server, name, session) as gone,
    ):
        await eventually(lambda: dropped in server.log.read_text(), "the drop", GIVE_UP)
        # The server's own count: it last heard the client before this side's connect returned,
        # so a clock started here would come up short of the silence it waited out.
        line = next(x for x in server.log.read_text().splitlines() if dropped in x)
        after = float(line.split(dropped, 1)[1].split()[1])
        code = await gone.close_code()
        async with room_client(server, name, session) as bob:
            edit_first_cell(ada, " still")
            await eventually(lambda: sources(bob) == ["here still"], "ada's edit to reach bob")
        carried_on = ada.connection.close_code is None
    return code, after, carried_on


@contextmanager
def serving(home: Path, config: bytes) -> Iterator[RunningServer]:
    write(home / "root" / "ganymede.toml", config)
    grace = f"--GanymedeExtension.room_grace_period={GRACE}"
    server = start_server(home / "root", jupyter_env(home / "jupyter"), grace)
    try:
        yield server
    finally:
        stop_server(server)


def slow_clients(home: Path, limits: Limits) -> Figures:
    with serving(home / "stalled", limits.stalled_toml()) as server:
        code, behind, edits, flood_seconds, missed = asyncio.run(stop_reading(server))
        left_after = asyncio.run(killed(server))
    with serving(home / "vanish", limits.pings_toml()) as server:
        silent_code, silent_after, carried_on = asyncio.run(vanish(server))
    return Figures(
        limits=limits,
        stalled_close_code=code,
        stalled_behind=behind,
        flood_edits=edits,
        flood_seconds=flood_seconds,
        reader_missed=missed,
        killed_left_seconds=left_after,
        silent_close_code=silent_code,
        silent_dropped_after=silent_after,
        others_carried_on=carried_on,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--long", action="store_true", help="the defaults: 10,000 queued, 30 s pings, 90 s timeout"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ganymede-slow-") as home:
        figures = slow_clients(Path(home), LONG if args.long else SHORT)
    figures.print()
    if not figures.clean:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
