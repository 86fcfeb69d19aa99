"""Merge torture: room edits from several clients interleaved with other programs' rewrites.

Each case, on a room that lives across cases: a few clients edit at once (sources, outputs,
metadata, cells added and deleted), then usually another program reads the file, changes it and
writes it back, atomically or torn in pieces, sometimes while a client types into a cell the
program left alone. Once the room has taken the change in, every client and the file must hold
exactly what ``stress.oracle`` (SPEC §3's rules, written apart from the product) says; every file
the room wrote must be valid nbformat. Some cases end with an explicit save, after which the file
must equal the room.

    .venv/bin/python -m stress.merge_torture [--long] [--cases N] [--rooms N] [--servers N]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_ydoc import YNotebook
from pycrdt import Array, Map, Text

from ganymede.serve.rooms import protocol
from ganymede.serve.rooms.protocol import MessageType
from stress.common import (
    atomic_rewrite,
    code_cell,
    holds,
    in_room,
    leftover_temporaries,
    notebook_json,
    serve,
    torn_rewrite,
    valid_on_disk,
)
from stress.oracle import Expected, Notebook, differences, expected_merge, normalise
from tests.serve.conftest import RunningServer, stop_server
from tests.serve.rooms.client import RoomClient, room_client
from tests.serve.rooms.conftest import open_session

# No autosave within a case: the room writes only when it takes a change in and on explicit
# saves, so what it last wrote (the merge's base) is known exactly.
CONFIG = "[serve]\nsave_delay = 600.0\nsettle = 0.1\nsettle_max = 1.0\n"
SHORT_CASES, LONG_CASES = 30, 10_000
TAKE_IN_TIMEOUT = 20.0
METADATA_KEYS = ("owner", "note", "reviewer", "topic")  # free-form: any string is valid
FAILURES_SHOWN = 5
PROGRESS_EVERY = 1000


@dataclass
class Tally:
    """The figures a run reports."""

    cases: int = 0
    file_writes: int = 0
    torn_writes: int = 0
    saves: int = 0
    files_checked: int = 0
    lost_edits: int = 0
    invalid_files: int = 0
    failed_cases: int = 0
    conflicts: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    def fail(self, case: str, problems: list[str]) -> None:
        self.failed_cases += 1
        self.lost_edits += len(problems)
        if len(self.failures) < FAILURES_SHOWN:
            self.failures.append(f"{case}: " + "; ".join(problems[:6]))


class Ids:
    """Fresh ids and text tokens, unique across the whole run so a lost one cannot hide."""

    def __init__(self, prefix: str) -> None:
        self.prefix, self.count = prefix, 0

    def __call__(self, kind: str) -> str:
        self.count += 1
        return f"{self.prefix}-{kind}{self.count}"


# ---- what the clients do (on their own copies; the room relays) ---------------------------------


def room_edit(notebook: YNotebook, rng: random.Random, new: Ids) -> None:
    """One edit as a person or JupyterLab makes it, flagged dirty in the same transaction."""
    cells: Array = notebook.ycells
    count = len(cells)
    kind = rng.choice(["type", "type", "outputs", "metadata", "add", "delete", "notebook"])
    if (count <= 2 and kind == "delete") or count == 0:
        kind = "add"
    if count >= 9 and kind == "add":
        kind = "delete"
    with notebook.ydoc.transaction():
        index = rng.randrange(count) if count else 0
        if kind == "type":
            source: Text = cells[index]["source"]
            source += f" {new('r')}"
        elif kind == "outputs" and cells[index]["cell_type"] == "code":
            outputs: Array = cells[index]["outputs"]
            outputs.clear()
            stream = {"output_type": "stream", "name": "stdout", "text": Text(new("out") + "\n")}
            outputs.append(Map(stream))
            cells[index]["execution_count"] = rng.randrange(1, 99)
        elif kind == "metadata":
            metadata: Map = cells[index]["metadata"]
            key = rng.choice(METADATA_KEYS)
            if key in metadata and rng.random() < 0.3:
                del metadata[key]
            else:
                metadata[key] = new("m")
        elif kind == "add":
            cell = notebook.create_ycell(code_cell(new("cell"), f"# {new('r')}"))
            cells.insert(rng.randrange(count + 1), cell)
        elif kind == "delete":
            del cells[index]
        else:
            meta: Map = notebook.ydoc.get("meta", type=Map)
            meta["metadata"][rng.choice(METADATA_KEYS)] = new("nm")
        notebook.ystate["dirty"] = True


# ---- what the other program does (on the file) -------------------------------------------------


def file_edit(notebook: dict[str, Any], rng: random.Random, new: Ids) -> str:
    """One change as an agent or a script makes it to the JSON; returns the id of the cell whose
    source or existence it touched ("" for none)."""
    cells: list[dict[str, Any]] = notebook["cells"]
    kind = rng.choice(["source", "source", "outputs", "metadata", "add", "delete", "notebook"])
    if (len(cells) <= 2 and kind == "delete") or not cells:
        kind = "add"
    index = rng.randrange(len(cells)) if cells else 0
    if kind == "source":
        cells[index]["source"] = f"{new('f')} = 1\n# replaced by another program"
        return str(cells[index]["id"])
    if kind == "outputs" and cells[index]["cell_type"] == "code":
        stream = {"output_type": "stream", "name": "stdout", "text": [new("fout") + "\n"]}
        cells[index]["outputs"] = [stream]
        cells[index]["execution_count"] = rng.randrange(100, 199)
    elif kind == "metadata":
        metadata = cells[index].setdefault("metadata", {})
        key = rng.choice(METADATA_KEYS)
        if key in metadata and rng.random() < 0.3:
            del metadata[key]
        else:
            metadata[key] = new("fm")
    elif kind == "add":
        cells.insert(rng.randrange(len(cells) + 1), code_cell(new("fcell"), new("f")))
    elif kind == "delete":
        return str(cells.pop(index)["id"])
    else:
        notebook["metadata"][rng.choice(METADATA_KEYS)] = new("fnm")
    return ""


# ---- one room, case after case ------------------------------------------------------------------


@dataclass
class Room:
    server: RunningServer
    path: Path
    clients: list[RoomClient]
    base: Notebook  # what the room last read or wrote

    @property
    def notebooks(self) -> list[YNotebook]:
        return [client.shared for client in self.clients]  # type: ignore[misc]

    def converged(self) -> bool:
        first = json.dumps(in_room(self.clients[0]), sort_keys=True)
        return all(json.dumps(in_room(c), sort_keys=True) == first for c in self.clients[1:])

    def holds_in_every_client(self, expected: Expected) -> bool:
        return all(not differences(expected, in_room(client)) for client in self.clients)


async def explicit_save(client: RoomClient, save_id: int) -> str:
    await client.send_raw(protocol.save_request(save_id))
    frame = await asyncio.wait_for(client.next_frame(MessageType.RAW), TAKE_IN_TIMEOUT)
    return str(protocol.decode_raw_json(frame)["status"])


@dataclass(frozen=True)
class Rewrite:
    """What the other program wrote, and what a client typed meanwhile ("" for nothing)."""

    theirs: Notebook
    typed_into: str = ""
    typed: str = ""


async def one_case(room: Room, rng: random.Random, new: Ids, label: str, tally: Tally) -> bool:
    """One case; whether it held (on failure the room's state is no longer known)."""
    for notebook in room.notebooks:
        for _ in range(rng.randrange(0, 3)):
            room_edit(notebook, rng, new)
    if not await holds(room.converged, TAKE_IN_TIMEOUT):
        tally.fail(label, ["clients did not converge after their edits"])
        return False
    if rng.random() < 0.8:
        ours = in_room(room.clients[0])
        rewrite = await other_program_writes(room, rng, new, ours, tally)
        if rewrite is None:
            tally.invalid_files += 1
            tally.fail(label, ["the file the room wrote is not valid nbformat"])
            return False
        expected = expected_merge(room.base, ours, rewrite.theirs)
        tally.conflicts.update(conflict.kind for conflict in expected.conflicts)
        on_disk = await took_in(room, expected, rewrite, label, tally)
        if on_disk is None:
            keep_evidence(room, tally, {"base": room.base, "ours": ours, "theirs": rewrite.theirs})
            return False
        room.base = on_disk
        if rewrite.typed_into:  # the file may or may not have the typing: settle it
            room.base = await saved(room, label, tally, rng)
            return bool(room.base)
    if rng.random() < 0.3:
        room.base = await saved(room, label, tally, rng)
        return bool(room.base)
    return True


async def other_program_writes(
    room: Room, rng: random.Random, new: Ids, ours: Notebook, tally: Tally
) -> Rewrite | None:
    """Read the file, change it, write it back (None if what it read was not a valid notebook);
    sometimes a client types meanwhile into a cell the program left alone."""
    data = room.path.read_bytes()
    if valid_on_disk(data) is None:
        return None
    notebook = json.loads(data)
    touched = {file_edit(notebook, rng, new) for _ in range(rng.randrange(1, 4))}
    written = notebook_json(notebook["cells"], notebook["metadata"])
    tally.file_writes += 1
    if rng.random() < 0.5:
        atomic_rewrite(room.path, written)
    else:
        tally.torn_writes += 1
        pause = 0.3 if rng.random() < 0.1 else rng.uniform(0.0, 0.04)  # 0.3: past the settle
        await torn_rewrite(room.path, written, rng.randrange(2, 5), pause)
    theirs = normalise(json.loads(written))
    untouched = [cell["id"] for cell in ours["cells"] if cell["id"] not in touched]
    if not untouched or rng.random() < 0.7:
        return Rewrite(theirs)
    target, token = rng.choice(untouched), f" {new('late')}"
    notebook_of = room.notebooks[rng.randrange(len(room.notebooks))]
    with notebook_of.ydoc.transaction():
        for ycell in notebook_of.ycells:
            if ycell["id"] == target:
                source: Text = ycell["source"]
                source += token
        notebook_of.ystate["dirty"] = True
    return Rewrite(theirs, target, token)


def with_typing(expected: Expected, rewrite: Rewrite) -> Expected:
    """The expectation once the late typing is in too."""
    cells = [
        {**cell, "source": cell["source"] + rewrite.typed}
        if cell["id"] == rewrite.typed_into
        else cell
        for cell in expected.notebook["cells"]
    ]
    notebook = {**expected.notebook, "cells": cells}
    return Expected(notebook, expected.conflicts, expected.file_order, expected.room_added_order)


async def took_in(
    room: Room, expected: Expected, rewrite: Rewrite, label: str, tally: Tally
) -> Notebook | None:
    """Wait for every client and the file to hold the merge; the file's notebook if they do,
    else None with what differs recorded."""
    final = with_typing(expected, rewrite) if rewrite.typed_into else expected
    accepted = [expected, final]  # the typing may have been saved with the merge or not
    if not differences(Expected(room.base), rewrite.theirs):
        accepted.append(Expected(rewrite.theirs))  # same notebook: nothing to take in or save
    on_disk: Notebook | None = None

    def file_holds() -> bool:
        nonlocal on_disk
        on_disk = valid_on_disk(room.path.read_bytes())
        return on_disk is not None and any(not differences(e, on_disk) for e in accepted)

    in_clients = await holds(lambda: room.holds_in_every_client(final), TAKE_IN_TIMEOUT)
    on_file = await holds(file_holds, TAKE_IN_TIMEOUT if in_clients else 0.0)
    tally.files_checked += 1
    if in_clients and on_file:
        return on_disk
    problems = [
        f"client {n}: {problem}"
        for n, client in enumerate(room.clients)
        for problem in differences(final, in_room(client))
    ]
    if on_disk is None:
        tally.invalid_files += 1
        problems.append("file: not valid nbformat")
    else:
        problems += [f"file: {problem}" for problem in differences(expected, on_disk)]
    tally.fail(label, problems or ["timed out"])
    return None


async def saved(room: Room, label: str, tally: Tally, rng: random.Random) -> Notebook:
    """Ask for an explicit save; the file must then equal the room. The new base, or {} if not."""
    tally.saves += 1
    client = room.clients[rng.randrange(len(room.clients))]
    status = await explicit_save(client, rng.randrange(1, 1 << 20))
    room_now = in_room(client)
    on_disk = valid_on_disk(room.path.read_bytes())
    tally.files_checked += 1
    if on_disk is None:
        tally.invalid_files += 1
    problems = [] if status == "success" else [f"explicit save answered {status}"]
    if on_disk is None:
        problems.append("file: not valid nbformat after an explicit save")
    else:
        unsaved = differences(Expected(room_now), on_disk)
        problems += [f"file after an explicit save: {problem}" for problem in unsaved]
    if problems:
        tally.fail(label, problems)
        keep_evidence(room, tally, {"base": room.base, "room": room_now})
        return {}
    return room_now


def keep_evidence(room: Room, tally: Tally, notebooks: dict[str, Notebook]) -> None:
    """Write a failed case's notebooks, and the file as it is, beside the server's root."""
    evidence = {**notebooks, "file": json.loads(room.path.read_bytes() or b"null")}
    dump = room.path.parent.parent / f"failed-{room.path.stem}-{tally.cases}.json"
    dump.write_text(json.dumps(evidence, indent=1))


async def torture_room(
    server: RunningServer, name: str, seed: int, cases: list[int], tally: Tally
) -> None:
    """Cases on one room until the shared budget runs out; a new notebook after a failure."""
    rng, new = random.Random(seed), Ids(name)
    generation = 0
    while cases[0] > 0:
        generation += 1
        path = server.root / f"{name}-{generation}.ipynb"
        initial = [code_cell(new("cell"), f"x = {n}") for n in range(rng.randrange(2, 6))]
        path.write_bytes(notebook_json(initial))
        with server.client() as api:
            room_name, session = open_session(api, path.name)
        async with contextlib.AsyncExitStack() as stack:
            clients = [
                await stack.enter_async_context(room_client(server, room_name, session))
                for _ in range(rng.randrange(2, 4))
            ]
            room = Room(server, path, clients, normalise(json.loads(path.read_bytes())))
            while cases[0] > 0 and len(room.base["cells"]) < 40:
                cases[0] -= 1
                tally.cases += 1
                label = f"seed {seed} {path.name} case {tally.cases}"
                held = await one_case(room, rng, new, label, tally)
                if tally.cases % PROGRESS_EVERY == 0:
                    print(f"{tally.cases} cases, {tally.failed_cases} failed", flush=True)
                if not held:
                    break


async def torture(total: int, rooms: int, servers: int, seed: int, home: Path) -> Tally:
    tally, budget = Tally(), [total]
    running = [serve(home / f"server{n}", CONFIG) for n in range(servers)]
    try:
        await asyncio.gather(
            *(
                torture_room(running[n % servers], f"room{n}", seed + n, budget, tally)
                for n in range(rooms)
            )
        )
        for server in running:
            leftovers = leftover_temporaries(server.root)
            if leftovers:
                tally.fail("end of run", [f"temporary files left: {leftovers}"])
    finally:
        for server in running:
            stop_server(server)
    return tally


def report(tally: Tally, seconds: float) -> str:
    lines = [
        f"cases: {tally.cases} in {seconds:.1f} s ({tally.cases / seconds:.1f} cases/s)",
        f"file writes by another program: {tally.file_writes} ({tally.torn_writes} torn)",
        f"explicit saves: {tally.saves}; files checked: {tally.files_checked}",
        f"lost edits: {tally.lost_edits}; invalid files: {tally.invalid_files}; "
        f"failed cases: {tally.failed_cases}",
        "conflicts by kind (the file won): "
        + (", ".join(f"{k} {v}" for k, v in sorted(tally.conflicts.items())) or "none"),
    ]
    shown = [f"FAILED {line}" for line in tally.failures]
    evidence = "(each failed merge's notebooks: failed-*.json beside the server roots)"
    return "\n".join([*lines, *shown, evidence])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--long", action="store_true", help=f"{LONG_CASES} cases")
    parser.add_argument("--cases", type=int, help=f"how many cases (default {SHORT_CASES})")
    parser.add_argument("--rooms", type=int, default=4, help="rooms tortured at once")
    parser.add_argument("--servers", type=int, default=1, help="servers the rooms spread over")
    parser.add_argument("--seed", type=int, default=random.randrange(1 << 30))
    parser.add_argument("--home", type=Path, help="keep servers' roots and logs here")
    arguments = parser.parse_args()
    total = arguments.cases or (LONG_CASES if arguments.long else SHORT_CASES)
    print(f"seed {arguments.seed}", flush=True)
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        home = arguments.home or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        tally = asyncio.run(
            torture(total, arguments.rooms, arguments.servers, arguments.seed, home)
        )
    print(report(tally, time.monotonic() - started))
    raise SystemExit(1 if tally.failed_cases else 0)


if __name__ == "__main__":
    main()
