"""jupyter-collaboration's server-side surface over Ganymede's rooms, used as its consumers use
it: jupyterlab-chat's and jupyter-ai's router's real server extensions load beside Ganymede's in
a server running in the test's event loop, and the calls jupyter-ai's tools make are made here,
while room clients are connected over real websockets."""

from __future__ import annotations

import urllib.parse
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_ydoc import YUnicode
from jupyterlab_chat.models import NewMessage, User
from jupyterlab_chat.ychat import YChat
from pycrdt import Awareness, Doc, create_awareness_message

from ganymede.serve.compat import (
    AWARENESS_EVENTS,
    DISABLED_EXTENSIONS,
    GLOBAL_AWARENESS,
    ROOM_INITIALIZED,
    SESSION_EVENTS,
    with_lab_extensions_kept_out,
)
from ganymede.serve.rooms.protocol import AwarenessUpdate, MessageType, decode_frame
from tests.serve.rooms.client import eventually, room_client
from tests.serve.rooms.conftest import chat_client, write
from tests.serve.test_core_rooms import InProcessServer

QUICK = "[serve]\nsave_delay = 0.1\n"


@pytest.fixture
async def server(tmp_path: Path, isolated_jupyter: Path) -> AsyncIterator[InProcessServer]:
    root = tmp_path / "root"
    root.mkdir()
    (root / "ganymede.toml").write_text(QUICK)
    grace = "--GanymedeExtension.room_grace_period=0.1"
    extensions = ("jupyterlab_chat", "jupyter_ai_router")
    running = InProcessServer(root, extensions=extensions, argv=(grace,))
    try:
        yield running
    finally:
        await running.app._cleanup()


def settings(server: InProcessServer) -> dict[str, Any]:
    return server.app.web_app.settings  # type: ignore[no-any-return]


async def open_chat(server: InProcessServer, path: str) -> tuple[str, str]:
    segment = urllib.parse.quote(path, safe="")
    async with server.client() as api:
        answer = await api.put(
            f"api/collaboration/session/{segment}", json={"format": "text", "type": "chat"}
        )
    assert answer.status_code in (200, 201), answer.text
    reply = answer.json()
    return f"text:chat:{reply['fileId']}", reply["sessionId"]


def recorder(server: InProcessServer, schema_id: str) -> list[dict[str, Any]]:
    """The events emitted on ``schema_id`` from now on, as a listener receives them."""
    seen: list[dict[str, Any]] = []

    async def listen(logger: object, schema_id: str, data: dict[str, Any]) -> None:
        seen.append(data)

    server.app.event_logger.add_listener(schema_id=schema_id, listener=listen)
    return seen


def test_jupyterlab_chat_finds_a_collaboration_provider(server: InProcessServer) -> None:
    info = settings(server)["page_config_data"]["serverSessionRtcInfo"]
    assert info["enabled"] is True
    assert info["provider"] == "jupyter_server_ydoc"


async def test_a_chat_room_reaches_jupyterlab_chat_and_a_server_side_writer_reaches_clients(
    server: InProcessServer,
) -> None:
    path = write(server.root / "team.chat", b"")
    sessions = recorder(server, SESSION_EVENTS)
    name, session = await open_chat(server, "team.chat")
    async with chat_client(server.running, name, session) as (client, chat):
        await eventually(lambda: sessions, "the room's initialize event")
        assert sessions[0] == {
            "level": "INFO",
            "room": name,
            "path": "team.chat",
            "action": "initialize",
            "msg": ROOM_INITIALIZED,
        }
        # jupyterlab-chat's manager resolved the chat through get_document(copy=False).
        chats = settings(server)["chats_by_id"]
        await eventually(lambda: chats, "jupyterlab-chat's manager to hold the chat")
        (model,) = chats.values()
        api = settings(server)["jupyter_server_ydoc"]
        assert model is await api.get_document(room_id=name, copy=False)
        assert model.get_path() == "team.chat"

        # What a persona does: write a message and show it is writing, on the server.
        model.set_user(User(username="bot", name="Bot", bot=True))
        model.add_message(NewMessage(body="written on the server", sender="bot"))
        await eventually(
            lambda: [m.body for m in chat.get_messages()] == ["written on the server"],
            "the client sees the server's message",
        )
        model.broadcast_writing_status(User(username="bot", name="Bot"), {"messageID": "m"})
        while True:
            frame = decode_frame(await client.next_frame(MessageType.AWARENESS))
            assert isinstance(frame, AwarenessUpdate)
            if any('"writers"' in entry.state for entry in frame.entries):
                break
        await eventually(lambda: "written on the server" in path.read_text(), "the file")
        copied = await api.get_document(room_id=name, copy=True)
        assert isinstance(copied, YChat) and copied is not model
        assert [m.body for m in copied.get_messages()] == ["written on the server"]
    await eventually(lambda: sessions[-1]["action"] == "clean", "the room's clean event")
    assert not settings(server)["yroom_manager"].has_room(name)


async def test_rooms_documents_awareness_and_file_ids_as_jupyter_ai_finds_them(
    server: InProcessServer,
) -> None:
    path = write(server.root / "ai" / "notes.chat", b"")
    joins = recorder(server, AWARENESS_EVENTS)
    name, session = await open_chat(server, "ai/notes.chat")
    file_id = name.rsplit(":", 1)[1]
    file_ids = settings(server)["file_id_manager"]
    assert file_ids.get_id(str(path)) == file_ids.get_id("ai/notes.chat") == file_id
    assert file_ids.get_path(file_id) == "ai/notes.chat"
    assert file_ids.get_id(str(server.root.parent / "elsewhere.chat")) is None
    websockets = settings(server)["jupyter_server_ydoc"].ywebsocket_server
    assert not websockets.room_exists(name)
    async with chat_client(server.running, name, session) as (client, _):
        await eventually(lambda: joins, "the join event")
        assert joins[0]["roomid"] == name and joins[0]["action"] == "join"
        room = await websockets.get_room(name)
        assert isinstance(room._document, YChat)
        # A client's presence shows in the room's awareness on the server.
        presence = Awareness(Doc())
        presence.set_local_state({"user": {"name": "Ada"}})
        update = presence.encode_awareness_update([presence.client_id])
        await client.send_raw(create_awareness_message(update))
        await eventually(
            lambda: {"user": {"name": "Ada"}} in room.awareness.states.values(),
            "the client's presence on the server",
        )
        managed = settings(server)["yroom_manager"].get_room(name)
        assert managed is room
        assert await managed.get_jupyter_ydoc() is room._document
        assert managed.get_awareness() is room.awareness
        stopped: list[bool] = []
        managed.add_stop_callback(lambda: stopped.append(True))
    await eventually(lambda: stopped, "the room's stop callback")
    assert [event["action"] for event in joins] == ["join", "leave"]


async def test_jupyter_ais_router_connects_a_chat_room_and_routes_a_persons_message(
    server: InProcessServer,
) -> None:
    write(server.root / "ask.chat", b"")
    router = settings(server)["jupyter-ai"]["router"]
    name, session = await open_chat(server, "ask.chat")
    async with chat_client(server.running, name, session) as (_, chat):
        await eventually(lambda: router.active_chats, "the router to connect the chat")
        (chat_id,) = router.active_chats
        heard: list[str] = []
        router.observe_chat_msg(chat_id, lambda _, message: heard.append(message.body))
        # The Python YChat marks the document dirty as it is made; the room's save clears it,
        # and a chat reports no messages while dirty (it is still loading, to it).
        await eventually(lambda: chat.dirty is False, "the room to save the chat")
        chat.set_user(User(username="ada", name="Ada"))
        chat.add_message(NewMessage(body="a question for the router", sender="ada"))
        await eventually(lambda: heard == ["a question for the router"], "the router routes it")


async def test_a_presence_set_on_the_server_reaches_the_global_awareness_room(
    server: InProcessServer,
) -> None:
    async with room_client(server.running, GLOBAL_AWARENESS, "", YUnicode()) as client:
        websockets = settings(server)["jupyter_server_ydoc"].ywebsocket_server
        await eventually(lambda: websockets.room_exists(GLOBAL_AWARENESS), "the room")
        room = await websockets.get_room(GLOBAL_AWARENESS)
        room.awareness.set_local_state({"user": {"name": "Jupyternaut"}, "current": "a.ipynb"})
        while True:
            frame = decode_frame(await client.next_frame(MessageType.AWARENESS))
            assert isinstance(frame, AwarenessUpdate)
            if any("Jupyternaut" in entry.state for entry in frame.entries):
                break


SERVER_DOCUMENTS = "@jupyter-ai-contrib/server-documents"
ITS_REPLACEMENTS = [
    "@jupyter/docprovider-extension:websocket-provider-document-factory",
    "@jupyter/docprovider-extension:forkManager",
]


def test_jupyter_server_documents_frontend_is_kept_out_and_what_it_disabled_comes_back() -> None:
    installed = {
        SERVER_DOCUMENTS: {DISABLED_EXTENSIONS: ITS_REPLACEMENTS},
        "@jupyter/docprovider-extension": {},
        # Another active extension disabling the same plugin keeps it disabled.
        "other": {DISABLED_EXTENSIONS: [ITS_REPLACEMENTS[1]]},
    }
    page = {DISABLED_EXTENSIONS: ["mine:plugin", *ITS_REPLACEMENTS], "appName": "JupyterLab"}
    kept_out = with_lab_extensions_kept_out(page, installed)
    assert kept_out == {
        DISABLED_EXTENSIONS: ["mine:plugin", ITS_REPLACEMENTS[1], SERVER_DOCUMENTS],
        "appName": "JupyterLab",
    }
    assert page[DISABLED_EXTENSIONS] == ["mine:plugin", *ITS_REPLACEMENTS]  # not changed in place


def test_a_page_config_without_jupyter_server_documents_is_left_alone() -> None:
    page = {DISABLED_EXTENSIONS: ITS_REPLACEMENTS}
    assert with_lab_extensions_kept_out(page, {"other": {}}) is page
