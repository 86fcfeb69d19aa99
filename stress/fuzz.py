"""Fuzz: random and mutated room frames and HTTP bodies against a real server.

Room frames start from valid ones (sync step 1 and 2, updates made by a real document,
awareness, save requests) and are truncated, bit-flipped, given wrong or huge lengths and
unknown types, or replaced by noise. Each frame is followed by a save request with a fresh id:
its answer proves the connection still stands and has read the frame; a close must come with a
protocol code (1002, 1003, 1007, 1008, 1009) and a reason. HTTP bodies go to the execute
endpoint, the grants API and the agent API, random JSON and mutations of valid bodies: the
answer must be below 500 and, when it refuses, JSON saying why. Host calls with random methods
and params go through the responder in process: JSON data back, or a wire error code. After
each batch the server must still answer a health request, and at the end a client that stayed
in the room the whole time must hold what the room saved to the file, a valid notebook.

    .venv/bin/python -m stress.fuzz [--long] [--inputs N] [--odd-edits]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import nbformat
from jupyter_ydoc import YNotebook
from pycrdt import Array, Doc, Map, Text, write_var_uint
from tornado.websocket import WebSocketClientConnection, WebSocketClosedError

from ganymede.core import Notebooks
from ganymede.errors import HostCallError
from ganymede.fileid import FileIdStore
from ganymede.grant import Grant, Grants, GrantStore
from ganymede.host.api import ERROR_CODES, Caller
from ganymede.host.responder import HostResponder
from ganymede.notebook.hashing import source_hash
from ganymede.serve.rooms import protocol
from ganymede.serve.rooms.protocol import MessageType
from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server
from tests.serve.rooms.client import open_socket, room_client
from tests.serve.rooms.conftest import notebook_bytes, open_session, write
from tests.serve.websocket import hang_up

SHORT_INPUTS, LONG_INPUTS = 2_000, 100_000
MAX_BODY = 1024 * 1024
CONFIG = f"[serve]\nmax_body_size = {MAX_BODY}\nsave_delay = 0.2\n"
HOST_SHARE = 0.1  # of the inputs, host calls made in process once the server part is done
FRAME_SHARE = 0.6  # of the inputs, room frames; of those, some odd but well-formed edits:
ODD_EDIT_SHARE = 0.03  # with --odd-edits
BATCH = 200
ANSWER_TIMEOUT = 30.0
PROTOCOL_CLOSES = frozenset({1002, 1003, 1007, 1008, 1009})
NOTEBOOK = "fuzz.ipynb"
CELL_SOURCES = ["1 + 1", "x = 2", "print(x)"]
FAILURES_SHOWN = 10


@dataclass
class Tally:
    inputs: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    def count(self, kind: str) -> None:
        self.inputs += 1
        self.outcomes[kind] += 1

    def fail(self, problem: str) -> None:
        self.failures.append(problem)


# Frames --------------------------------------------------------------------------------------


def seed_frames(rng: random.Random) -> list[bytes]:
    """Valid frames of every kind the rooms speak, made by a real document."""
    doc = Doc()
    text = doc.get("fuzz", type=Text)
    before = doc.get_state()
    text += "hello"
    update = doc.get_update(before)
    awareness = protocol.encode_awareness(
        [protocol.AwarenessEntry(rng.randrange(2**31), 1, json.dumps({"user": {"name": "fuzz"}}))]
    )
    return [
        protocol.sync_step1(Doc().get_state()),
        protocol.sync_step1(doc.get_state()),
        protocol.sync_step2(update),
        protocol.sync_update(update),
        protocol.awareness_frame(awareness),
        protocol.save_request(rng.randrange(2**20)),
        write_var_uint(MessageType.QUERY_AWARENESS),
    ]


def huge_var_uint(rng: random.Random) -> bytes:
    return bytes([0xFF] * rng.randrange(6, 12) + [0x7F])


def mutate(frame: bytes, rng: random.Random) -> bytes:
    """One of the ways a frame goes wrong on the wire or in a buggy client."""
    kind = rng.randrange(9)
    if kind == 0 and frame:  # truncated
        return frame[: rng.randrange(len(frame))]
    if kind == 1 and frame:  # bit flips
        flipped = bytearray(frame)
        for _ in range(rng.randrange(1, 9)):
            flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
        return bytes(flipped)
    if kind == 2 and len(frame) > 2:  # a wrong length prefix where the payload starts
        return frame[:2] + write_var_uint(rng.randrange(2**16)) + frame[3:]
    if kind == 3:  # a huge varint somewhere
        at = rng.randrange(len(frame) + 1)
        return frame[:at] + huge_var_uint(rng) + frame[at:]
    if kind == 4:  # an unknown message type
        return write_var_uint(rng.choice([4, 5, 17, 127, 128, 300, 2**30])) + frame[1:]
    if kind == 5:  # bytes inserted or cut out
        at = rng.randrange(len(frame) + 1)
        if rng.random() < 0.5:
            return frame[:at] + rng.randbytes(rng.randrange(1, 16)) + frame[at:]
        return frame[:at] + frame[at + rng.randrange(1, 16) :]
    if kind == 6:  # two frames run together
        return frame + frame
    if kind == 7:  # an unknown sync step
        return bytes([MessageType.SYNC]) + write_var_uint(rng.randrange(3, 300)) + frame[2:]
    return rng.randbytes(rng.randrange(0, 64))


ODD_VALUES: list[Any] = [None, True, 0, -1, 2.5, "", "print(1)", "bogus", [1, "a"], {"a": {}}]


def odd_edit(room_state: bytes, rng: random.Random) -> bytes:
    """A well-formed update that makes the notebook odd: cells of a shape JupyterLab never
    makes, sources that are not text, cells deleted, metadata of the wrong types."""
    doc = Doc()
    doc.apply_update(room_state)
    cells = doc.get("cells", type=Array)
    meta = doc.get("meta", type=Map)
    before = doc.get_state()
    kind = rng.randrange(6)
    with doc.transaction():
        if kind == 0:
            cells.append(Map({rng.choice(["source", "id", "x"]): rng.choice(ODD_VALUES)}))
        elif kind == 1 and len(cells):
            cells[rng.randrange(len(cells))]["source"] = rng.choice(ODD_VALUES)
        elif kind == 2 and len(cells) > 1:
            del cells[rng.randrange(len(cells))]
        elif kind == 3:
            meta[rng.choice(["metadata", "nbformat", "nbformat_minor"])] = rng.choice(ODD_VALUES)
        elif kind == 4 and len(cells):
            cell = cells[rng.randrange(len(cells))]
            cell[rng.choice(["cell_type", "outputs", "metadata", "execution_count", "id"])] = (
                rng.choice(ODD_VALUES)
            )
        else:
            fresh = f"odd-{rng.randrange(10**6)}"
            cell = {"id": fresh, "source": Text("2 + 2"), "metadata": Map()}
            cell |= {"cell_type": "code", "outputs": Array(), "execution_count": None}
            cells.append(Map(cell))  # as JupyterLab makes a code cell
    return protocol.sync_update(doc.get_update(before))


def fuzz_frame(seeds: list[bytes], rng: random.Random) -> bytes | str:
    roll = rng.random()
    if roll < 0.002:
        return rng.randbytes(MAX_BODY + rng.randrange(1, 1024))  # past max_body_size
    if roll < 0.02:
        return rng.choice(["", "hello", json.dumps({"type": "save"}), "\x00"])
    frame = rng.choice(seeds)
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        frame = mutate(frame, rng)
    return frame


# JSON bodies ---------------------------------------------------------------------------------

ODD_STRINGS = [
    "",
    "..",
    "../../etc/passwd",
    "/etc/passwd",
    "%2e%2e%2f",
    "a\x00b",
    "\udcff",
    "💥" * 50,
    "x" * 5000,
    "json:notebook:",
    "json:notebook:" + "f" * 36,
    "null",
    "fuzz.ipynb/..",
    "fuzz.ipynb",
    "sub/../fuzz.ipynb",
]


# What a URL can carry (a lone surrogate has no UTF-8 form, so no client could send it).
QUERY_STRINGS = [text for text in ODD_STRINGS if not any(0xD800 <= ord(c) < 0xE000 for c in text)]


def random_json(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.randrange(10 if depth < 3 else 6)
    if roll == 0:
        return None
    if roll == 1:
        return rng.choice([True, False])
    if roll == 2:
        return rng.choice([0, -1, 1, 2**31, 2**63, -(2**70), 3600, 3601, 1e308, -0.5])
    if roll in (3, 4, 5):
        return rng.choice(ODD_STRINGS) if rng.random() < 0.6 else rng.randbytes(8).hex()
    if roll in (6, 7):
        return [random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["cells", "cell_id", "source_hash", "document_id", "wait", "read", "run", "path"]
    keys += ["edit_self", "session", "id", "op", "source", "after", "since", "agent", "ids"]
    return {rng.choice(keys): random_json(rng, depth + 1) for _ in range(rng.randrange(5))}


def mutate_body(body: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    mutated = dict(body)
    for _ in range(rng.randrange(1, 3)):
        key = rng.choice([*mutated, "extra"]) if mutated else "extra"
        if rng.random() < 0.3:
            mutated.pop(key, None)
        else:
            mutated[key] = random_json(rng)
    return mutated


@dataclass
class Target:
    """What the HTTP fuzz aims at: a running kernel, the room's document and cells, a session."""

    kernel_id: str
    document_id: str
    cells: list[tuple[str, str]]  # id, source
    session: str


def execute_body(target: Target, rng: random.Random) -> dict[str, Any]:
    cells = [
        {"cell_id": cell_id, "source_hash": rng.choice([source_hash(source), "0", "junk"])}
        for cell_id, source in rng.sample(target.cells, rng.randrange(1, len(target.cells) + 1))
    ]
    body: dict[str, Any] = {
        "document_id": target.document_id,
        "cells": cells,
        "request_id": uuid.uuid4().hex,
    }
    if rng.random() < 0.3:
        body["wait"] = rng.choice([0, 1, 5])
    if rng.random() < 0.2:
        body = {"cell_id": rng.choice(target.cells)[0], "document_id": target.document_id}
    return body


def agent_body(target: Target, rng: random.Random) -> tuple[str, dict[str, Any]]:
    """An agent endpoint and a body valid enough to get past its first checks."""
    cell_id = rng.choice(target.cells)[0]
    bodies: list[tuple[str, dict[str, Any]]] = [
        ("sessions", {"agent": "fuzz"}),
        ("read", {"session": target.session, "path": NOTEBOOK}),
        ("read", {"session": target.session, "since": "0123456789abcdef"}),
        ("cells", {"session": target.session, "path": NOTEBOOK, "op": "edit", "id": cell_id}),
        ("cells", {"session": target.session, "path": NOTEBOOK, "op": "bogus"}),
        ("request-done", {"session": target.session, "path": NOTEBOOK, "id": cell_id}),
        ("create", {"session": target.session, "path": f"made/{rng.randrange(50)}.ipynb"}),
    ]
    return rng.choice(bodies)


# Unsafe for a fuzz run's pace: they start kernels. Random bodies still reach them.
SLOW_AGENT_ENDPOINTS = ["run", "kernel", "run-notebook"]


async def one_request(
    api: httpx.AsyncClient, target: Target, rng: random.Random
) -> tuple[str, httpx.Response]:
    """Send one fuzzed request; its name (for the tally) and the answer."""
    roll = rng.random()
    raw: bytes | None = None
    if rng.random() < 0.1:
        raw = rng.choice(
            [b"", b"{", b"\xff\xfe", b"[]", b"null", b'{"cells": [}', rng.randbytes(40)]
        )
    if roll < 0.35:
        kernel = target.kernel_id if rng.random() < 0.9 else str(uuid.uuid4())
        body: Any = execute_body(target, rng)
        body = mutate_body(body, rng) if rng.random() < 0.7 else body
        if rng.random() < 0.1:
            body = random_json(rng)
        url = f"api/kernels/{kernel}/execute"
        return "execute", await post(api, url, body, raw)
    if roll < 0.6:
        method = rng.choice(["GET", "PUT", "DELETE"])
        params = {}
        if rng.random() < 0.9:
            params["path"] = rng.choice([NOTEBOOK, *QUERY_STRINGS, "other.ipynb"])
        if method == "DELETE" and rng.random() < 0.5:
            params["key"] = rng.choice(["read", "run", "edit_self", "nope", ""])
        body = {"read": [rng.choice(ODD_STRINGS)], "run": [], "edit_self": False}
        body = mutate_body(body, rng) if rng.random() < 0.7 else body
        content = raw if raw is not None else json.dumps(body).encode()
        answer = await api.request(
            method, "api/host/grants", params=params, content=content if method == "PUT" else None
        )
        return f"grants {method}", answer
    if roll < 0.9:
        name, body = agent_body(target, rng)
        if rng.random() < 0.15:
            name = rng.choice(SLOW_AGENT_ENDPOINTS)
            body = {"session": "0" * 16, "path": rng.choice(ODD_STRINGS)}
        body = mutate_body(body, rng) if rng.random() < 0.6 else body
        return f"agent {name}", await post(api, f"api/agent/{name}", body, raw)
    name, key = rng.choice([("notebooks", "dir"), ("search", "query"), ("results", "path")])
    params = {key: rng.choice(QUERY_STRINGS)} if rng.random() < 0.8 else {}
    return f"agent {name}", await api.get(f"api/agent/{name}", params=params)


async def post(api: httpx.AsyncClient, url: str, body: Any, raw: bytes | None) -> httpx.Response:
    content = raw if raw is not None else json.dumps(body).encode()
    return await api.post(url, content=content)


def judge_answer(name: str, answer: httpx.Response) -> str | None:
    """What is wrong with an answer, if anything (a cell that raised is a 422 with its error)."""
    if answer.status_code >= 500:
        return f"{name}: {answer.status_code} {answer.text[:300]}"
    if answer.status_code < 400:
        return None
    try:
        data = answer.json()
    except ValueError:
        return f"{name}: {answer.status_code} without a JSON body: {answer.text[:200]}"
    said = isinstance(data, dict) and any(
        isinstance(data.get(key), str) and data[key] for key in ("message", "error", "ename")
    )
    return None if said else f"{name}: {answer.status_code} says nothing: {answer.text[:200]}"


# Host calls --------------------------------------------------------------------------------

HOST_METHODS = ["hello", "notebooks.list", "notebooks.read", "notebooks.search"]
HOST_METHODS += ["notebooks.results", "notebooks.run", "self.add", "self.edit", "nope", ""]
HOST_KEYS = ["path", "dir", "query", "outputs", "cell_type", "limit", "params", "id", "source"]


def host_params(rng: random.Random) -> Any:
    if rng.random() < 0.1:
        return random_json(rng)  # not even an object
    params = {rng.choice(HOST_KEYS): random_json(rng) for _ in range(rng.randrange(4))}
    if rng.random() < 0.5:
        params[rng.choice(["path", "dir"])] = rng.choice([NOTEBOOK, "made", *ODD_STRINGS])
    return params


async def fuzz_host_calls(home: Path, calls: int, rng: random.Random, tally: Tally) -> None:
    """Random methods and params through the responder a served kernel's calls reach: each must
    answer JSON data or fail with one of the wire's error codes and a message."""
    root = home / "root"
    file_ids = FileIdStore(root, home / "fuzz-ids.db")
    try:
        grants = Grants(root, Grant(), GrantStore(home / "fuzz-grants.toml"), file_ids)
        responder = HostResponder(Notebooks(root), grants)
        for _ in range(calls):
            method = rng.choice(HOST_METHODS)
            notebook = rng.choice([NOTEBOOK, None, "other.ipynb"])
            params = host_params(rng)
            try:
                answer = await responder.call(Caller("k", notebook, Grant()), method, params)
                json.dumps(answer)
                tally.count("host call answered")
            except HostCallError as error:
                tally.count(f"host call {error.code}")
                if error.code not in ERROR_CODES or not error.message:
                    tally.fail(f"host {method} {params!r:.200}: {error.code} {error.message!r}")
            except Exception as error:  # anything else is the failure this looks for
                tally.count("host call crashed")
                tally.fail(f"host {method} {params!r:.200}: {type(error).__name__}: {error}")
    finally:
        file_ids.close()


# The room ------------------------------------------------------------------------------------


@dataclass
class Prober:
    """One fuzzing connection to the room, reopened whenever the server closes it."""

    server: RunningServer
    room: str
    session: str
    connection: WebSocketClientConnection | None = None
    next_save: int = 1_000_000

    async def ensure_open(self) -> WebSocketClientConnection:
        if self.connection is None:
            self.connection = await open_socket(self.server, self.room, self.session)
            # As every client does first: the room takes no update before it.
            await self.connection.write_message(protocol.sync_step1(Doc().get_state()), binary=True)
        return self.connection

    async def send(self, frame: bytes | str, tally: Tally, label: str = "frame") -> None:
        connection = await self.ensure_open()
        oversized = len(frame) > MAX_BODY
        try:
            await connection.write_message(frame, binary=isinstance(frame, bytes))
            self.next_save += 1
            await connection.write_message(protocol.save_request(self.next_save), binary=True)
        except WebSocketClosedError:
            pass
        try:
            outcome = await asyncio.wait_for(self._answer(connection), ANSWER_TIMEOUT)
        except TimeoutError:
            tally.fail(f"no answer within {ANSWER_TIMEOUT:.0f} s to frame {frame[:80]!r}")
            outcome = "hang"
            connection.close()
            self.connection = None
        tally.count(f"{label} {outcome}")
        if outcome == "accepted":
            return
        self.connection = None
        code, reason = connection.close_code, connection.close_reason
        if oversized and code is None:
            return  # the server cut the socket mid-frame; its close can be lost with the rest
        if code not in PROTOCOL_CLOSES or not reason:
            tally.fail(f"frame {frame[:80]!r} closed {code} {reason!r}")

    async def _answer(self, connection: WebSocketClientConnection) -> str:
        """Read until the save request is answered ("accepted") or the server closes."""
        while True:
            message = await connection.read_message()
            if message is None:
                connection.close()
                return f"closed {connection.close_code}"
            if isinstance(message, bytes) and message[:1] == bytes([MessageType.RAW]):
                with contextlib.suppress(ValueError, protocol.FrameError):
                    if protocol.decode_raw_json(message).get("responseTo") == self.next_save:
                        return "accepted"

    async def close(self) -> None:
        if self.connection is not None:
            await hang_up(self.connection)


async def healthy(api: httpx.AsyncClient, server: RunningServer) -> bool:
    if server.process.poll() is not None:
        return False
    return (await api.get("api/status")).status_code == 200


def cells_of(notebook: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Each cell's id, type and source (a file may hold the source as a list of lines)."""
    return [(c.get("id", ""), c["cell_type"], "".join(c["source"])) for c in notebook["cells"]]


async def room_matches_file(server: RunningServer, watcher: Any) -> str | None:
    """Whether a save leaves the file a valid notebook equal to what the client holds."""
    save_id = 42
    if watcher.connection.close_code is not None:
        return f"the room closed its client {watcher.connection.close_code}"
    await watcher.send_raw(protocol.save_request(save_id))
    try:
        while True:
            frame = await watcher.next_frame(MessageType.RAW)
            if protocol.decode_raw_json(frame).get("responseTo") == save_id:
                break
    except TimeoutError:
        return "the room did not answer a save request"
    data = (server.root / NOTEBOOK).read_text()
    try:
        on_disk = nbformat.reads(data, as_version=nbformat.NO_CONVERT)
        nbformat.validate(on_disk)
    except (ValueError, nbformat.ValidationError) as error:
        return f"the saved file is not a valid notebook: {error}"
    notebook: YNotebook = watcher.shared
    held = cells_of(notebook.get())
    if held != cells_of(json.loads(data)):
        return f"the room's client holds {held!r}, the file {cells_of(json.loads(data))!r}"
    return None


async def fuzz_server(
    server: RunningServer, inputs: int, seed: int, odd_edit_share: float
) -> tuple[Tally, float]:
    rng = random.Random(seed)
    written = write(server.root / NOTEBOOK, notebook_bytes(*CELL_SOURCES))
    write(server.root / "other.ipynb", notebook_bytes("1"))
    cells = [(c.id, c.source) for c in nbformat.read(written, as_version=4).cells]
    headers = {"Authorization": f"token {server.token}"}
    tally = Tally()
    async with httpx.AsyncClient(base_url=server.base, headers=headers, timeout=60) as api:
        with server.client() as sync_api:
            room, session = open_session(sync_api, NOTEBOOK)
        kernel = (await api.post("api/kernels", json={"name": "python3"})).json()["id"]
        agent = (await api.post("api/agent/sessions", json={"agent": "fuzz"})).json()["session"]
        file_id = room.rsplit(":", 1)[1]
        target = Target(kernel, f"json:notebook:{file_id}", cells, agent)
        seeds = seed_frames(rng)
        async with room_client(server, room, session) as watcher:
            prober = Prober(server, room, session)
            started = time.monotonic()
            while tally.inputs < inputs:
                for _ in range(min(BATCH, inputs - tally.inputs)):
                    roll = rng.random()
                    if roll < odd_edit_share:
                        state = watcher.shared.ydoc.get_update()
                        await prober.send(odd_edit(state, rng), tally, "odd edit")
                        continue
                    if roll < FRAME_SHARE:
                        await prober.send(fuzz_frame(seeds, rng), tally)
                        continue
                    name, answer = await one_request(api, target, rng)
                    tally.count(f"{name} {answer.status_code}")
                    if problem := judge_answer(name, answer):
                        tally.fail(problem)
                if not await healthy(api, server):
                    tally.fail(f"the server stopped answering after {tally.inputs} inputs")
                    break
            elapsed = time.monotonic() - started
            await prober.close()
            if problem := await room_matches_file(server, watcher):
                tally.fail(problem)
        await api.delete(f"api/kernels/{kernel}")
    for line in server.log.read_text().splitlines():
        if "Traceback" in line or "Uncaught exception" in line:
            tally.fail(f"the server logged: {line[:200]}")
    return tally, elapsed


def fuzz(home: Path, inputs: int, seed: int, odd_edit_share: float = 0.0) -> tuple[Tally, float]:
    write(home / "root" / "ganymede.toml", CONFIG.encode())
    server = start_server(home / "root", jupyter_env(home / "jupyter"))
    host_calls = int(inputs * HOST_SHARE)
    try:
        tally, elapsed = asyncio.run(fuzz_server(server, inputs - host_calls, seed, odd_edit_share))
    finally:
        stop_server(server)
    started = time.monotonic()
    asyncio.run(fuzz_host_calls(home, host_calls, random.Random(seed), tally))
    return tally, elapsed + time.monotonic() - started


def report(tally: Tally, elapsed: float) -> None:
    print(f"fuzz: {tally.inputs} inputs in {elapsed:.0f} s ({tally.inputs / elapsed:.0f}/s)")
    for kind, count in sorted(tally.outcomes.items()):
        print(f"  {kind:<32} {count}")
    print(f"  failures: {len(tally.failures)}")
    for problem in tally.failures[:FAILURES_SHOWN]:
        print("   ", problem)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long", action="store_true", help=f"{LONG_INPUTS} inputs")
    parser.add_argument("--inputs", type=int)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--odd-edits", action="store_true", help="also send well-formed edits of odd shape"
    )
    args = parser.parse_args()
    inputs = args.inputs or (LONG_INPUTS if args.long else SHORT_INPUTS)
    with tempfile.TemporaryDirectory(prefix="ganymede-fuzz-") as home:
        odd_edit_share = ODD_EDIT_SHARE if args.odd_edits else 0.0
        tally, elapsed = fuzz(Path(home), inputs, args.seed, odd_edit_share)
    report(tally, elapsed)
    if tally.failures:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
