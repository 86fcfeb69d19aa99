"""Connections under stress: a client that stops reading, an oversized frame, a silent client.

Each server here has small ``[serve]`` limits so the tests reach them quickly; the other clients
of the room must carry on untouched.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from jupyter_ydoc import YNotebook
from tornado.websocket import WebSocketClosedError

from ganymede.serve.rooms import protocol
from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server
from tests.serve.rooms.client import eventually, open_socket, room_client
from tests.serve.rooms.conftest import (
    edit_first_cell,
    notebook_bytes,
    open_session,
    sources,
    write,
)
from tests.serve.rooms.raw import raw_room_socket
from tests.serve.test_metrics import figures, value
from tests.serve.websocket import DEADLINE, closed_with, hang_up

pytestmark = pytest.mark.slow

# Above what one burst of frames read off a socket can queue (tornado reads 256 KiB before
# yielding), so a client that reads is never dropped for the room's own bursts.
QUEUE_MESSAGES = 1000
MAX_BODY = 2 * 1024 * 1024
LIMITED = f"[serve]\nclient_queue_messages = {QUEUE_MESSAGES}\nmax_body_size = {MAX_BODY}\n"
# Pings often, and drops a client after a second and a half without a word from it.
IMPATIENT = "[serve]\nping_interval = 0.2\nping_timeout = 1.5\n"
FLOOD_CHUNK = "x" * 1024


def start_with(home: Path, toml: str, *args: str) -> RunningServer:
    root = home / "root"
    write(root / "ganymede.toml", toml.encode())
    return start_server(root, jupyter_env(home / "jupyter"), *args)


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = start_with(tmp_path_factory.mktemp("limited"), LIMITED)
    yield running
    stop_server(running)


@pytest.fixture(scope="module")
def impatient(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    grace = "--GanymedeExtension.room_grace_period=0.5"
    running = start_with(tmp_path_factory.mktemp("impatient"), IMPATIENT, grace)
    yield running
    stop_server(running)


def flood_edit(notebook: YNotebook, n: int) -> None:
    """One edit carrying a kilobyte, replacing the last, so the document itself stays small."""
    with notebook.ydoc.transaction():
        notebook.ystate["flood"] = f"{n}:{FLOOD_CHUNK}"


def has_edit(notebook: YNotebook, n: int) -> bool:
    return notebook.ystate.get("flood") == f"{n}:{FLOOD_CHUNK}"


async def test_a_client_that_stops_reading_is_closed_1008_and_the_others_carry_on(
    limited: RunningServer,
) -> None:
    server = limited
    write(server.root / "flood.ipynb", notebook_bytes("a", "b"))
    behind = "ganymede_room_clients_closed_too_far_behind_total"
    with server.client() as api:
        name, session = open_session(api, "flood.ipynb")
        closed_before = value(figures(api), behind)
    async with (
        room_client(server, name, session) as flooder,
        room_client(server, name, session) as reader,
        raw_room_socket(server, name, session) as stalled,
    ):
        notebook: YNotebook = flooder.shared  # type: ignore[assignment]
        seen: YNotebook = reader.shared  # type: ignore[assignment]
        edits = 0
        started = time.monotonic()
        while f"room {name}: closing a client" not in server.log.read_text():
            assert time.monotonic() - started < 6 * DEADLINE, "the stalled client stayed"
            for _ in range(100):
                edits += 1
                flood_edit(notebook, edits)
                await asyncio.sleep(0)
            # Flood as fast as the reading client keeps up: only the stalled one falls behind.
            await eventually(functools.partial(has_edit, seen, edits), "the reader to keep up")
        assert await stalled.close_code() == 1008
        closed = server.log.read_text().count(f"room {name}: closing a client {QUEUE_MESSAGES} ")
        assert closed == 1, "only the stalled client"
        with server.client() as api:
            assert value(figures(api), behind) == closed_before + 1

        edits += 1
        flood_edit(notebook, edits)
        edit_first_cell(flooder, " still here")
        await eventually(functools.partial(has_edit, seen, edits), "the reader to get every edit")
        # The cell edit is a transaction of its own, after the last flood edit.
        await eventually(lambda: sources(reader) == ["a still here", "b"], "the cell edit")
        assert sources(flooder) == ["a still here", "b"]


async def test_an_oversized_frame_closes_only_its_sender(limited: RunningServer) -> None:
    server = limited
    write(server.root / "big.ipynb", notebook_bytes("small"))
    with server.client() as api:
        name, session = open_session(api, "big.ipynb")
    async with room_client(server, name, session) as ada, room_client(server, name, session) as bob:
        sender = await open_socket(server, name, session)
        try:
            await sender.write_message(protocol.sync_update(b"\x00" * (MAX_BODY + 1)), binary=True)
            cut_short = False
        except WebSocketClosedError:
            # The server closed the socket mid-frame; its close frame can be lost with the rest.
            cut_short = True
        code, _ = await closed_with(sender)
        assert code == 1009 or (cut_short and code is None)

        edit_first_cell(ada, " and fine")
        await eventually(lambda: sources(bob) == ["small and fine"], "the others to carry on")
        assert ada.connection.close_code is None


async def test_a_frame_just_under_the_limit_is_taken(limited: RunningServer) -> None:
    server = limited
    write(server.root / "under.ipynb", notebook_bytes(""))
    with server.client() as api:
        name, session = open_session(api, "under.ipynb")
    async with room_client(server, name, session) as ada, room_client(server, name, session) as bob:
        text = "y" * (MAX_BODY - 1024)
        edit_first_cell(ada, text)
        await eventually(lambda: sources(bob) == [text], "the large edit to arrive")
        assert ada.connection.close_code is None


async def test_a_client_that_vanishes_is_dropped_after_the_ping_timeout(
    impatient: RunningServer,
) -> None:
    server = impatient
    write(server.root / "vanish.ipynb", notebook_bytes("gone"))
    write(server.root / "stay.ipynb", notebook_bytes("here"))
    with server.client() as api:
        vanishing_name, session = open_session(api, "vanish.ipynb")
        staying_name, _ = open_session(api, "stay.ipynb")
    async with (
        room_client(server, staying_name, session) as ada,
        raw_room_socket(server, vanishing_name, session) as silent,
    ):
        await eventually(
            lambda: f"room {vanishing_name}: dropping a client: silent" in server.log.read_text(),
            "the silent client to be dropped",
        )
        await eventually(
            lambda: f"room {vanishing_name}: closed" in server.log.read_text(),
            "its room to close once the grace period passed",
        )
        assert await silent.close_code() == 1001

        # Connected longer than the silent one, but answering pings: still in its room.
        assert ada.connection.close_code is None
        async with room_client(server, staying_name, session) as bob:
            edit_first_cell(ada, " still")
            await eventually(lambda: sources(bob) == ["here still"], "ada's edit to arrive")
    assert f"room {staying_name}: dropping" not in server.log.read_text()


async def test_pings_follow_the_serve_section_without_tornados_warning(
    impatient: RunningServer,
) -> None:
    server = impatient
    write(server.root / "pings.ipynb", notebook_bytes())
    with server.client() as api:
        name, session = open_session(api, "pings.ipynb")
    connection = await open_socket(server, name, session)
    pinged = asyncio.Event()
    connection.on_ping = lambda data: pinged.set()  # type: ignore[method-assign]
    try:
        await asyncio.wait_for(pinged.wait(), DEADLINE)
    finally:
        await hang_up(connection)
    assert "websocket_ping_timeout" not in server.log.read_text()
