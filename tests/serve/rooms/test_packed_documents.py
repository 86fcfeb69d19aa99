"""An idle room packs its document away (``[serve] pack_idle_after``) and rebuilds it when a
message needs it: the clients, the file, the attribution, the shape guard and the trust marks see
the same room as if it had stayed live.

The first tests drive one room in this process with the protocol's own frames, and call
``pack_if_idle`` with a clock moved on, rather than wait; the last runs a server with real
websocket clients and reads the packing from ``/metrics``.
"""

from __future__ import annotations

import gc
import json
import time
import weakref
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import nbformat
import pytest
from jupyter_ydoc import YNotebook, YUnicode
from pycrdt import Doc

from ganymede.agent import AuthorKind
from ganymede.errors import FrameError
from ganymede.fileid import FileIdStore
from ganymede.serve.agents.cells import CellSnapshots
from ganymede.serve.rooms import RoomManager, protocol
from ganymede.serve.rooms.presence import RoomHold
from ganymede.serve.rooms.room import DocumentRoom
from tests.serve.rooms.client import eventually, room_client
from tests.serve.rooms.conftest import (
    edit_first_cell,
    notebook_bytes,
    open_session,
    server_with,
    sources,
    sources_on_disk,
    write,
)
from tests.serve.rooms.test_trust import (
    append_output,
    html_output,
    mark,
    notary,
    notebook_with_html,
    saved,
    signed,
)
from tests.serve.test_metrics import figures, value

pytestmark = pytest.mark.slow

CELLS = 300
PACKED = "ganymede_room_documents_packed"


class Person:
    """A connected client, logged in as ``user_name``, keeping the frames it is sent."""

    def __init__(self, user_name: str) -> None:
        self.user_name = user_name
        self.frames: list[bytes] = []
        self.closed: tuple[int, str] | None = None

    def send(self, frame: bytes) -> None:
        self.frames.append(frame)

    def close(self, code: int, reason: str) -> None:
        self.closed = (code, reason)


class Replica:
    """A client's copy of the room's document, synced through the protocol's frames."""

    def __init__(self, person: Person) -> None:
        self.person = person
        self.notebook = YNotebook(Doc())

    async def sync(self, room: DocumentRoom) -> None:
        """SyncStep1 with what it holds; it takes in the room's SyncStep2 answer."""
        await room.receive(self.person, protocol.sync_step1(self.notebook.ydoc.get_state()))
        for frame in self.person.frames:
            message = protocol.decode_frame(frame)
            if isinstance(message, protocol.SyncStep2 | protocol.SyncUpdate):
                self.notebook.ydoc.apply_update(message.update)
        self.person.frames.clear()

    async def edit_first_cell(self, room: DocumentRoom, text: str) -> None:
        state = self.notebook.ydoc.get_state()
        with self.notebook.ydoc.transaction():
            source = self.notebook.ycells[0]["source"]
            source += text
        await room.receive(self.person, protocol.sync_update(self.notebook.ydoc.get_update(state)))


@pytest.fixture
async def opened(tmp_path: Path) -> AsyncIterator[tuple[RoomManager, DocumentRoom, Path]]:
    root = tmp_path / "root"
    path = write(root / "long.ipynb", notebook_bytes(*(f"x_{n} = {n}" for n in range(CELLS))))
    file_ids = FileIdStore(root, tmp_path / "ids.db")
    manager = RoomManager(file_ids, save_delay=600, runtime_dir=tmp_path / "runtime")
    try:
        room = await manager.join(f"json:notebook:{file_ids.index('long.ipynb')}", RoomHold())
        assert isinstance(room, DocumentRoom)
        yield manager, room, path
    finally:
        await manager.stop()
        file_ids.close()


def later() -> float:
    """A moment after every use so far: a room asked to pack with an idle time of 0 does."""
    return time.monotonic() + 1


def let_go_and_pack(manager: RoomManager, room: DocumentRoom) -> None:
    """The fixture's hold leaves (people's clients stay) and the room packs, as if idle."""
    (hold,) = (client for client in room.clients if isinstance(client, RoomHold))
    manager.leave(room, hold)
    assert room.pack_if_idle(0, later())


async def joined(manager: RoomManager, room: DocumentRoom, name: str) -> Replica:
    replica = Replica(Person(name))
    await manager.join(room.name, replica.person)
    await replica.sync(room)
    return replica


async def test_a_packed_room_keeps_no_live_document_and_costs_its_packed_update(
    opened: tuple[RoomManager, DocumentRoom, Path],
) -> None:
    manager, room, _ = opened
    (hold,) = room.clients
    manager.leave(room, hold)
    live_mb = room.estimated_mb
    live = weakref.ref(room.document.doc)
    assert room.pack_if_idle(0, later())
    gc.collect()
    assert live() is None, "something still holds the live document"
    packed = room.document.packed_away
    assert packed is not None
    assert room.estimated_mb == packed.packed_size / 2**20 < live_mb / 20
    assert room.document.path == "long.ipynb"  # read without unpacking
    assert room.document.packed_away is not None


async def test_an_edit_to_a_packed_room_reaches_the_others_the_file_and_the_record(
    opened: tuple[RoomManager, DocumentRoom, Path],
) -> None:
    manager, room, path = opened
    ada, bob = await joined(manager, room, "ada"), await joined(manager, room, "bob")
    let_go_and_pack(manager, room)

    await ada.edit_first_cell(room, " + 1")
    assert room.document.packed_away is None
    await bob.sync(room)
    assert bob.notebook.ycells[0]["source"].to_py() == "x_0 = 0 + 1"
    assert await room.save() == "success"
    assert sources_on_disk(path)[0] == "x_0 = 0 + 1"
    first_id = str(ada.notebook.ycells[0]["id"])
    assert room.attribution is not None
    stamp = room.attribution.authors()[first_id].source
    assert stamp is not None and stamp.author.name == "ada"
    assert stamp.author.kind is AuthorKind.PERSON

    # Saved and idle again: it packs again, and the next edit still finds everything in place.
    assert room.pack_if_idle(0, later())
    await bob.edit_first_cell(room, " + 2")
    await ada.sync(room)
    assert ada.notebook.ycells[0]["source"].to_py() == "x_0 = 0 + 1 + 2"
    stamp = room.attribution.authors()[first_id].source
    assert stamp is not None and stamp.author.name == "bob"


async def test_a_client_coming_back_with_its_history_is_let_in_after_a_pack(
    opened: tuple[RoomManager, DocumentRoom, Path],
) -> None:
    """The rebuilt document keeps the room's client id: a client holding the room's own
    changes is one of its clients, not one from an earlier room, which would be refused."""
    manager, room, _ = opened
    ada = await joined(manager, room, "ada")
    for client in list(room.clients):
        manager.leave(room, client)  # in its grace period
    assert room.pack_if_idle(0, later())

    back = Replica(Person("ada"))
    back.notebook = ada.notebook
    await manager.join(room.name, back.person)
    await back.sync(room)
    assert back.person.closed is None
    await back.edit_first_cell(room, " # back")
    assert str(room.document.shared.ycells[0]["source"]) == "x_0 = 0 # back"


async def test_an_update_that_would_leave_the_notebook_unsaveable_is_still_refused(
    opened: tuple[RoomManager, DocumentRoom, Path],
) -> None:
    manager, room, _ = opened
    ada = await joined(manager, room, "ada")
    await ada.edit_first_cell(room, " + 1")  # the room's shape guard is made here
    assert await room.save() == "success"
    let_go_and_pack(manager, room)

    state = ada.notebook.ydoc.get_state()
    del ada.notebook.ycells[0]["source"]
    with pytest.raises(FrameError, match="unsaveable"):
        await room.receive(ada.person, protocol.sync_update(ada.notebook.ydoc.get_update(state)))
    assert str(room.document.shared.ycells[0]["source"]) == "x_0 = 0 + 1"


async def test_a_change_on_disk_merges_into_a_packed_room(
    opened: tuple[RoomManager, DocumentRoom, Path],
) -> None:
    manager, room, path = opened
    ada = await joined(manager, room, "ada")
    let_go_and_pack(manager, room)

    changed = [f"x_{n} = {n}" for n in range(CELLS)]
    changed[5] = "x_5 = 'from another program'"
    write(path, notebook_bytes(*changed))
    assert await room.take_in_file_change()
    await ada.sync(room)
    assert str(ada.notebook.ycells[5]["source"]) == "x_5 = 'from another program'"
    assert not room.has_unsaved_edits
    assert room.pack_if_idle(0, later())


async def test_what_keeps_a_document_live(
    opened: tuple[RoomManager, DocumentRoom, Path],
) -> None:
    manager, room, _ = opened
    assert not room.pack_if_idle(0, later()), "a hold of the server's is in"
    (hold,) = room.clients
    ada = await joined(manager, room, "ada")
    manager.leave(room, hold)
    assert not room.pack_if_idle(3600, later()), "used within the idle time"
    await ada.edit_first_cell(room, " + 1")
    assert not room.pack_if_idle(0, later()), "an unsaved edit"
    assert await room.save() == "success"
    room.hand_out()
    assert not room.pack_if_idle(0, later()), "handed out to an extension"
    assert room.document.packed_away is None


async def test_a_cursor_that_moves_rebuilds_a_packed_document_before_the_keystroke(
    opened: tuple[RoomManager, DocumentRoom, Path],
) -> None:
    """A person clicks into a cell before typing: the awareness frame that says so rebuilds the
    document, so the keystroke after it finds it live. The renewal every client sends to stay
    present (the same state, a new clock) does not, or an idle tab would never stay packed."""
    manager, room, _ = opened
    ada = await joined(manager, room, "ada")

    def presence(clock: int, head: int) -> bytes:
        state = json.dumps({"user": {"name": "ada"}, "cursors": [{"head": head}]})
        entry = protocol.AwarenessEntry(ada.notebook.ydoc.client_id, clock, state)
        return protocol.awareness_frame(protocol.encode_awareness([entry]))

    await room.receive(ada.person, presence(0, head=0))
    let_go_and_pack(manager, room)
    await room.receive(ada.person, presence(1, head=0))
    assert room.document.packed_away is not None, "a renewal rebuilt the document"
    await room.receive(ada.person, presence(2, head=5))
    assert room.document.packed_away is None
    assert not room.pack_if_idle(3600, later()), "the cursor's move counts as a use"

    await ada.edit_first_cell(room, " + 1")
    bob = await joined(manager, room, "bob")
    assert bob.notebook.ycells[0]["source"].to_py() == "x_0 = 0 + 1"


async def test_an_agent_looking_for_changes_leaves_a_packed_room_packed_until_one_comes(
    opened: tuple[RoomManager, DocumentRoom, Path],
) -> None:
    """Every agent reply looks at each notebook the agent read: an idle room answers from what
    was read of its cells before, and is rebuilt only once a cell changed."""
    manager, room, _ = opened
    ada = await joined(manager, room, "ada")
    (hold,) = (client for client in room.clients if isinstance(client, RoomHold))
    manager.leave(room, hold)
    snapshots = CellSnapshots()
    read = snapshots.now(room)
    assert room.pack_if_idle(0, later())
    assert snapshots.now(room) == read
    assert room.document.packed_away is not None

    await ada.edit_first_cell(room, " + 1")
    assert await room.save() == "success"
    assert room.pack_if_idle(0, later())
    changed = snapshots.now(room)
    assert changed.states[0].source == "x_0 = 0 + 1"
    assert changed.states[1:] == read.states[1:]


async def test_a_server_packs_idle_rooms_and_unpacks_them_for_an_edit(tmp_path: Path) -> None:
    toml = b"[serve]\npack_idle_after = 0.4\nsave_delay = 0.1\n"
    with server_with(tmp_path, toml) as server, server.client() as api:
        path = write(server.root / "idle.ipynb", notebook_bytes(*(f"y = {n}" for n in range(50))))
        name, session = open_session(api, "idle.ipynb")
        async with (
            room_client(server, name, session) as ada,
            room_client(server, name, session) as bob,
        ):
            await eventually(lambda: packed(api) == 1, "the idle room to pack its document")
            edit_first_cell(ada, " # ada")
            await eventually(lambda: sources(bob)[0] == "y = 0 # ada", "the edit at the other")
            await eventually(lambda: sources_on_disk(path)[0] == "y = 0 # ada", "the autosave")
            await eventually(lambda: packed(api) == 1, "the room to pack again once saved")
            async with room_client(server, name, session) as carol:
                assert sources(carol) == sources(ada)
            write(path, notebook_bytes("y = 'rewritten'", *(f"y = {n}" for n in range(1, 50))))
            await eventually(lambda: sources(bob)[0] == "y = 'rewritten'", "the change on disk")
        script = write(server.root / "idle.py", b"print('idle')\n")
        name, session = open_session(api, "idle.py", "text:file")
        async with room_client(server, name, session) as ada:
            await eventually(lambda: packed(api) == 2, "the text file's room to pack too")
            text: YUnicode = ada.shared  # type: ignore[assignment]
            with text.ydoc.transaction():
                text._ysource += "x = 1\n"
                text.ystate["dirty"] = True
            await eventually(lambda: script.read_text() == "print('idle')\nx = 1\n", "its save")


def packed(api: httpx.Client) -> float:
    return value(figures(api), PACKED)


async def test_an_output_a_client_makes_up_after_a_pack_is_still_not_trusted(
    tmp_path: Path,
) -> None:
    """The rebuilt document is watched for trust as the first was: a made-up output in a
    signed notebook's cell takes the cell's trusted mark away and leaves the file unsigned."""
    toml = b"[serve]\npack_idle_after = 0.4\n"
    with server_with(tmp_path, toml) as server, server.client() as api:
        path = notebook_with_html(server, "signed.ipynb", "<b>mine</b>")
        with notary(server) as server_notary:
            server_notary.sign(nbformat.read(path, as_version=4))
        name, session = open_session(api, "signed.ipynb")
        async with room_client(server, name, session) as mallory:
            assert mark(mallory, 1) is True
            await eventually(lambda: packed(api) == 1, "the idle room to pack its document")
            append_output(mallory, 1, html_output("<b>forged</b><script>steal()</script>"))
            await saved(mallory, path, "steal()")
            await eventually(lambda: mark(mallory, 1) is None, "the cell's trusted mark to go")
        assert not signed(server, path)
