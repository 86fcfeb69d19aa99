"""A server killed during a save leaves a temporary file; the room that opens the notebook next
removes it, and leaves alone one a live writer still holds."""

from __future__ import annotations

import fcntl

import pytest

from tests.serve.conftest import RunningServer
from tests.serve.rooms.client import eventually, room_client
from tests.serve.rooms.conftest import notebook_bytes, open_session, sources, write

pytestmark = pytest.mark.slow


async def test_opening_a_room_removes_what_an_interrupted_save_left(server: RunningServer) -> None:
    path = write(server.root / "crashed.ipynb", notebook_bytes("x = 1"))
    abandoned = write(server.root / ".crashed.ipynb.q7z_0k3m.tmp", notebook_bytes("x = 1")[:20])
    held = write(server.root / ".crashed.ipynb.w0rk1ng_.tmp", b"{")
    with held.open("rb") as writer, server.client() as api:
        fcntl.flock(writer.fileno(), fcntl.LOCK_EX)  # a save under way in another process
        name, session = open_session(api, path.name)
        async with room_client(server, name, session) as client:
            assert sources(client) == ["x = 1"]
            await eventually(lambda: not abandoned.exists(), "the abandoned file to go")
    assert held.exists()
    assert "left by a save that never finished" in server.log.read_text()
