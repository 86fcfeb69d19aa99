"""Crash during save: ``kill -9`` a server while its rooms autosave under continuous typing.

Rooms save 50 ms after the last edit, so with clients typing into every notebook the server is
almost always about to write, or writing, one of them; each notebook carries a large output so a
write takes a while. At a random moment the server is killed. Then every notebook must be a
complete, valid nbformat file whose every cell is the start of what the clients had typed into it
(an old version or a newer one, never a mix or a truncation), and no temporary file of an
interrupted save may be left once the server is back. The server restarts on the same files,
fresh clients open the rooms and must see exactly the file, and the typing starts again.

    .venv/bin/python -m stress.crash_save [--long] [--kills N]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from jupyter_ydoc import YNotebook
from pycrdt import Text

from stress.common import (
    code_cell,
    in_room,
    leftover_temporaries,
    notebook_json,
    serve,
    valid_on_disk,
)
from stress.oracle import Expected, Notebook, differences
from tests.serve.conftest import RunningServer, stop_server
from tests.serve.rooms.client import RoomClient, room_client
from tests.serve.rooms.conftest import open_session

CONFIG = "[serve]\nsave_delay = 0.05\nsettle = 0.1\nsettle_max = 1.0\n"
SHORT_KILLS, LONG_KILLS = 5, 100
NOTEBOOKS = 4
BIG_OUTPUT_LINES = 20_000  # about 500 KB of output per notebook: a write takes a while
FAILURES_SHOWN = 8


@dataclass
class Tally:
    kills: int = 0
    files_checked: int = 0
    versions_seen: int = 0  # files found changed since the last kill: saves that completed
    failures: list[str] = field(default_factory=list)

    def fail(self, problem: str) -> None:
        self.failures.append(problem)


def initial_notebook(name: str) -> bytes:
    cells = [code_cell(f"{name}-{n}", f"# cell {n}\n") for n in range(3)]
    big = "".join(f"line {n}\n" for n in range(BIG_OUTPUT_LINES))
    cells[0]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": big}]
    cells[0]["execution_count"] = 1
    return notebook_json(cells)


async def type_continuously(client: RoomClient, rng: random.Random, label: str) -> None:
    """Type a word into a random cell every few to 150 milliseconds: pauses past the save delay
    let saves start, and typing goes on while they run."""
    notebook: YNotebook = client.shared  # type: ignore[assignment]
    words = 0
    while True:
        words += 1
        with notebook.ydoc.transaction():
            source: Text = notebook.ycells[rng.randrange(len(notebook.ycells))]["source"]
            source += f"{label}.{words} "
            notebook.ystate["dirty"] = True
        await asyncio.sleep(rng.uniform(0.005, 0.15))


def is_an_earlier_version(on_disk: Notebook, typed: Notebook) -> list[str]:
    """How the file fails to be a version of what was typed (empty when it is one): the same
    cells, each source a start of the typed source, every other part unchanged."""
    typed_cells = {cell["id"]: cell for cell in typed["cells"]}
    problems = []
    if [c["id"] for c in on_disk["cells"]] != list(typed_cells):
        problems.append("cells differ from the room's")
    for cell in on_disk["cells"]:
        wanted = typed_cells.get(cell["id"])
        if wanted is None:
            continue
        if not wanted["source"].startswith(cell["source"]):
            problems.append(f"cell {cell['id']}: source is not a start of what was typed")
        if cell.get("outputs") != wanted.get("outputs"):
            problems.append(f"cell {cell['id']}: outputs changed")
    return problems


async def open_rooms(
    server: RunningServer,
    paths: list[Path],
    stack: contextlib.AsyncExitStack,
    label: str,
    tally: Tally,
) -> list[RoomClient]:
    """A fresh client in every notebook's room; each room must show its file, and no temporary
    file of a save cut short may be left once the rooms are open."""
    clients = []
    for path in paths:
        with server.client() as api:
            room_name, session = open_session(api, path.name)
        client = await stack.enter_async_context(room_client(server, room_name, session))
        on_disk = valid_on_disk(path.read_bytes())
        if on_disk is None:
            tally.fail(f"{label} {path.name}: not valid nbformat at reopening")
        elif differences(Expected(on_disk), in_room(client)):
            tally.fail(f"{label} {path.name}: the reopened room differs from the file")
        clients.append(client)
    for leftover in leftover_temporaries(paths[0].parent):
        tally.fail(f"{label}: a temporary file outlived the restart: {leftover.name}")
        leftover.unlink()
    return clients


async def run_until_killed(
    server: RunningServer, paths: list[Path], rng: random.Random, label: str, tally: Tally
) -> list[Notebook]:
    """Open every room, type until a random moment, kill the server; what each client had."""
    async with contextlib.AsyncExitStack() as stack:
        clients = await open_rooms(server, paths, stack, label, tally)
        typists = [
            asyncio.create_task(type_continuously(client, rng, f"{label}.{n}"))
            for n, client in enumerate(clients)
        ]
        await asyncio.sleep(rng.uniform(0.2, 1.5))  # the random moment of the crash
        server.process.kill()
        server.process.wait()
        for typist in typists:
            typist.cancel()
        await asyncio.gather(*typists, return_exceptions=True)
        return [in_room(client) for client in clients]


def check_files(
    paths: list[Path], typed: list[Notebook], before: list[bytes], label: str, tally: Tally
) -> None:
    for path, what_was_typed, old in zip(paths, typed, before, strict=True):
        data = path.read_bytes()
        tally.files_checked += 1
        tally.versions_seen += data != old
        on_disk = valid_on_disk(data)
        if on_disk is None:
            tally.fail(f"{label} {path.name}: not valid nbformat after the kill ({len(data)} B)")
            continue
        for problem in is_an_earlier_version(on_disk, what_was_typed):
            tally.fail(f"{label} {path.name}: {problem}")


async def crash_repeatedly(kills: int, seed: int, home: Path) -> Tally:
    rng, tally = random.Random(seed), Tally()
    root = home / "root"
    root.mkdir(parents=True)
    paths = [root / f"notebook{n}.ipynb" for n in range(NOTEBOOKS)]
    for path in paths:
        path.write_bytes(initial_notebook(path.stem))
    for kill in range(1, kills + 1):
        server = serve(home, CONFIG)
        label = f"kill {kill}"
        before = [path.read_bytes() for path in paths]
        try:
            typed = await run_until_killed(server, paths, rng, label, tally)
        finally:
            stop_server(server)
        tally.kills += 1
        check_files(paths, typed, before, label, tally)
    server = serve(home, CONFIG)
    try:
        async with contextlib.AsyncExitStack() as stack:
            await open_rooms(server, paths, stack, "after the last kill", tally)
    finally:
        stop_server(server)
    return tally


def report(tally: Tally, seconds: float) -> str:
    lines = [
        f"kills: {tally.kills} in {seconds:.1f} s",
        f"files checked: {tally.files_checked}; new versions found after kills: "
        f"{tally.versions_seen}",
        f"failures: {len(tally.failures)}",
    ]
    return "\n".join(lines + [f"FAILED {line}" for line in tally.failures[:FAILURES_SHOWN]])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--long", action="store_true", help=f"{LONG_KILLS} kills")
    parser.add_argument("--kills", type=int, help=f"how many kills (default {SHORT_KILLS})")
    parser.add_argument("--seed", type=int, default=random.randrange(1 << 30))
    parser.add_argument("--home", type=Path, help="keep the server's root and logs here")
    arguments = parser.parse_args()
    kills = arguments.kills or (LONG_KILLS if arguments.long else SHORT_KILLS)
    print(f"seed {arguments.seed}", flush=True)
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        home = arguments.home or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        tally = asyncio.run(crash_repeatedly(kills, arguments.seed, home))
    print(report(tally, time.monotonic() - started))
    raise SystemExit(1 if tally.failures else 0)


if __name__ == "__main__":
    main()
