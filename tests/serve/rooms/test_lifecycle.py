"""When rooms save and close: after the grace period, and when the server stops.

These servers save only on close (``save_delay`` is a minute), so a file holding an edit shows
that closing the room wrote it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ganymede.serve.rooms import protocol
from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server
from tests.serve.rooms.client import eventually, open_socket, room_client
from tests.serve.rooms.conftest import (
    edit_first_cell,
    notebook_bytes,
    open_session,
    sources,
    sources_on_disk,
    write,
)
from tests.serve.websocket import closed_with

pytestmark = pytest.mark.slow

# Long enough for a client to come back within it on a busy machine, short enough to wait out.
GRACE = "--GanymedeExtension.room_grace_period=2"
NO_AUTOSAVE = b"[serve]\nsave_delay = 60.0\n"


def start_saving_only_on_close(home: Path) -> RunningServer:
    root = home / "root"
    write(root / "ganymede.toml", NO_AUTOSAVE)
    return start_server(root, jupyter_env(home / "jupyter"), GRACE)


@pytest.fixture(scope="module")
def quiet_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = start_saving_only_on_close(tmp_path_factory.mktemp("quiet"))
    yield running
    stop_server(running)


async def test_a_room_left_empty_saves_and_closes_after_the_grace_period(
    quiet_server: RunningServer,
) -> None:
    server = quiet_server
    path = write(server.root / "grace.ipynb", notebook_bytes("left"))
    with server.client() as api:
        name, session = open_session(api, "grace.ipynb")
    async with room_client(server, name, session) as ada:
        edit_first_cell(ada, " behind")
    await eventually(lambda: sources_on_disk(path) == ["left behind"], "the room to save")
    await eventually(lambda: f"room {name}: closed" in server.log.read_text(), "the room to close")

    async with room_client(server, name, session) as bob:
        assert sources(bob) == ["left behind"]
    assert server.log.read_text().count(f"room {name}: opened") == 2


async def test_a_client_back_within_the_grace_period_finds_the_same_room(
    quiet_server: RunningServer,
) -> None:
    server = quiet_server
    write(server.root / "back.ipynb", notebook_bytes("here"))
    with server.client() as api:
        name, session = open_session(api, "back.ipynb")
    async with room_client(server, name, session) as ada, room_client(server, name, session) as bob:
        edit_first_cell(ada, " again")
        await eventually(lambda: sources(bob) == ["here again"], "the edit to reach the room")
    async with room_client(server, name, session) as ada, room_client(server, name, session) as bob:
        assert sources(ada) == sources(bob) == ["here again"]
    await eventually(lambda: f"room {name}: closed" in server.log.read_text(), "the room to close")
    assert server.log.read_text().count(f"room {name}: opened") == 1


async def test_a_client_with_history_from_a_closed_room_is_told_to_reload(
    quiet_server: RunningServer,
) -> None:
    server = quiet_server
    write(server.root / "stale.ipynb", notebook_bytes("once"))
    with server.client() as api:
        name, session = open_session(api, "stale.ipynb")
    async with room_client(server, name, session) as ada:
        edit_first_cell(ada, " more")
    await eventually(lambda: f"room {name}: closed" in server.log.read_text(), "the room to close")

    # Back after the grace period, as y-websocket reconnects: its state, then its history.
    returning = await open_socket(server, name, session)
    await returning.write_message(protocol.sync_step1(ada.shared.ydoc.get_state()), binary=True)
    await returning.write_message(protocol.sync_step2(ada.shared.ydoc.get_update()), binary=True)
    code, reason = await closed_with(returning)
    assert code == 1003
    assert json.loads(reason or "")["reason"] == "unknown_session"
    async with room_client(server, name, session) as bob:
        assert sources(bob) == ["once more"]


async def test_a_client_back_with_its_history_within_the_grace_period_carries_on(
    quiet_server: RunningServer,
) -> None:
    server = quiet_server
    write(server.root / "resume.ipynb", notebook_bytes("one"))
    with server.client() as api:
        name, session = open_session(api, "resume.ipynb")
    async with room_client(server, name, session) as ada:
        edit_first_cell(ada, " two")
    async with room_client(server, name, session, shared=ada.shared) as ada_again:
        edit_first_cell(ada_again, " three")
        async with room_client(server, name, session) as bob:
            await eventually(lambda: sources(bob) == ["one two three"], "bob to see it once")


async def test_stopping_the_server_saves_unsaved_edits_and_closes_the_clients(
    tmp_path: Path,
) -> None:
    server = start_saving_only_on_close(tmp_path)
    path = write(server.root / "stop.ipynb", notebook_bytes("unsaved"))
    try:
        with server.client() as api:
            name, session = open_session(api, "stop.ipynb")
        async with (
            room_client(server, name, session) as ada,
            room_client(server, name, session) as bob,
        ):
            edit_first_cell(ada, " edit")
            await eventually(lambda: sources(bob) == ["unsaved edit"], "the room to have it")
            assert await asyncio.to_thread(server.interrupt) == 0
            await eventually(lambda: ada.connection.close_code is not None, "the close")
            assert ada.connection.close_code == 1001
        assert sources_on_disk(path) == ["unsaved edit"]
    finally:
        stop_server(server)
