"""Rooms on documents of registered types, on a real server with real clients: a chat through
jupyterlab-chat's own YChat API, a CAD model through JupyterCAD's class, a map through
JupyterGIS's."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from jupyter_ydoc.ybasedoc import YBaseDoc
from jupytercad_core.jcad_ydoc import YJCad
from jupyterlab_chat.models import NewMessage, User
from jupyterlab_chat.ychat import YChat

from tests.serve.conftest import RunningServer, jupyter_env, start_server
from tests.serve.plain_server import apart_env, install_apart
from tests.serve.rooms.client import eventually, open_socket, room_client
from tests.serve.rooms.conftest import chat_client, open_session, put_session, write
from tests.serve.websocket import closed_with

pytestmark = pytest.mark.slow

QUICK_SAVES = "[serve]\nsave_delay = 0.1\n"


def bodies(chat: YChat) -> list[str]:
    return [message.body for message in chat.get_messages()]


def bodies_on_disk(path: Path) -> list[str]:
    text = path.read_text()
    return [message["body"] for message in json.loads(text)["messages"]] if text else []


def start(home: Path, token: str, port: int = 0) -> RunningServer:
    root = home / "root"
    write(root / "ganymede.toml", QUICK_SAVES.encode())
    return start_server(root, jupyter_env(home / "jupyter"), "--token", token, "--port", str(port))


async def test_a_chat_lives_in_a_room_is_saved_survives_a_restart_and_takes_in_the_file(
    tmp_path: Path,
) -> None:
    server = start(tmp_path, "chat-token")
    path = write(server.root / "team.chat", b"")
    try:
        found = "Registered jupyterlab_chat server extension (RTC provider: jupyter_server_ydoc)"
        assert found in server.log.read_text()
        with server.client() as api:
            name, session = open_session(api, "team.chat", "text:chat")
        assert name.startswith("text:chat:")
        async with (
            chat_client(server, name, session) as (_, ada_chat),
            chat_client(server, name, session) as (_, bob_chat),
        ):
            ada_chat.set_user(User(username="ada", name="Ada"))
            ada_chat.add_message(NewMessage(body="hello from the room", sender="ada"))
            await eventually(lambda: bodies(bob_chat) == ["hello from the room"], "bob sees it")
            await eventually(
                lambda: bodies_on_disk(path) == ["hello from the room"], "the file holds it"
            )
        server.process.send_signal(signal.SIGTERM)
        server.wait_stopped()
        assert server.process.stdout is not None
        server.process.stdout.close()
        server = start(tmp_path, "chat-token")
        with server.client() as api:
            name, session = open_session(api, "team.chat", "text:chat")
        async with chat_client(server, name, session) as (_, chat):
            assert bodies(chat) == ["hello from the room"]
            content = json.loads(path.read_text())
            appended = {
                "body": "appended by another program",
                "id": "outside-1",
                "time": content["messages"][0]["time"] + 1,
                "sender": "ada",
                "raw_time": False,
            }
            content["messages"].append(appended)
            path.write_text(json.dumps(content, indent=2))
            expected = ["hello from the room", "appended by another program"]
            await eventually(lambda: bodies(chat) == expected, "the room takes the file in")
            assert [m.id for m in chat.get_messages()].count("outside-1") == 1
            assert bodies_on_disk(path) == expected
    finally:
        if server.process.poll() is None:
            server.interrupt()
        assert server.process.stdout is not None
        server.process.stdout.close()


def jcad(*names: str) -> bytes:
    objects = [
        {"name": n, "visible": True, "shape": "Part::Box", "parameters": {"Length": 1}}
        for n in names
    ]
    content = {"schemaVersion": "3.0.0", "objects": objects, "options": {}, "metadata": {}}
    return json.dumps(content | {"outputs": {}}, indent=2).encode()


async def test_a_cad_model_opens_in_a_room_and_shows_another_programs_change(
    server: RunningServer, api: httpx.Client
) -> None:
    path = write(server.root / "cad" / "part.jcad", jcad("base", "lid"))
    name, session = open_session(api, "cad/part.jcad", "text:jcad")
    async with room_client(server, name, session, YJCad()) as client:
        model: YJCad = client.shared  # type: ignore[assignment]
        assert [o["name"] for o in json.loads(model.get())["objects"]] == ["base", "lid"]
        path.write_bytes(jcad("base", "lid", "handle"))
        await eventually(
            lambda: (
                [o["name"] for o in json.loads(model.get())["objects"]] == ["base", "lid", "handle"]
            ),
            "the room takes the file in",
        )


async def test_a_chat_written_by_another_program_opens_with_its_messages_as_they_are(
    server: RunningServer, api: httpx.Client
) -> None:
    """Messages without jupyterlab-chat's ``raw_time`` flag (another program wrote them) are
    read as they are: YChat stamps and reorders messages added to a clean chat, which a room
    marking itself clean while it reads the file would have had it do to all of them."""
    messages = [
        {
            "body": f"note {n}",
            "id": f"note-{n}",
            "time": 1_000.0 + n,
            "sender": "ada",
            "type": "msg",
        }
        for n in range(6)
    ]
    content = {"messages": messages, "users": {}, "attachments": {}, "metadata": {}}
    path = write(server.root / "notes.chat", json.dumps(content).encode())
    name, session = open_session(api, "notes.chat", "text:chat")
    async with chat_client(server, name, session) as (_, chat):
        await eventually(lambda: len(chat.get_messages()) == 6, "the chat to sync")
        assert [(m.body, m.time) for m in chat.get_messages()] == [
            (f"note {n}", 1_000.0 + n) for n in range(6)
        ]
    assert json.loads(path.read_text())["messages"] == messages  # nothing rewrote the file


def test_a_type_nothing_registered_is_400_naming_it(
    server: RunningServer, api: httpx.Client
) -> None:
    write(server.root / "odd" / "thing.xyz", b"{}")
    answer = put_session(api, "odd/thing.xyz", {"format": "text", "type": "xyzzy"})
    assert answer.status_code == 400
    assert "'xyzzy'" in answer.json()["message"]


async def test_a_missing_chat_is_named_as_jupyter_collaboration_names_it(
    server: RunningServer, api: httpx.Client
) -> None:
    answer = put_session(api, "later/new.chat", {"format": "text", "type": "chat"})
    assert answer.status_code == 201, answer.text
    reply = answer.json()
    assert (reply["format"], reply["type"]) == ("text", "chat")
    room = f"text:chat:{reply['fileId']}"
    assert await closed_with(await open_socket(server, room, reply["sessionId"])) == (
        4404,
        "file not found",
    )
    write(server.root / "later" / "new.chat", b"")
    async with chat_client(server, room, reply["sessionId"]) as (_, chat):
        assert chat.get_messages() == []


@pytest.fixture(scope="module")
def jupytergis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, type[YBaseDoc]]]:
    """JupyterGIS's document type from PyPI, apart from this environment and without its
    dependencies (it still asks for jupyter-ydoc 3, whose successor Ganymede's rooms use, and
    its class works with it): where it is installed, and its class for this test's client."""
    target = install_apart(tmp_path_factory.mktemp("jupytergis"), "jupytergis-core")
    sys.path.insert(0, str(target))
    try:
        from jupytergis_core.jgis_ydoc import YJGIS

        yield target, YJGIS
    finally:
        sys.path.remove(str(target))


def jgis(*layers: str) -> bytes:
    content = {
        "layers": {
            name: {"name": name, "type": "RasterLayer", "visible": True, "parameters": {}}
            for name in layers
        },
        "layerTree": list(layers),
        "sources": {},
        "options": {},
        "metadata": {},
    }
    return json.dumps(content, indent=2).encode()


def layer_names(document: YBaseDoc) -> list[str]:
    return list(json.loads(document.get())["layerTree"])


async def test_a_gis_map_opens_in_a_room_takes_in_another_programs_change_and_saves_an_edit(
    tmp_path: Path, jupytergis: tuple[Path, type[YBaseDoc]]
) -> None:
    installed, document_class = jupytergis
    root = tmp_path / "root"
    path = write(root / "maps" / "city.jgis", jgis("streets", "parks"))
    env = apart_env(jupyter_env(tmp_path / "jupyter"), installed)
    server = start_server(root, env, "--token", "gis-token")
    try:
        with server.client() as api:
            name, session = open_session(api, "maps/city.jgis", "text:jgis")
        async with room_client(server, name, session, document_class()) as client:
            assert layer_names(client.shared) == ["streets", "parks"]
            path.write_bytes(jgis("streets", "parks", "rivers"))
            await eventually(
                lambda: layer_names(client.shared) == ["streets", "parks", "rivers"],
                "the room takes the file in",
            )
            client.shared.set(jgis("streets", "rivers").decode())  # a client's edit
            await eventually(
                lambda: json.loads(path.read_text())["layerTree"] == ["streets", "rivers"],
                "the room saves the edit through the class's get()",
            )
    finally:
        server.interrupt()
        assert server.process.stdout is not None
        server.process.stdout.close()
    assert "Traceback" not in server.log.read_text()
