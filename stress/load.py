"""Load: 50 clients on one notebook room plus 10 busy rooms, every update to every live client.

A few clients of each room type continuously; each edit writes a token naming its writer, its
number and the moment it was made (``|writer.number.milliseconds|``) into the writer's own cell,
so every other client of the room can tell which edits reached it and how long each took. Each
client records every token inserted into its document as the update arrives, so an update the
server merged with others still shows each of them. At the end the typing stops, every client
must have seen every other client's tokens, and the clients of a room must agree.

The server's resident memory is sampled each second: flat after warm-up means the slope from the
end of warm-up to the end is close to zero. For that the documents must not grow, so by default
each token replaces the writer's previous one (a Yjs document keeps a small tombstone for what is
deleted), and a writer marks the document dirty only when it is not yet, as JupyterLab does (a
shared map keeps an entry for every value a key was ever set to). ``--append`` keeps every token
instead, as a person writing on and on would, and the documents' growth then shows in the
server's memory. Each save also leaves its entries in the document's shared ``state`` map (the
new hash, clean, then dirty again at the next edit): ``--save-delay 3600`` keeps the rooms from
saving during the run, so that what is left growing is the server's own.

All clients live in this one asyncio process (the machine has 2 cores; the server has the other).

    .venv/bin/python -m stress.load [--long] [--seconds S]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from jupyter_ydoc import YNotebook
from pycrdt import Text

from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server
from tests.serve.rooms.client import RoomClient, eventually, room_client
from tests.serve.rooms.conftest import notebook_bytes, open_session, write

SHORT_SECONDS, LONG_SECONDS = 30.0, 600.0
CROWD = 50  # clients on the one crowded room
CROWD_WRITERS = 5
BUSY_ROOMS = 10
BUSY_CLIENTS = 3
BUSY_WRITERS = 2
EDITS_PER_SECOND = 2.0  # per writing client, on average
WARM_UP_SHARE = 0.2  # of the run, before memory counts as settled
DELIVERY_TIMEOUT = 60.0
TOKEN = re.compile(r"\|(\d+)\.(\d+)\.(\d+)\|")


@dataclass
class Receiver:
    """One client's view: which tokens reached it, and how long each took."""

    name: str
    index: int  # the writer this client is, if it writes: its own tokens are not deliveries
    seen: set[tuple[int, int]] = field(default_factory=set)
    latencies: list[float] = field(default_factory=list)
    subscriptions: list[Any] = field(default_factory=list)  # dropped, they would stop


@dataclass
class Room:
    name: str
    clients: list[RoomClient] = field(default_factory=list)
    receivers: list[Receiver] = field(default_factory=list)
    writers: int = 0
    sent: dict[int, int] = field(default_factory=dict)  # writer -> edits made

    def missing(self) -> dict[str, int]:
        """Per client, how many of the other writers' edits have not reached it."""
        gaps = {}
        for index, receiver in enumerate(self.receivers):
            expected = sum(count for writer, count in self.sent.items() if writer != index)
            got = len(receiver.seen)
            if got != expected:
                gaps[receiver.name] = expected - got
        return gaps

    def agree(self) -> bool:
        documents = [notebook_of(client).get()["cells"] for client in self.clients]
        return all(document == documents[0] for document in documents)


@dataclass
class Figures:
    seconds: float
    rooms: int
    clients: int
    edits: int
    deliveries: int
    undelivered: dict[str, dict[str, int]]
    disagreeing_rooms: list[str]
    latency_p50_ms: float
    latency_p99_ms: float
    latency_max_ms: float
    rss_warm_mb: float
    rss_end_mb: float
    rss_slope_mb_per_min: float

    def print(self) -> None:
        print(f"load: {self.seconds:.0f} s, {self.rooms} rooms, {self.clients} clients")
        print(f"  edits made       {self.edits}")
        print(f"  deliveries       {self.deliveries} (each edit to each other client)")
        print(f"  undelivered      {sum(sum(g.values()) for g in self.undelivered.values())}")
        print(f"  rooms disagreeing {len(self.disagreeing_rooms)}")
        print(
            f"  latency ms       p50 {self.latency_p50_ms:.1f}  p99 {self.latency_p99_ms:.1f}"
            f"  max {self.latency_max_ms:.1f}"
        )
        print(
            f"  server RSS MB    after warm-up {self.rss_warm_mb:.1f}  end {self.rss_end_mb:.1f}"
            f"  slope {self.rss_slope_mb_per_min:+.2f} MB/min"
        )

    @property
    def clean(self) -> bool:
        return not self.undelivered and not self.disagreeing_rooms


def notebook_of(client: RoomClient) -> YNotebook:
    return client.shared  # type: ignore[return-value]


def listen(client: RoomClient, receiver: Receiver, started: float) -> None:
    """Record every token inserted into any cell of ``client``'s document, as it arrives."""

    def on_change(event: Any) -> None:
        arrived = (time.monotonic() - started) * 1000
        for step in event.delta:
            inserted = step.get("insert")
            if not isinstance(inserted, str):
                continue
            for writer, number, made in TOKEN.findall(inserted):
                if int(writer) == receiver.index:
                    continue
                receiver.seen.add((int(writer), int(number)))
                receiver.latencies.append(arrived - int(made))

    for cell in notebook_of(client).ycells:
        source: Text = cell["source"]
        receiver.subscriptions.append(source.observe(on_change))


async def type_into(
    room: Room, writer: int, rng: random.Random, started: float, append: bool
) -> None:
    """Write a token into the writer's own cell at random intervals until cancelled: in place
    of the last one, or after it."""
    notebook = notebook_of(room.clients[writer])
    while True:
        await asyncio.sleep(rng.expovariate(EDITS_PER_SECOND))
        number = room.sent.get(writer, 0) + 1
        made = int((time.monotonic() - started) * 1000)
        with notebook.ydoc.transaction():
            source: Text = notebook.ycells[writer]["source"]
            if not append:
                del source[:]
            source += f"|{writer}.{number}.{made}|"
            if notebook.ystate.get("dirty") is not True:  # as JupyterLab: only when it changes
                notebook.ystate["dirty"] = True
        room.sent[writer] = number


async def sample_memory(pid: int, samples: list[tuple[float, float]], started: float) -> None:
    process = psutil.Process(pid)
    while True:
        rss = process.memory_info().rss / 2**20
        samples.append((time.monotonic() - started, rss))
        await asyncio.sleep(1.0)


def slope_per_minute(samples: list[tuple[float, float]]) -> float:
    """Least-squares slope of RSS over time, in MB per minute."""
    if len(samples) < 2:
        return 0.0
    times = [t for t, _ in samples]
    sizes = [rss for _, rss in samples]
    slope, _ = statistics.linear_regression(times, sizes)
    return slope * 60


def percentile(values: list[float], share: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def open_room(
    stack: contextlib.AsyncExitStack,
    server: RunningServer,
    path: str,
    clients: int,
    writers: int,
    started: float,
) -> Room:
    write(server.root / path, notebook_bytes(*[""] * writers))
    with server.client() as api:
        name, session = open_session(api, path)
    room = Room(path, writers=writers)
    for index in range(clients):
        client = await stack.enter_async_context(room_client(server, name, session))
        receiver = Receiver(f"{path}#{index}", index)
        listen(client, receiver, started)
        room.clients.append(client)
        room.receivers.append(receiver)
    return room


async def run_load(server: RunningServer, seconds: float, seed: int, append: bool) -> Figures:
    rng = random.Random(seed)
    started = time.monotonic()
    samples: list[tuple[float, float]] = []
    async with contextlib.AsyncExitStack() as stack:
        rooms = [await open_room(stack, server, "crowd.ipynb", CROWD, CROWD_WRITERS, started)]
        for n in range(BUSY_ROOMS):
            path = f"busy-{n}.ipynb"
            rooms.append(await open_room(stack, server, path, BUSY_CLIENTS, BUSY_WRITERS, started))
        typing_started = time.monotonic()
        tasks = [asyncio.create_task(sample_memory(server.process.pid, samples, typing_started))]
        for room in rooms:
            for writer in range(room.writers):
                seeded = random.Random(rng.random())
                typing = type_into(room, writer, seeded, started, append)
                tasks.append(asyncio.create_task(typing))
        await asyncio.sleep(seconds)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        everything_arrived: Callable[[], bool] = lambda: not any(r.missing() for r in rooms)  # noqa: E731
        with contextlib.suppress(AssertionError):  # what is still missing is reported below
            await eventually(everything_arrived, "every edit to arrive", DELIVERY_TIMEOUT)
        undelivered = {room.name: gaps for room in rooms if (gaps := room.missing())}
        disagreeing = [room.name for room in rooms if not room.agree()]
    latencies = [v for room in rooms for receiver in room.receivers for v in receiver.latencies]
    warm = [(t, rss) for t, rss in samples if t >= WARM_UP_SHARE * seconds]
    return Figures(
        seconds=seconds,
        rooms=len(rooms),
        clients=sum(len(room.clients) for room in rooms),
        edits=sum(sum(room.sent.values()) for room in rooms),
        deliveries=len(latencies),
        undelivered=undelivered,
        disagreeing_rooms=disagreeing,
        latency_p50_ms=percentile(latencies, 0.50),
        latency_p99_ms=percentile(latencies, 0.99),
        latency_max_ms=max(latencies, default=float("nan")),
        rss_warm_mb=warm[0][1] if warm else float("nan"),
        rss_end_mb=samples[-1][1] if samples else float("nan"),
        rss_slope_mb_per_min=slope_per_minute(warm),
    )


def load(
    home: Path, seconds: float, seed: int, append: bool = False, save_delay: float | None = None
) -> Figures:
    (home / "root").mkdir(parents=True, exist_ok=True)
    if save_delay is not None:
        write(home / "root" / "ganymede.toml", f"[serve]\nsave_delay = {save_delay}\n".encode())
    server = start_server(home / "root", jupyter_env(home / "jupyter"))
    try:
        return asyncio.run(run_load(server, seconds, seed, append))
    finally:
        stop_server(server)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long", action="store_true", help=f"{LONG_SECONDS:.0f} s")
    parser.add_argument("--seconds", type=float, help="how long the clients type")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--append", action="store_true", help="keep every token (docs grow)")
    parser.add_argument(
        "--save-delay", type=float, help="seconds of quiet before a room saves (default 1)"
    )
    args = parser.parse_args()
    seconds = args.seconds or (LONG_SECONDS if args.long else SHORT_SECONDS)
    with tempfile.TemporaryDirectory(prefix="ganymede-load-") as home:
        figures = load(Path(home), seconds, args.seed, args.append, args.save_delay)
    figures.print()
    if not figures.clean:
        print("undelivered:", figures.undelivered, "disagreeing:", figures.disagreeing_rooms)
        raise SystemExit(1)


if __name__ == "__main__":
    main()
