"""Rooms on a real server, with real collaboration clients over real websockets."""

from __future__ import annotations

import json
from typing import Any

import httpx
import nbformat
import pytest
from jupyter_ydoc import YUnicode
from pycrdt import Awareness, Doc, create_awareness_message
from tornado.httpclient import HTTPClientError

from ganymede.serve.rooms import protocol
from ganymede.serve.rooms.protocol import MessageType
from tests.serve.conftest import RunningServer
from tests.serve.rooms.client import RoomClient, eventually, open_socket, room_client
from tests.serve.rooms.conftest import (
    edit_first_cell,
    notebook_bytes,
    open_session,
    sources,
    sources_on_disk,
    write,
)
from tests.serve.websocket import closed_with, hang_up

NEW_CELL = {
    "cell_type": "code",
    "id": "added-by-ada",
    "source": "b = 2",
    "metadata": {},
    "outputs": [],
    "execution_count": None,
}


def contents_hash(api: httpx.Client, path: str) -> str:
    model = api.get(f"api/contents/{path}", params={"content": 0, "hash": 1}).json()
    return str(model["hash"])


async def save(client: RoomClient, save_id: int) -> dict[str, Any]:
    await client.send_raw(protocol.save_request(save_id))
    return protocol.decode_raw_json(await client.next_frame(MessageType.RAW))


async def test_two_clients_edit_one_notebook_and_the_file_follows(
    server: RunningServer, api: httpx.Client
) -> None:
    path = write(server.root / "rooms" / "two.ipynb", notebook_bytes("a = 1"))
    name, session = open_session(api, "rooms/two.ipynb")
    async with room_client(server, name, session) as ada, room_client(server, name, session) as bob:
        assert sources(ada) == sources(bob) == ["a = 1"]
        assert bob.shared.ystate["path"] == "rooms/two.ipynb"
        assert bob.shared.ystate["hash"] == contents_hash(api, "rooms/two.ipynb")

        ada.shared.append_cell(NEW_CELL)  # type: ignore[attr-defined]
        edit_first_cell(ada, "\nprint(a)")
        expected = ["a = 1\nprint(a)", "b = 2"]
        await eventually(lambda: sources(bob) == expected, "bob to see ada's edits")
        await eventually(lambda: sources_on_disk(path) == expected, "the autosave")
        await eventually(lambda: bob.shared.ystate["dirty"] is False, "the room to mark it saved")
        assert bob.shared.ystate["hash"] == contents_hash(api, "rooms/two.ipynb")
        await eventually(lambda: ada.shared.ystate["hash"] == bob.shared.ystate["hash"], "ada")
        assert nbformat.reads(path.read_text(), as_version=4).cells[1]["id"] == "added-by-ada"


async def test_an_explicit_save_writes_at_once_and_answers_success(
    server: RunningServer, api: httpx.Client
) -> None:
    path = write(server.root / "rooms" / "save.ipynb", notebook_bytes("x"))
    name, session = open_session(api, "rooms/save.ipynb")
    async with room_client(server, name, session) as ada, room_client(server, name, session) as bob:
        edit_first_cell(ada, " = 3")
        # The provider sends edits from a task of its own: bob seeing one means the room has it.
        await eventually(lambda: sources(bob) == ["x = 3"], "the edit to reach the room")
        answer = await save(ada, 41)
        assert answer == {"type": "save", "responseTo": 41, "status": "success"}
        assert sources_on_disk(path) == ["x = 3"]
        await eventually(lambda: ada.shared.ystate["dirty"] is False, "the room to mark it saved")
        assert ada.shared.ystate["hash"] == contents_hash(api, "rooms/save.ipynb")


async def test_a_save_with_nothing_changed_leaves_the_file_alone(
    server: RunningServer, api: httpx.Client
) -> None:
    original = notebook_bytes("untouched")
    path = write(server.root / "rooms" / "same.ipynb", original)
    name, session = open_session(api, "rooms/same.ipynb")
    async with room_client(server, name, session) as ada, room_client(server, name, session) as bob:
        with ada.shared.ydoc.transaction():  # what JupyterLab writes on open and on each edit
            ada.shared.ystate["document_id"] = name
            ada.shared.ystate["dirty"] = True
        await eventually(lambda: bob.shared.ystate.get("document_id") == name, "the room")
        answer = await save(ada, 1)
        assert answer["status"] == "success"  # "skipped" reads as "a save is in progress"
        assert path.read_bytes() == original
        await eventually(lambda: ada.shared.ystate["dirty"] is False, "the room to mark it clean")


async def test_awareness_is_echoed_to_its_sender_relayed_shown_to_newcomers_and_retired(
    server: RunningServer, api: httpx.Client
) -> None:
    write(server.root / "rooms" / "presence.ipynb", notebook_bytes())
    name, session = open_session(api, "rooms/presence.ipynb")
    async with room_client(server, name, session) as bob:
        async with room_client(server, name, session) as ada:
            awareness = Awareness(ada.shared.ydoc)
            awareness.set_local_state({"user": {"name": "Ada"}})
            frame = create_awareness_message(
                awareness.encode_awareness_update([awareness.client_id])
            )
            await ada.send_raw(frame)
            assert await ada.next_frame(MessageType.AWARENESS) == frame
            assert await bob.next_frame(MessageType.AWARENESS) == frame
            async with room_client(server, name, session) as carl:
                shown = protocol.decode_frame(await carl.next_frame(MessageType.AWARENESS))
                assert isinstance(shown, protocol.AwarenessUpdate)
                assert [json.loads(e.state) for e in shown.entries] == [{"user": {"name": "Ada"}}]
        left = protocol.decode_frame(await bob.next_frame(MessageType.AWARENESS))
        assert isinstance(left, protocol.AwarenessUpdate)
        assert [(e.client_id, e.gone) for e in left.entries] == [(awareness.client_id, True)]


async def test_the_global_awareness_room_relays_presence_only(server: RunningServer) -> None:
    socket = await open_socket(server, "JupyterLab:globalAwareness", None)
    try:
        frame = protocol.awareness_frame(
            protocol.encode_awareness([protocol.AwarenessEntry(7, 0, '{"current":null}')])
        )
        await socket.write_message(frame, binary=True)
        assert await socket.read_message() == frame
        await socket.write_message(protocol.save_request(5), binary=True)
        answer = protocol.decode_raw_json(await socket.read_message())
        assert answer == {"type": "save", "responseTo": 5, "status": "skipped"}
        await socket.write_message(protocol.sync_step1(Doc().get_state()), binary=True)
        assert await socket.read_message() == protocol.sync_step2(b"\x00\x00")
    finally:
        await hang_up(socket)


async def test_a_text_file_room(server: RunningServer, api: httpx.Client) -> None:
    path = write(server.root / "rooms" / "script.py", "print('é')\n".encode())
    name, session = open_session(api, "rooms/script.py", "text:file")
    assert name.startswith("text:file:")
    async with room_client(server, name, session) as ada, room_client(server, name, session) as bob:
        text: YUnicode = ada.shared  # type: ignore[assignment]
        assert str(bob.shared.get()) == "print('é')\n"
        with text.ydoc.transaction():
            text._ysource += "x = 1\n"
            text.ystate["dirty"] = True
        await eventually(lambda: bob.shared.get() == "print('é')\nx = 1\n", "bob to see it")
        await eventually(lambda: path.read_text() == "print('é')\nx = 1\n", "the autosave")
        await eventually(lambda: bob.shared.ystate["dirty"] is False, "the room to mark it saved")
        assert bob.shared.ystate["hash"] == contents_hash(api, "rooms/script.py")


async def test_an_unknown_session_is_closed_1003_with_a_json_reason(
    server: RunningServer, api: httpx.Client
) -> None:
    write(server.root / "rooms" / "stale.ipynb", notebook_bytes())
    name, _ = open_session(api, "rooms/stale.ipynb")
    socket = await open_socket(server, name, "from-a-server-long-gone")
    code, reason = await closed_with(socket)
    assert code == 1003
    assert json.loads(reason or "") == {
        "reason": "unknown_session",
        "sessionId": "from-a-server-long-gone",
        "reloadable": True,
    }


async def test_a_room_needs_the_token(server: RunningServer, api: httpx.Client) -> None:
    name, session = open_session(api, write_notebook(server, "rooms/guarded.ipynb"))
    with pytest.raises(HTTPClientError) as refused:
        await open_socket(server, name, session, authenticated=False)
    assert refused.value.code == 403


async def test_an_unknown_file_id_is_closed_4404(server: RunningServer, api: httpx.Client) -> None:
    _, session = open_session(api, write_notebook(server, "rooms/known.ipynb"))
    socket = await open_socket(server, "json:notebook:no-such-id", session)
    assert (await closed_with(socket))[0] == 4404


async def test_a_file_the_room_cannot_read_is_closed_4400(
    server: RunningServer, api: httpx.Client
) -> None:
    write(server.root / "rooms" / "broken.ipynb", b'{"cells": [')
    name, session = open_session(api, "rooms/broken.ipynb")
    assert (await closed_with(await open_socket(server, name, session)))[0] == 4400
    file_id = name.rsplit(":", 1)[1]
    odd_kind = await open_socket(server, f"base64:file:{file_id}", session)
    assert (await closed_with(odd_kind))[0] == 4400
    write(server.root / "rooms" / "latin1.txt", "café".encode("latin-1"))
    name, session = open_session(api, "rooms/latin1.txt", "text:file")
    assert (await closed_with(await open_socket(server, name, session)))[0] == 4400


async def test_a_bad_frame_closes_only_its_own_connection(
    server: RunningServer, api: httpx.Client
) -> None:
    write(server.root / "rooms" / "garbage.ipynb", notebook_bytes("g"))
    name, session = open_session(api, "rooms/garbage.ipynb")
    async with room_client(server, name, session) as ada, room_client(server, name, session) as bob:
        hello = protocol.sync_step1(Doc().get_state())
        for frames, code in [
            ([hello, b"\x00\x02\xff\xff"], 1007),  # an update running past the frame's end
            ([hello, b"\x00\x02\x03abc"], 1007),  # an update that is not a Yjs update
            ([protocol.sync_update(Doc().get_update())], 1007),  # an update before SyncStep1
            ([b"\x63"], 1003),  # no such message type
            (["text"], 1003),  # text frames are not part of the protocol
        ]:
            intruder = await open_socket(server, name, session)
            for frame in frames:
                await intruder.write_message(frame, binary=isinstance(frame, bytes))
            assert (await closed_with(intruder))[0] == code
        edit_first_cell(ada, "ood")
        await eventually(lambda: sources(bob) == ["good"], "the room to carry on")


async def test_autosave_takes_in_what_another_program_wrote_before_saving(
    server: RunningServer, api: httpx.Client
) -> None:
    path = write(server.root / "rooms" / "theirs.ipynb", notebook_bytes("ours", "theirs"))
    name, session = open_session(api, "rooms/theirs.ipynb")
    async with room_client(server, name, session) as ada:
        theirs = nbformat.reads(path.read_text(), as_version=4)
        theirs.cells[1].source = "written by another program"
        path.write_text(nbformat.writes(theirs))
        edit_first_cell(ada, " and an edit")
        both = ["ours and an edit", "written by another program"]
        await eventually(lambda: sources_on_disk(path) == both, "the merge to be saved")
        await eventually(lambda: sources(ada) == both, "the room to take the file's change")
        await eventually(lambda: ada.shared.ystate["dirty"] is False, "the room to be clean")
        assert ada.shared.ystate["hash"] == contents_hash(api, "rooms/theirs.ipynb")


def write_notebook(server: RunningServer, path: str) -> str:
    write(server.root / path, notebook_bytes())
    return path
