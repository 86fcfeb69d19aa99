"""A teacher's notebook with a class on it: one writer, N readers with cursors, both servers.

`ganymede serve` and jupyter-collaboration (the venv bench/rooms.py makes) each hold a room of
the same generated 200-cell notebook. For each N (10, 50, 100), on each server in turn, started
afresh for that N (so memory an earlier round freed does not hide this round's):

- N readers join the room within one second (the writer first opened it), each then moving its
  cursor every 2 s, as JupyterLab's awareness does while a person reads;
- the writer types 20 characters a second into one cell for ``--seconds`` (60), moving its own
  cursor too;
- figures: the latency from each keystroke to the *last* of the N readers holding it (p50, p99,
  max); the server's CPU seconds (utime + stime from /proc) over the typing, per keystroke; its
  RSS with the readers connected less its RSS with the writer alone, per reader (and both
  totals, as an allocator's slack hides the first readers' cost from that difference); whether
  every reader's final document equals the file the room saved (nothing lost, nothing
  duplicated); and readers dropped;
- then N fresh readers join a room nobody has open within one second: all must sync, the server
  must open the file once, and the last's sync is set beside the first's (which paid the open);
- then what a reader costs each server's heap, which no allocator's slack decides: the writer
  opens the class's room again, and N fresh readers join it and move their cursors while the
  server traces its Python allocations (probe/heap_probe.py, an extension both servers load);
  the bytes still held once they all have, per reader.

How latency is measured fairly. The readers are hand-written websocket clients (an asyncio
protocol parsing frames, a bare pycrdt ``Doc``) spread over ``--client-processes`` processes (2)
besides the writer's own, so no single Python process fans in a hundred sockets: a reader applies
each sync frame to its document (Rust), reads the writer's clock off its state vector, and
ignores awareness frames beyond counting them; it notes the time a frame's bytes reached it,
before parsing them. The writer notes its clock after each keystroke and the time just before
the frame went to its socket. Both clocks are CLOCK_MONOTONIC, shared by every process on the
machine; a keystroke reached a reader the first time that reader's copy of the writer's clock
passed it. The same client processes, frames and pace serve both servers, one server at a time.

    .venv/bin/python bench/classroom.py [--clients 10,50,100] [--seconds 60] [--cells 200]
        [--client-processes 2]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import multiprocessing
import os
import random
import statistics
import struct
import tempfile
import time
import urllib.parse
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import httpx
from common import (
    RoomClient,
    Server,
    connect_room,
    make_notebook,
    notebook_bytes,
    start_ganymede,
)
from jupyter_ydoc import YNotebook
from pycrdt import Doc, write_var_uint
from rooms import ensure_anchor, start_anchor

PROBE = Path(__file__).parent / "probe"

WRITER_CLIENT_ID = 1_234_567
TYPED_CELL = 100
KEYS_PER_SECOND = 20
CURSOR_PERIOD = 2.0
JOIN_WINDOW = 1.0
SETTLE = 2.0  # seconds for a server to settle before its RSS is read
SAVE_WAIT = 15.0  # seconds for the room to write the last keystroke to the file
SYNC, AWARENESS = 0, 1
STEP1, STEP2, UPDATE = 0, 1, 2
EMPTY_STATE_VECTOR = b"\x00"
EMPTY_UPDATE = b"\x00\x00"
OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x2, 0x8, 0x9, 0xA


def read_var_uint(data: bytes | memoryview, position: int) -> tuple[int, int]:
    """A lib0 varuint at ``position``, and the position after it."""
    value, shift = 0, 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7


def clock_of(state_vector: bytes, client_id: int) -> int:
    """How many of ``client_id``'s changes a Yjs state vector says its document holds."""
    count, position = read_var_uint(state_vector, 0)
    for _ in range(count):
        client, position = read_var_uint(state_vector, position)
        clock, position = read_var_uint(state_vector, position)
        if client == client_id:
            return clock
    return 0


def var_bytes(payload: bytes) -> bytes:
    return write_var_uint(len(payload)) + payload


def cells_digest(cells: list[tuple[str, str]]) -> str:
    """What two copies of a notebook must agree on: every cell's id and source, in order."""
    return hashlib.sha256(json.dumps(cells).encode()).hexdigest()


def file_cells(path: Path) -> list[tuple[str, str]]:
    notebook = json.loads(path.read_text())
    cells = notebook["cells"]
    return [(cell["id"], "".join(cell["source"])) for cell in cells]


def cursor_state(reader: int, cell: int) -> str:
    """An awareness state shaped as JupyterLab's: who, and where the cursor sits."""
    user = {
        "username": f"student-{reader}",
        "name": f"Student {reader}",
        "display_name": f"Student {reader}",
        "initials": "S",
        "color": "var(--jp-collaborator-color3)",
        "avatar_url": None,
    }
    position = {"type": {"client": 1, "clock": 7}, "tname": None, "item": None, "assoc": 0}
    cursor = {"anchor": position, "head": position, "primary": True, "empty": True}
    return json.dumps({"user": user, "cell": cell, "cursors": [cursor]})


@dataclass
class Reader(asyncio.Protocol):
    """One reader's websocket, parsed by hand: only what is needed to know what it holds."""

    index: int
    host: str
    request: bytes
    doc: Doc = field(default_factory=Doc)
    transport: asyncio.Transport | None = None
    buffer: bytearray = field(default_factory=bytearray)
    upgraded: bool = False
    connected_at: float = 0.0
    synced_at: float | None = None
    synced: asyncio.Event = field(default_factory=asyncio.Event)
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    close_code: int | None = None
    writer_clock: int = 0
    seen: list[tuple[float, int]] = field(default_factory=list)  # (when, writer's clock)
    awareness_frames: int = 0
    awareness_clock: int = 0
    awareness_id: int = field(default_factory=lambda: random.randrange(1, 2**31))

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.write(self.request)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()
        self.synced.set()

    def data_received(self, data: bytes) -> None:
        now = time.monotonic()
        self.buffer += data
        if not self.upgraded:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            status = bytes(self.buffer[:end]).split(b"\r\n", 1)[0]
            if b" 101 " not in status:
                raise SystemExit(f"reader {self.index}: {status.decode()}")
            del self.buffer[: end + 4]
            self.upgraded = True
            self.send(bytes([SYNC, STEP1]) + var_bytes(EMPTY_STATE_VECTOR))
        while (frame := self._next_frame()) is not None:
            opcode, payload = frame
            if opcode == OP_BINARY:
                self._on_message(payload, now)
            elif opcode == OP_PING:
                self.send(payload, OP_PONG)
            elif opcode == OP_CLOSE:
                self.close_code = struct.unpack("!H", payload[:2])[0] if payload else 1005
                assert self.transport is not None
                self.transport.close()

    def _next_frame(self) -> tuple[int, bytes] | None:
        """One whole frame off the buffer (a server's frames are unmasked and unfragmented)."""
        buffer = self.buffer
        if len(buffer) < 2:
            return None
        length, start = buffer[1] & 0x7F, 2
        if length == 126:
            if len(buffer) < 4:
                return None
            (length,), start = struct.unpack_from("!H", buffer, 2), 4
        elif length == 127:
            if len(buffer) < 10:
                return None
            (length,), start = struct.unpack_from("!Q", buffer, 2), 10
        if len(buffer) < start + length:
            return None
        opcode, payload = buffer[0] & 0x0F, bytes(buffer[start : start + length])
        del buffer[: start + length]
        return opcode, payload

    def _on_message(self, message: bytes, now: float) -> None:
        if message[0] == AWARENESS:
            self.awareness_frames += 1
            return
        if message[0] != SYNC:
            return
        step = message[1]
        length, position = read_var_uint(message, 2)
        payload = message[position : position + length]
        if step == STEP1:  # the server asks what we have: nothing of our own
            self.send(bytes([SYNC, STEP2]) + var_bytes(self.doc.get_update(payload)))
            return
        self.doc.apply_update(payload)
        if step == STEP2 and self.synced_at is None:
            self.synced_at = now
            self.synced.set()
        clock = clock_of(self.doc.get_state(), WRITER_CLIENT_ID)
        if clock > self.writer_clock:
            self.writer_clock = clock
            self.seen.append((now, clock))

    def send(self, payload: bytes, opcode: int = OP_BINARY) -> None:
        """One masked frame, as a browser sends it."""
        if self.transport is None or self.transport.is_closing():
            return
        key = os.urandom(4)
        size = len(payload)
        if size < 126:
            header = bytes([0x80 | opcode, 0x80 | size])
        elif size < 1 << 16:
            header = bytes([0x80 | opcode, 0x80 | 126]) + struct.pack("!H", size)
        else:
            header = bytes([0x80 | opcode, 0x80 | 127]) + struct.pack("!Q", size)
        keys = (key * (size // 4 + 1))[:size]
        masked = (int.from_bytes(payload, "big") ^ int.from_bytes(keys, "big")).to_bytes(
            size, "big"
        )
        self.transport.write(header + key + masked)

    def move_cursor(self, cell: int) -> None:
        self.awareness_clock += 1
        state = cursor_state(self.index, cell).encode()
        update = write_var_uint(1) + write_var_uint(self.awareness_id)
        update += write_var_uint(self.awareness_clock) + var_bytes(state)
        self.send(bytes([AWARENESS]) + var_bytes(update))

    def hang_up(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.send(struct.pack("!H", 1000), OP_CLOSE)
            self.transport.close()

    def cells(self) -> list[tuple[str, str]]:
        notebook = YNotebook(self.doc)
        return [(str(cell["id"]), str(cell["source"])) for cell in notebook.ycells]


def upgrade_request(base: str, token: str, room: str, session_id: str) -> tuple[str, int, bytes]:
    url = urllib.parse.urlsplit(base)
    assert url.hostname is not None and url.port is not None
    query = urllib.parse.urlencode({"sessionId": session_id})
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [
        f"GET {url.path}api/collaboration/room/{room}?{query} HTTP/1.1",
        f"Host: {url.hostname}:{url.port}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
        f"Authorization: token {token}",
    ]
    return url.hostname, url.port, ("\r\n".join(lines) + "\r\n\r\n").encode()


@dataclass(frozen=True)
class JoinOrder:
    """Join ``count`` readers of the ``total`` (this process takes ``indices``), spread over
    ``window`` seconds from ``start`` (a monotonic time)."""

    base: str
    token: str
    room: str
    session_id: str
    indices: list[int]
    total: int
    start: float
    window: float


class ReaderProcess:
    """The readers one client process holds, told what to do over a pipe by the bench."""

    def __init__(self, pipe: Connection) -> None:
        self.pipe = pipe
        self.readers: list[Reader] = []
        self.cursors: list[asyncio.Task[None]] = []
        self.cursors_since = 0.0

    async def run(self) -> None:
        while True:
            command, argument = await asyncio.to_thread(self.pipe.recv)
            if command == "stop":
                return
            answer = await getattr(self, command)(argument)
            self.pipe.send(answer)

    async def join(self, order: JoinOrder) -> list[tuple[int, float | None, int | None]]:
        """Each reader's index, sync time (None: never synced) and close code."""
        loop = asyncio.get_running_loop()

        async def one(index: int) -> Reader:
            await asyncio.sleep(
                max(0.0, order.start + order.window * index / order.total - loop.time())
            )
            host, port, request = upgrade_request(
                order.base, order.token, order.room, order.session_id
            )
            reader = Reader(index, host, request)
            reader.connected_at = time.monotonic()
            await loop.create_connection(lambda: reader, host, port)
            await asyncio.wait_for(reader.synced.wait(), 60)
            return reader

        self.readers = list(await asyncio.gather(*(one(index) for index in order.indices)))
        return [
            (
                r.index,
                None if r.synced_at is None else r.synced_at - r.connected_at,
                r.close_code,
            )
            for r in self.readers
        ]

    async def cursors_on(self, cell_count: int) -> None:
        async def move(reader: Reader) -> None:
            await asyncio.sleep(random.uniform(0, CURSOR_PERIOD))
            while not reader.closed.is_set():
                reader.move_cursor(random.randrange(cell_count))
                await asyncio.sleep(CURSOR_PERIOD)

        self.cursors = [asyncio.create_task(move(reader)) for reader in self.readers]
        self.cursors_since = time.monotonic()
        for reader in self.readers:
            reader.awareness_frames = 0

    async def report(self, _: None) -> list[dict[str, Any]]:
        for task in self.cursors:
            task.cancel()
        self.cursors = []
        cursors_for = time.monotonic() - self.cursors_since
        return [
            {
                "index": r.index,
                "seen": r.seen,
                "digest": cells_digest(r.cells()),
                "dropped": r.closed.is_set(),
                "close_code": r.close_code,
                "awareness_rate": r.awareness_frames / cursors_for,
            }
            for r in self.readers
        ]

    async def hang_up(self, _: None) -> None:
        for reader in self.readers:
            reader.hang_up()
        await asyncio.gather(*(r.closed.wait() for r in self.readers))
        self.readers = []


def reader_process_main(pipe: Connection) -> None:
    asyncio.run(ReaderProcess(pipe).run())


class ReaderPool:
    """The client processes; each command goes to all and their answers are put together."""

    def __init__(self, processes: int) -> None:
        context = multiprocessing.get_context("spawn")
        self.pipes: list[Connection] = []
        self.processes = []
        for _ in range(processes):
            ours, theirs = context.Pipe()
            process = context.Process(target=reader_process_main, args=(theirs,), daemon=True)
            process.start()
            self.pipes.append(ours)
            self.processes.append(process)

    async def ask(self, command: str, arguments: list[Any]) -> list[Any]:
        for pipe, argument in zip(self.pipes, arguments, strict=True):
            pipe.send((command, argument))
        answers = []
        for pipe in self.pipes:
            answers.extend(await asyncio.to_thread(pipe.recv) or [])
        return answers

    async def all(self, command: str, argument: Any = None) -> list[Any]:
        return await self.ask(command, [argument] * len(self.pipes))

    async def join(self, server: Server, room: str, session_id: str, total: int) -> list[Any]:
        start = time.monotonic() + 0.2
        orders = [
            JoinOrder(
                server.base,
                server.token,
                room,
                session_id,
                list(range(process, total, len(self.pipes))),
                total,
                start,
                JOIN_WINDOW,
            )
            for process in range(len(self.pipes))
        ]
        return await self.ask("join", orders)

    def stop(self) -> None:
        for pipe in self.pipes:
            pipe.send(("stop", None))
        for process in self.processes:
            process.join(10)


def cpu_seconds(server: Server) -> float:
    fields = Path(f"/proc/{server.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(server: Server) -> float:
    status = Path(f"/proc/{server.process.pid}/status").read_text()
    (line,) = [line for line in status.splitlines() if line.startswith("VmRSS:")]
    return int(line.split()[1]) / 1024


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


async def session(server: Server, path: str) -> tuple[str, str]:
    async with httpx.AsyncClient(base_url=server.base, headers=server.headers) as api:
        answer = await api.put(
            f"api/collaboration/session/{urllib.parse.quote(path, safe='')}",
            json={"format": "json", "type": "notebook"},
        )
    answer.raise_for_status()
    body = answer.json()
    return f"json:notebook:{body['fileId']}", body["sessionId"]


@dataclass
class Round:
    """What one server did with N readers."""

    server: str
    clients: int
    latencies: list[float]  # seconds from each keystroke to the last reader holding it
    missed: int  # keystrokes some connected reader never got
    cpu_per_key: float
    rss_per_client_mb: float
    # The whole server's RSS with the writer alone and with the readers too: an allocator that
    # kept freed memory at hand fills it with the first readers, which the per-reader figure
    # then leaves out, so the totals are printed beside it.
    rss_alone_mb: float
    rss_with_readers_mb: float
    equal: int  # readers whose document equals the file
    dropped: int
    keystrokes: int
    awareness_frames: float  # awareness frames a reader got a second
    join_first: float = 0.0
    join_last: float = 0.0
    join_max: float = 0.0
    join_synced: int = 0
    join_cpu: float = 0.0  # the server's CPU seconds while they joined
    opens: int | None = None
    heap_per_client_kb: float = 0.0  # Python allocations a reader holds in the server
    load: str = ""


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000


async def writer_in(server: Server, path: str, cells: int) -> tuple[str, str, RoomClient]:
    """The room's name and session, and the writer, synced, with the server settled after it."""
    room, session_id = await session(server, path)
    writer = await connect_room(
        server, path, "json", "notebook", YNotebook(Doc(client_id=WRITER_CLIENT_ID))
    )
    await writer.until(lambda: len(writer.notebook.ycells) == cells, "the writer's sync")
    # As a browser's socket: a keystroke right after a cursor move is not held back by Nagle's
    # algorithm until the server's delayed ACK of the move (40 ms).
    writer.connection.protocol.set_nodelay(True)
    await asyncio.sleep(SETTLE)
    return room, session_id, writer


async def readers_in(
    pool: ReaderPool, server: Server, room: str, session_id: str, clients: int, cells: int
) -> None:
    """N readers join within one second, every one syncs, and they start moving cursors."""
    joined = await pool.join(server, room, session_id, clients)
    assert all(sync is not None for _, sync, _ in joined), "a reader did not sync"
    await pool.all("cursors_on", cells)


async def classroom(
    server: Server, pool: ReaderPool, path: str, clients: int, args: argparse.Namespace
) -> Round:
    room, session_id, writer = await writer_in(server, path, args.cells)
    alone = rss_mb(server)
    await readers_in(pool, server, room, session_id, clients, args.cells)
    await asyncio.sleep(SETTLE)
    with_readers = rss_mb(server)

    keys: list[tuple[float, int]] = []  # (sent at, writer's clock after it)
    cpu_before = cpu_seconds(server)
    started = time.monotonic()
    count = int(args.seconds * KEYS_PER_SECOND)
    next_cursor = started
    for number in range(count):
        await asyncio.sleep(max(0.0, started + number / KEYS_PER_SECOND - time.monotonic()))
        if time.monotonic() >= next_cursor:
            writer.move_cursor(TYPED_CELL)
            next_cursor += CURSOR_PERIOD
        sent = time.monotonic()
        writer.append(TYPED_CELL, "abcdefghijklmnopqrstuvwxyz"[number % 26])
        keys.append((sent, clock_of(writer.notebook.ydoc.get_state(), WRITER_CLIENT_ID)))
    await asyncio.sleep(1.0)  # the last keystrokes' fan-out is part of their cost
    cpu = cpu_seconds(server) - cpu_before

    expected = writer.source(TYPED_CELL)
    deadline = time.monotonic() + SAVE_WAIT
    file = server.root / path
    while file_cells(file)[TYPED_CELL][1] != expected and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    reports = await pool.all("report")
    on_disk = cells_digest(file_cells(file))
    await pool.all("hang_up")
    await writer.close()

    latencies, missed = [], 0
    connected = [r for r in reports if not r["dropped"]]
    for sent, clock in keys:
        arrivals = [next((when for when, c in r["seen"] if c >= clock), None) for r in connected]
        if None in arrivals:
            missed += 1
            continue
        latencies.append(max(arrivals) - sent)  # type: ignore[type-var]
    return Round(
        server=server.name,
        clients=clients,
        latencies=latencies,
        missed=missed,
        cpu_per_key=cpu / count,
        rss_per_client_mb=(with_readers - alone) / clients,
        rss_alone_mb=alone,
        rss_with_readers_mb=with_readers,
        equal=sum(r["digest"] == on_disk for r in reports),
        dropped=len(reports) - len(connected),
        keystrokes=count,
        awareness_frames=statistics.mean(r["awareness_rate"] for r in reports),
    )


async def join_at_once(
    server: Server, pool: ReaderPool, path: str, clients: int, result: Round
) -> None:
    """N readers join a room nobody has open within one second; every one must sync."""
    room, session_id = await session(server, path)
    cpu_before = cpu_seconds(server)
    joined = await pool.join(server, room, session_id, clients)
    result.join_cpu = cpu_seconds(server) - cpu_before
    syncs = {index: sync for index, sync, _ in joined}
    result.join_synced = sum(sync is not None for sync in syncs.values())
    result.join_first = (syncs[0] or 0.0) * 1000
    result.join_last = (syncs[clients - 1] or 0.0) * 1000
    result.join_max = max(sync or 0.0 for sync in syncs.values()) * 1000
    await pool.all("hang_up")
    if server.name == "ganymede":
        log = Path(server.root.parent, "jupyter", "server.log").read_text()
        result.opens = log.count(f"room {room}: opened")


async def heap_probe(server: Server, method: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.base, headers=server.headers) as api:
        answer = await api.request(method, "bench/heap")
    return answer.raise_for_status()


async def heap_per_reader(
    server: Server, pool: ReaderPool, path: str, clients: int, result: Round, cells: int
) -> None:
    """The class again, traced: what N readers with cursors hold of the server's heap."""
    room, session_id, writer = await writer_in(server, path, cells)
    await heap_probe(server, "POST")
    await readers_in(pool, server, room, session_id, clients, cells)
    await asyncio.sleep(CURSOR_PERIOD + SETTLE)  # every reader's cursor is in the room's state
    traced = (await heap_probe(server, "GET")).json()["traced"]
    result.heap_per_client_kb = traced / clients / 1024
    await heap_probe(server, "DELETE")
    await pool.all("report")
    await pool.all("hang_up")
    await writer.close()


async def measure(
    pool: ReaderPool, scratch: Path, data: bytes, venv: Path, args: argparse.Namespace
) -> list[Round]:
    """Each round on a server started for it: memory a round freed (which the allocator keeps)
    would otherwise serve the next round's readers, and their cost would not show in its RSS."""
    rounds = []
    for clients in args.clients:
        for name in ("ganymede", "jupyter-collaboration"):
            if args.only not in (None, name):
                continue
            server = start_server(name, Path(scratch, f"{name}-{clients}"), data, clients, venv)
            try:
                load = load_average()
                class_path = f"class-{clients}.ipynb"
                result = await classroom(server, pool, class_path, clients, args)
                await join_at_once(server, pool, f"join-{clients}.ipynb", clients, result)
                await heap_per_reader(server, pool, class_path, clients, result, args.cells)
            finally:
                server.stop()
            result.load = load
            rounds.append(result)
            print_round(result)
    return rounds


def start_server(name: str, scratch: Path, data: bytes, clients: int, venv: Path) -> Server:
    root, home = scratch / "root", scratch / "jupyter"
    root.mkdir(parents=True)
    home.mkdir()
    for kind in ("class", "join"):
        (root / f"{kind}-{clients}.ipynb").write_bytes(data)
    extensions = home / "config" / "jupyter_server_config.d"
    extensions.mkdir(parents=True)
    enable = {"ServerApp": {"jpserver_extensions": {"heap_probe": True}}}
    (extensions / "heap_probe.json").write_text(json.dumps(enable))
    return start_ganymede(root, home) if name == "ganymede" else start_anchor(venv, root, home)


def print_round(r: Round) -> None:
    latency = (
        f"p50 {percentile(r.latencies, 0.5):6.1f} p99 {percentile(r.latencies, 0.99):6.1f} "
        f"max {max(r.latencies) * 1000:6.1f} ms"
        if r.latencies
        else "no keystroke reached every reader"
    )
    opens = "" if r.opens is None else f", file opened {r.opens}x"
    print(
        f"{r.server:22} N={r.clients:3}  to the last reader {latency}; "
        f"CPU {r.cpu_per_key * 1000:5.2f} ms/key; heap {r.heap_per_client_kb:4.1f} KB/client; "
        f"RSS {r.rss_per_client_mb * 1024:6.0f} KB/client "
        f"({r.rss_alone_mb:.1f} to {r.rss_with_readers_mb:.1f} MB); "
        f"equal {r.equal}/{r.clients}; dropped {r.dropped}; missed {r.missed}/{r.keystrokes}; "
        f"awareness {r.awareness_frames:.1f} frames/s/reader; "
        f"join: {r.join_synced}/{r.clients} synced, first {r.join_first:.0f} ms, "
        f"last {r.join_last:.0f} ms, max {r.join_max:.0f} ms, CPU {r.join_cpu:.2f} s{opens}  "
        f"(load {r.load})",
        flush=True,
    )


def print_ratios(rounds: list[Round]) -> None:
    print("ratios ganymede / jupyter-collaboration")
    by = {(r.server, r.clients): r for r in rounds}
    for clients in sorted({r.clients for r in rounds}):
        ours, anchor = by[("ganymede", clients)], by[("jupyter-collaboration", clients)]
        if not (ours.latencies and anchor.latencies):
            print(f"  N={clients:3}  (a server delivered no keystroke to every reader)")
            continue
        p99 = percentile(ours.latencies, 0.99) / percentile(anchor.latencies, 0.99)
        p50 = percentile(ours.latencies, 0.5) / percentile(anchor.latencies, 0.5)
        cpu = ours.cpu_per_key / anchor.cpu_per_key
        rss = (
            ours.rss_per_client_mb / anchor.rss_per_client_mb
            if anchor.rss_per_client_mb > 0
            else float("nan")
        )
        heap = ours.heap_per_client_kb / anchor.heap_per_client_kb
        print(
            f"  N={clients:3}  latency p50 {p50:.2f}  p99 {p99:.2f} (target <= 0.5, < 50 ms)  "
            f"CPU/key {cpu:.2f} (<= 0.5)  heap/client {heap:.2f} (<= 0.5)  RSS/client {rss:.2f}  "
            f"RSS with the readers {ours.rss_with_readers_mb / anchor.rss_with_readers_mb:.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="10,50,100", help="comma-separated N")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the writer types")
    parser.add_argument("--cells", type=int, default=200)
    parser.add_argument("--client-processes", type=int, default=2)
    parser.add_argument("--only", choices=["ganymede", "jupyter-collaboration"])
    parser.add_argument(
        "--anchor-venv", type=Path, default=Path(".bench-venvs/jupyter-collaboration")
    )
    args = parser.parse_args()
    args.clients = [int(n) for n in args.clients.split(",")]
    # Both servers find the heap probe here; each round's config (start_server) enables it.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROBE), os.getenv("PYTHONPATH")]))
    pool = ReaderPool(args.client_processes)
    venv = args.anchor_venv.absolute()
    versions = ensure_anchor(venv)
    data = notebook_bytes(make_notebook(args.cells))
    print(
        f"notebook: {args.cells} cells; typing {args.seconds:.0f} s at "
        f"{KEYS_PER_SECOND}/s; {args.client_processes} reader processes; anchor: {versions}"
    )
    with tempfile.TemporaryDirectory() as scratch:
        try:
            rounds = asyncio.run(measure(pool, Path(scratch), data, venv, args))
        finally:
            pool.stop()
    if args.only is None:
        print_ratios(rounds)


if __name__ == "__main__":
    main()
