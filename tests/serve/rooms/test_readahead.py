"""A take-in waiting for the file's read-ahead is stopped when its task is: it must not go on.

The file watcher's report loop hands a settled change to the room, whose take-in waits here;
the server's shutdown cancels that loop and waits for it to end.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ganymede.fileid import FileIdStore
from ganymede.serve.rooms import RoomManager
from ganymede.serve.rooms.room import DocumentRoom
from tests.serve.rooms.conftest import notebook_bytes, write
from tests.serve.rooms.test_packed_documents import Person


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "root"


async def test_a_wait_for_the_read_ahead_lets_its_own_cancellation_through(
    file_ids: FileIdStore, tmp_path: Path, root: Path
) -> None:
    write(root / "read.ipynb", notebook_bytes("x = 1"))
    manager = RoomManager(file_ids, runtime_dir=tmp_path / "runtime")
    try:
        person = Person("ada")
        room = await manager.join(f"json:notebook:{file_ids.index('read.ipynb')}", person)
        assert isinstance(room, DocumentRoom)
        write(root / "read.ipynb", notebook_bytes("x = 2"))
        room._read_ahead.file_changed()  # reads after a moment of quiet, 0.1 s
        waiting = asyncio.create_task(room._read_ahead.finished())
        await asyncio.sleep(0.01)
        waiting.cancel()
        await asyncio.wait({waiting}, timeout=5)
        assert waiting.cancelled(), "the wait went on after its task was cancelled"
        await room._read_ahead.finished()  # the read-ahead itself was not cut short
        manager.leave(room, person)
    finally:
        await manager.stop()
