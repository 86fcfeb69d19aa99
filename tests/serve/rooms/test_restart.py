"""The server restarted under a connected client: no duplicated cells, no lost ones.

The anchors' classic failure: a client keeps the document history of a room that died with its
server, reconnects to the new server's fresh room loaded from the file, and merging the two
histories doubles every cell (or, the other way round, empties the notebook). Here the client
comes back as y-websocket does, same URL and old session id, and is told to reload (1003
``unknown_session``); a fresh client then finds exactly the notebook, in the room and on disk.
"""

from __future__ import annotations

import contextlib
import json
import signal
import uuid
from pathlib import Path

import pytest
from jupyter_ydoc.ybasedoc import YBaseDoc
from tornado.websocket import WebSocketClosedError

from ganymede.serve.rooms import protocol
from ganymede.serve.rooms.protocol import MessageType
from tests.serve.conftest import RunningServer, jupyter_env, start_server
from tests.serve.conftest import stop_server as stop_server_cleanly
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

CELLS = ["import math", "radius = 2", "area = math.pi * radius**2", "print(area)"]
EDITED = ["import math # edited", *CELLS[1:]]
SAVE_ON_CLOSE_ONLY = "[serve]\nsave_delay = 60.0\n"
SAVE_AT_ONCE = "[serve]\nsave_delay = 0.1\n"


def start(home: Path, toml: str, token: str, port: int = 0) -> RunningServer:
    """A server on ``home``'s root; the same home and port make it the same server, restarted."""
    root = home / "root"
    write(root / "ganymede.toml", toml.encode())
    return start_server(root, jupyter_env(home / "jupyter"), "--token", token, "--port", str(port))


def stop(server: RunningServer, how: signal.Signals) -> None:
    server.process.send_signal(how)
    server.wait_stopped()
    assert server.process.stdout is not None
    server.process.stdout.close()


async def come_back_with_history(
    server: RunningServer, name: str, session: str, old: YBaseDoc
) -> tuple[int | None, str | None]:
    """Reconnect as y-websocket does: its state vector, then everything it holds."""
    returning = await open_socket(server, name, session)
    # The server may refuse before reading a word, so the client's writes can find it closed.
    with contextlib.suppress(WebSocketClosedError):
        await returning.write_message(protocol.sync_step1(old.ydoc.get_state()), binary=True)
        await returning.write_message(protocol.sync_step2(old.ydoc.get_update()), binary=True)
    return await closed_with(returning)


@pytest.mark.parametrize(
    ("how", "toml", "expected"),
    [
        # Ctrl-C or SIGTERM: the room saves its unsaved edits before the server exits.
        pytest.param(signal.SIGTERM, SAVE_ON_CLOSE_ONLY, EDITED, id="sigterm-unsaved"),
        pytest.param(signal.SIGINT, SAVE_ON_CLOSE_ONLY, EDITED, id="sigint-unsaved"),
        # Killed: what the autosave wrote is all there is, and all of it is there.
        pytest.param(signal.SIGKILL, SAVE_AT_ONCE, EDITED, id="sigkill-saved"),
        pytest.param(signal.SIGKILL, SAVE_ON_CLOSE_ONLY, CELLS, id="sigkill-unsaved"),
    ],
)
async def test_a_client_from_before_a_restart_is_told_to_reload_and_no_cell_is_doubled_or_lost(
    tmp_path: Path, how: signal.Signals, toml: str, expected: list[str]
) -> None:
    token = uuid.uuid4().hex
    before = start(tmp_path, toml, token)
    path = write(before.root / "circle.ipynb", notebook_bytes(*CELLS))
    try:
        with before.client() as api:
            name, old_session = open_session(api, "circle.ipynb")
        async with (
            room_client(before, name, old_session) as ada,
            room_client(before, name, old_session) as bob,
        ):
            edit_first_cell(ada, " # edited")
            await eventually(lambda: sources(bob) == EDITED, "the room to have the edit")
            if toml == SAVE_AT_ONCE:
                await eventually(lambda: sources_on_disk(path) == EDITED, "the autosave")
            stop(before, how)
    finally:
        if before.process.poll() is None:
            stop_server_cleanly(before)
    assert sources_on_disk(path) == expected

    after = start(tmp_path, toml, token, before.port)
    try:
        with after.client() as api:
            same_name, new_session = open_session(api, "circle.ipynb")
        assert same_name == name
        assert new_session != old_session

        code, reason = await come_back_with_history(after, name, old_session, ada.shared)
        assert code == 1003
        assert json.loads(reason or "")["reason"] == "unknown_session"
        # Even under the new session id its history is refused: it holds none of the new room's.
        code, reason = await come_back_with_history(after, name, new_session, ada.shared)
        assert code == 1003
        assert json.loads(reason or "")["reason"] == "unknown_session"

        async with room_client(after, name, new_session) as carol:
            assert sources(carol) == expected
            await carol.send_raw(protocol.save_request(1))
            reply = protocol.decode_raw_json(await carol.next_frame(MessageType.RAW))
            assert reply["status"] == "success"
            code, _ = await come_back_with_history(after, name, new_session, ada.shared)
            assert code == 1003
            assert sources(carol) == expected
        assert sources_on_disk(path) == expected
    finally:
        stop_server_cleanly(after)
    assert sources_on_disk(path) == expected
