"""``[serve] max_rooms_mb``: past the budget, clientless rooms close before their grace period
ends, the longest clientless first; never one with a client or with unsaved edits."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ganymede.agent import Author, AuthorKind
from ganymede.fileid import FileIdStore
from ganymede.serve.rooms import RoomManager
from ganymede.serve.rooms.room import DocumentRoom
from tests.serve.rooms.client import eventually
from tests.serve.rooms.conftest import notebook_bytes, write

NAMES = ("a", "b", "c")
ADA = Author("ada", AuthorKind.PERSON)


class QuietClient:
    """A connected client that drops what it is sent."""

    def send(self, frame: bytes) -> None:
        del frame

    def close(self, code: int, reason: str) -> None:
        del code, reason


@pytest.fixture
async def rooms(tmp_path: Path) -> AsyncIterator[tuple[RoomManager, FileIdStore]]:
    root = tmp_path / "root"
    for name in NAMES:
        write(root / f"{name}.ipynb", notebook_bytes(*(f"x_{n} = {n}" for n in range(200))))
    file_ids = FileIdStore(root, tmp_path / "ids.db")
    # Long grace and save delays: only the budget closes a room here, and edits stay unsaved.
    manager = RoomManager(
        file_ids, grace_period=600, save_delay=600, runtime_dir=tmp_path / "runtime"
    )
    try:
        yield manager, file_ids
    finally:
        await manager.stop()
        file_ids.close()


def room_name(file_ids: FileIdStore, name: str) -> str:
    return f"json:notebook:{file_ids.index(f'{name}.ipynb')}"


async def test_past_the_budget_the_longest_clientless_room_closes_first(
    rooms: tuple[RoomManager, FileIdStore],
) -> None:
    manager, file_ids = rooms
    a, b, c = (room_name(file_ids, name) for name in NAMES)
    first, second = QuietClient(), QuietClient()
    room_a = await manager.join(a, first)
    assert isinstance(room_a, DocumentRoom) and room_a.estimated_mb > 0
    manager.max_rooms_mb = room_a.estimated_mb * 2.5  # two rooms fit, three do not
    room_b = await manager.join(b, second)
    manager.leave(room_a, first)
    manager.leave(room_b, second)
    assert manager.room(a) is room_a and manager.room(b) is room_b, "two rooms fit the budget"
    await manager.join(c, QuietClient())
    await eventually(lambda: manager.room(a) is None, "the longest clientless room to close")
    assert manager.room(b) is room_b, "one room closing was enough"
    assert manager.room(c) is not None


async def test_the_budget_never_closes_a_room_with_a_client_or_unsaved_edits(
    rooms: tuple[RoomManager, FileIdStore],
) -> None:
    manager, file_ids = rooms
    manager.max_rooms_mb = 0.001  # every room is over it
    a, b, c = (room_name(file_ids, name) for name in NAMES)
    editor, watcher, passer = QuietClient(), QuietClient(), QuietClient()
    edited = await manager.join(a, editor)
    assert isinstance(edited, DocumentRoom)
    with edited.writing_as(ADA):
        source = edited.document.shared.ycells[0]["source"]  # type: ignore[attr-defined]
        source += "  # unsaved"
    manager.leave(edited, editor)
    watched = await manager.join(b, watcher)
    clean = await manager.join(c, passer)
    manager.leave(clean, passer)
    await eventually(lambda: manager.room(c) is None, "the clean clientless room to close")
    assert manager.room(a) is edited and edited.has_unsaved_edits
    assert manager.room(b) is watched
