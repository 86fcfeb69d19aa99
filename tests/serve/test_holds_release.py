"""Holds that let go when their holder goes idle, in process on real rooms: a released agent or
kernel keeps no reference to the room (it closes and its memory can go), and its next call
opens the room again with what it had."""

from __future__ import annotations

import asyncio
import gc
import logging
import weakref
from collections.abc import AsyncIterator
from pathlib import Path

import nbformat
import pytest

from ganymede.core import Notebooks
from ganymede.errors import UsageError
from ganymede.fileid import FileIdStore
from ganymede.grant import Grants
from ganymede.host.runs import RunOrder, RunResult, Runs
from ganymede.notebook.hashing import source_hash
from ganymede.serve.agents.manager import Agents
from ganymede.serve.agents.room_edits import RoomHolds, notebook_room_name
from ganymede.serve.execution import Executions
from ganymede.serve.kernels.host_rooms import HostRooms, room_notebook_reader
from ganymede.serve.kernels.notebooks import NotebookKernels
from ganymede.serve.rooms import RoomManager
from ganymede.serve.rooms.room import DocumentRoom
from tests.core.disk import code, write_notebook
from tests.serve.rooms.client import eventually

pytestmark = pytest.mark.anyio

PATH = "work.ipynb"
IDLE = 0.1
GRACE = 0.05


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    served = tmp_path / "root"
    write_notebook(served / PATH, code("a = 1", cell_id="a"), code("b = 2", cell_id="b"))
    return served


@pytest.fixture
async def rooms(file_ids: FileIdStore, tmp_path: Path) -> AsyncIterator[RoomManager]:
    """Rooms that close a moment after their last client leaves, saving as they close."""
    manager = RoomManager(
        file_ids, save_delay=60.0, grace_period=GRACE, runtime_dir=tmp_path / "runtime"
    )
    yield manager
    await manager.stop()


async def no_runs(order: RunOrder) -> RunResult:
    raise UsageError("these tests run no notebooks")


@pytest.fixture
async def agents(
    root: Path, rooms: RoomManager, file_ids: FileIdStore, grants: Grants
) -> AsyncIterator[Agents]:
    """The agent core over the rooms, with no kernels: these tests read and edit only."""
    notebooks = Notebooks(root, room_notebook_reader(rooms))
    log = logging.getLogger("test")
    core = Agents(
        rooms,
        file_ids,
        notebooks,
        log,
        kernels=NotebookKernels(None, None),
        executions=Executions(None, rooms, log),
        runs=Runs(notebooks, grants, no_runs),
        kernel_specs=None,
        presence_idle=IDLE,
    )
    yield core
    await core.stop()


def room_of(rooms: RoomManager, file_ids: FileIdStore) -> DocumentRoom | None:
    room = rooms.room(notebook_room_name(file_ids.index(PATH)))
    return room if isinstance(room, DocumentRoom) else None


async def closed_and_collected(
    rooms: RoomManager, file_ids: FileIdStore, held: weakref.ref
) -> None:
    """Wait for the room to close, then for nothing to hold it: its memory can go."""
    await eventually(lambda: room_of(rooms, file_ids) is None, "the room to close")
    await eventually(lambda: gc.collect() >= 0 and held() is None, "nothing to hold the room")


async def test_a_released_agent_keeps_its_marks_and_not_the_room(
    agents: Agents, rooms: RoomManager, file_ids: FileIdStore, root: Path
) -> None:
    session = agents.open_session("claude-code")
    mark = (await agents.read(session.id, PATH, None))["mark"]
    await agents.edit(session.id, PATH, "edit", cell_id="b", source="b = 20")
    room = room_of(rooms, file_ids)
    assert room is not None
    held, document = weakref.ref(room), weakref.ref(room.document.doc)
    del room

    await closed_and_collected(rooms, file_ids, held)
    assert document() is None
    assert nbformat.read(root / PATH, as_version=4).cells[1].source == "b = 20"  # saved first
    assert agents.kept.get(file_ids.index(PATH)) is not None

    assert await agents.changed("claude-code") == []  # nothing new: no need to open it
    assert room_of(rooms, file_ids) is None
    again = await agents.read(session.id, None, mark)  # the next call opens it again
    assert again["changes"] == []  # its own edit is no news to it
    assert room_of(rooms, file_ids) is not None


async def test_a_kernels_hold_lets_go_when_idle_and_its_next_call_opens_the_room(
    rooms: RoomManager, file_ids: FileIdStore, root: Path
) -> None:
    editor = HostRooms(rooms, file_ids, idle=IDLE)
    await editor.edit("k1", PATH, "a", "a = 10", source_hash("a = 1"))
    room = room_of(rooms, file_ids)
    assert room is not None
    held = weakref.ref(room)
    del room

    await closed_and_collected(rooms, file_ids, held)
    await editor.edit("k1", PATH, "a", "a = 100", source_hash("a = 10"))
    room = room_of(rooms, file_ids)
    assert room is not None
    reopened = weakref.ref(room)
    del room
    await editor.release("k1")
    # Closed and let go of: the room leaves the manager's names before its last save.
    await closed_and_collected(rooms, file_ids, reopened)
    assert nbformat.read(root / PATH, as_version=4).cells[0].source == "a = 100"


async def test_a_notebook_without_cell_ids_stays_held(
    rooms: RoomManager, file_ids: FileIdStore, root: Path
) -> None:
    old = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    old.nbformat_minor = 4
    del old.cells[0]["id"]
    (root / "old.ipynb").write_text(nbformat.writes(old, version=4), encoding="utf-8")
    released = asyncio.Event()
    holds = RoomHolds(rooms, file_ids, idle=IDLE, on_release=lambda _: released.set())
    with holds.in_use("k1"):
        room, notebook = await holds.notebook("k1", "old.ipynb")
    cell_id = str(notebook.ycells[0]["id"])

    await asyncio.wait_for(released.wait(), 10)
    assert holds.hold_in("k1", room) is not None  # the id it knows names a cell while it holds
    assert rooms.room(room.name) is room
    _, again = await holds.notebook("k1", "old.ipynb")
    assert str(again.ycells[0]["id"]) == cell_id
    holds.release("k1")
