"""What a room starts outlives the request that opened it, and must not keep that request.

jupyter_server puts each request's handler in a context variable (``CallContext``), and a task
keeps a copy of the context it was made in: a room's autosave started while a client's
websocket opened the room would keep that client's handler, and whatever it last sent, alive
for as long as the room, and the server's sweepers for as long as the server.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from pathlib import Path

from jupyter_server.base.call_context import CallContext

from ganymede.fileid import FileIdStore
from ganymede.history import HistoryStore
from ganymede.serve.rooms import RoomManager, protocol
from ganymede.serve.rooms.history import HistoryRecorder
from ganymede.serve.rooms.room import DocumentRoom
from tests.serve.rooms.conftest import notebook_bytes, write
from tests.serve.rooms.test_packed_documents import Person, Replica


async def test_a_room_and_the_server_keep_nothing_of_the_request_that_opened_the_room(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    write(root / "opened.ipynb", notebook_bytes("x = 1", "y = 2"))
    file_ids = FileIdStore(root, tmp_path / "ids.db")
    history = HistoryRecorder(HistoryStore(tmp_path / "history.db"))
    manager = RoomManager(
        file_ids, runtime_dir=tmp_path / "runtime", history=history, pack_idle_after=60
    )
    name = f"json:notebook:{file_ids.index('opened.ipynb')}"

    async def a_websocket_request() -> weakref.ref[Person]:
        """What RoomHandler does: the handler in the request's context, a join, a sync, an
        edit, then the client goes (the room stays, in its grace period)."""
        replica = Replica(Person("ada"))
        CallContext.set(CallContext.JUPYTER_HANDLER, replica.person)
        room = await manager.join(name, replica.person)
        assert isinstance(room, DocumentRoom)
        await replica.sync(room)
        await replica.edit_first_cell(room, " + 1")
        await room.receive(replica.person, protocol.sync_step1(replica.notebook.ydoc.get_state()))
        manager.leave(room, replica.person)
        return weakref.ref(replica.person)

    try:
        # A task of its own, as tornado runs each request: its context is a copy.
        handler = await asyncio.create_task(a_websocket_request())
        await asyncio.sleep(0)  # the loop lets go of the handle that woke us on its next turn
        gc.collect()
        assert manager.open_notebook_room("opened.ipynb") is not None, "the room is still open"
        assert handler() is None, "something the room started keeps the request's handler"
    finally:
        await manager.stop()
        await history.stop()
        file_ids.close()
