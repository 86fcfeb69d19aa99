"""A class on one notebook: a hundred clients through the real protocol, one of them typing.

They join together (the room opens its file once), each says where its cursor is, and one types
while a client that reads nothing sits among them. The silent one is closed 1008 once it is
``client_queue_messages`` behind; the hundred see every keystroke and everyone's cursor, and
end with the very document the file holds.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from jupyter_ydoc import YNotebook

from ganymede.serve.rooms import protocol
from ganymede.serve.rooms.protocol import AwarenessEntry, MessageType
from tests.serve.conftest import RunningServer
from tests.serve.rooms.client import RoomClient, eventually, room_client
from tests.serve.rooms.conftest import (
    notebook_bytes,
    open_session,
    server_with,
    sources,
    sources_on_disk,
    write,
)
from tests.serve.rooms.raw import raw_room_socket

pytestmark = pytest.mark.slow

CLIENTS = 100
CELLS = 20
QUEUE_MESSAGES = 300
BURST = 100
MAX_KEYSTROKES = 10_000
PASTE = "x" * 1024
# A hundred clients on a loaded 2-core machine; the suite's default is too tight.
SLOW_MACHINE_TIMEOUT = 300


def type_one(writer: RoomClient, number: int) -> None:
    """A keystroke into the first cell, and a paste of a kilobyte that replaces the last one
    (so the frames fill the silent client's socket buffers quickly, and the document does
    not grow by as much)."""
    notebook: YNotebook = writer.shared  # type: ignore[assignment]
    with notebook.ydoc.transaction():
        source = notebook.ycells[0]["source"]
        source += "abcdefghij"[number % 10]
        notebook.ystate["pasted"] = f"{number}:{PASTE}"


def cursor_frame(client: RoomClient, number: int) -> bytes:
    state = json.dumps({"user": {"name": f"student {number}"}, "cell": number % CELLS})
    entry = AwarenessEntry(client.shared.ydoc.client_id, 1, state)
    return protocol.awareness_frame(protocol.encode_awareness([entry]))


def cursors_seen(client: RoomClient) -> set[int]:
    """The awareness client ids whose state this client has heard, from every frame so far."""
    seen: set[int] = set()
    while not client.channel.others.empty():
        frame = client.channel.others.get_nowait()
        if frame[0] == MessageType.AWARENESS:
            message = protocol.decode_frame(frame)
            assert isinstance(message, protocol.AwarenessUpdate)
            seen |= {entry.client_id for entry in message.entries if not entry.gone}
    return seen


async def attend(
    server: RunningServer,
    name: str,
    session: str,
    seated: asyncio.Queue[RoomClient],
    over: asyncio.Event,
) -> None:
    """One client, in a task of its own (a provider leaves in the task it came in), until the
    class is over."""
    async with room_client(server, name, session) as client:
        await seated.put(client)
        await over.wait()


def typed_so_far(client: RoomClient) -> tuple[str, object]:
    """The cell typed into and the last paste: cheap enough to look at often, for a hundred."""
    notebook: YNotebook = client.shared  # type: ignore[assignment]
    return str(notebook.ycells[0]["source"]), notebook.ystate.get("pasted")


async def all_have(readers: list[RoomClient], writer: RoomClient, what: str) -> None:
    typed = typed_so_far(writer)
    await eventually(lambda: all(typed_so_far(reader) == typed for reader in readers), what)


async def classroom(server: RunningServer) -> None:
    write(server.root / "class.ipynb", notebook_bytes(*(f"cell {n}" for n in range(CELLS))))
    with server.client() as api:
        name, session = open_session(api, "class.ipynb")
    closing = f"room {name}: closing a client "
    seated: asyncio.Queue[RoomClient] = asyncio.Queue()
    over = asyncio.Event()
    attending = [
        asyncio.create_task(attend(server, name, session, seated, over)) for _ in range(CLIENTS)
    ]
    try:
        clients = [await seated.get() for _ in range(CLIENTS)]
        assert server.log.read_text().count(f"room {name}: opened") == 1
        async with raw_room_socket(server, name, session) as stalled:
            for number, client in enumerate(clients):
                await client.send_raw(cursor_frame(client, number))
            writer, readers = clients[0], clients[1:]
            keystrokes = 0
            while closing not in server.log.read_text():
                assert keystrokes < MAX_KEYSTROKES, "the silent client was never closed"
                for _ in range(BURST):
                    type_one(writer, keystrokes)
                    keystrokes += 1
                    await asyncio.sleep(0)
                await all_have(readers, writer, "the class to keep up")
            assert await stalled.close_code() == 1008
        type_one(writer, keystrokes)
        await all_have(readers, writer, "the last keystroke")
        typed = sources(writer)
        assert all(sources(reader) == typed for reader in readers)
        await eventually(
            lambda: sources_on_disk(server.root / "class.ipynb") == typed, "the autosave"
        )
        everyone = {client.shared.ydoc.client_id for client in clients}
        for client in clients:
            assert client.connection.close_code is None
            assert everyone <= cursors_seen(client)
    finally:
        over.set()
        await asyncio.gather(*attending)


@pytest.mark.timeout(SLOW_MACHINE_TIMEOUT)
def test_a_class_of_a_hundred_sees_every_keystroke_and_a_silent_client_is_closed(
    tmp_path: Path,
) -> None:
    toml = f"[serve]\nclient_queue_messages = {QUEUE_MESSAGES}\nping_interval = 0\n".encode()
    with server_with(tmp_path, toml) as server:
        asyncio.run(classroom(server))
