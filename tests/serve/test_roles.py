"""Roles through jupyter_server's Authorizer, in a real server configured with a custom one.

``tests.serve.roles`` names the users: a reader (read contents), an editor (read and write
contents, no runs), a runner (all three) and nobody (nothing); the server's own token may do
everything. A reader gets a live, read-only room connection; nobody is refused before the
websocket upgrade; runs need ``execute`` on kernels; grants are their own resource.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import sys
import tempfile
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from jupyter_ydoc import YUnicode
from tornado.httpclient import HTTPClientError
from tornado.web import RequestHandler
from tornado.websocket import websocket_connect

from ganymede.serve.handlers import default_handlers
from ganymede.serve.rooms import protocol
from ganymede.serve.rooms.protocol import MessageType
from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server
from tests.serve.execution.conftest import execute, hashed, notebook_with
from tests.serve.roles import SERVER_OPTIONS, token_of
from tests.serve.rooms.client import RoomClient, eventually, open_socket, room_client
from tests.serve.rooms.conftest import (
    edit_first_cell,
    notebook_bytes,
    open_session,
    sources,
    sources_on_disk,
    write,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A server whose users and roles come from ``tests.serve.roles``."""
    home = tmp_path_factory.mktemp("roles")
    root = home / "root"
    root.mkdir()
    env = jupyter_env(home / "jupyter", PYTHONPATH=str(REPO))
    running = start_server(root, env, *SERVER_OPTIONS)
    yield running
    stop_server(running)


def as_user(server: RunningServer, name: str) -> RunningServer:
    """The same server, reached with ``name``'s token."""
    parts = urllib.parse.urlsplit(server.url)
    query = urllib.parse.urlencode({"token": token_of(name)})
    return dataclasses.replace(server, url=parts._replace(query=query).geturl())


async def save(client: RoomClient, save_id: int) -> dict[str, Any]:
    await client.send_raw(protocol.save_request(save_id))
    return protocol.decode_raw_json(await client.next_frame(MessageType.RAW))


async def test_a_reader_sees_edits_live_and_cannot_change_the_file(server: RunningServer) -> None:
    notebook = write(server.root / "shared.ipynb", notebook_bytes("a = 1", "b = 2"))
    reader = as_user(server, "reader")
    with reader.client() as reader_api:
        name, session = open_session(reader_api, "shared.ipynb")  # a PUT, but only reading
    async with (
        room_client(server, name, session) as owner,
        room_client(reader, name, session) as rd,
    ):
        edit_first_cell(owner, " # owner")
        await eventually(lambda: sources(rd)[0] == "a = 1 # owner", "the reader to see the edit")
        await eventually(lambda: sources_on_disk(notebook)[0] == "a = 1 # owner", "the autosave")

        edit_first_cell(rd, " # reader")
        assert sources(rd)[0] == "a = 1 # owner # reader"  # the reader's own view shows it first
        await eventually(lambda: sources(rd)[0] == "a = 1 # owner", "the reader's edit undone")
        await eventually(lambda: rd.shared.ystate["dirty"] is False, "the reader's tab clean")
        assert sources(owner) == ["a = 1 # owner", "b = 2"]  # the owner never sees it
        assert await save(rd, 3) == {"type": "save", "responseTo": 3, "status": "failed"}

        edit_first_cell(owner, " again")  # the room still saves the owner's edits
        await eventually(lambda: sources(rd)[0] == "a = 1 # owner again", "the reader to see it")
        await eventually(
            lambda: sources_on_disk(notebook) == ["a = 1 # owner again", "b = 2"], "the autosave"
        )


def test_the_contents_api_shows_a_reader_the_file_read_only(server: RunningServer) -> None:
    """As jupyter_server shows a file the server may not write."""
    write(server.root / "shown.ipynb", notebook_bytes("a = 1"))
    for name, writable in (("reader", False), ("editor", True)):
        with as_user(server, name).client() as api:
            model = api.get("api/contents/shown.ipynb", params={"content": 0})
            assert model.status_code == 200, model.text
            assert model.json()["writable"] is writable, name
    with server.client() as api:
        assert api.get("api/contents/shown.ipynb", params={"content": 0}).json()["writable"]


async def test_a_cell_a_reader_deletes_comes_back_as_it_was(server: RunningServer) -> None:
    notebook = write(server.root / "kept.ipynb", notebook_bytes("a = 1", "b = 2"))
    reader = as_user(server, "reader")
    with server.client() as api:
        name, session = open_session(api, "kept.ipynb")
    owner_client, reader_client = (
        room_client(server, name, session),
        room_client(reader, name, session),
    )
    async with owner_client as owner, reader_client as rd:
        ids = [cell["id"] for cell in owner.shared.ycells]  # type: ignore[attr-defined]
        del rd.shared.ycells[0]  # type: ignore[attr-defined]
        await eventually(lambda: sources(rd) == ["a = 1", "b = 2"], "the cell back")
        assert [cell["id"] for cell in rd.shared.ycells] == ids  # type: ignore[attr-defined]
        assert sources(owner) == ["a = 1", "b = 2"]
        assert [cell["id"] for cell in owner.shared.ycells] == ids  # type: ignore[attr-defined]
    assert sources_on_disk(notebook) == ["a = 1", "b = 2"]


async def test_a_readers_edit_of_a_text_file_is_undone(server: RunningServer) -> None:
    path = write(server.root / "notes.txt", b"one\n")
    with server.client() as api:
        name, session = open_session(api, "notes.txt", "text:file")
    reader = as_user(server, "reader")
    async with (
        room_client(server, name, session) as owner,
        room_client(reader, name, session) as rd,
    ):
        text: YUnicode = rd.shared  # type: ignore[assignment]
        with text.ydoc.transaction():
            text._ysource += "two\n"
            text.ystate["dirty"] = True
        await eventually(lambda: rd.shared.get() == "one\n", "the reader's edit undone")
        owner_text: YUnicode = owner.shared  # type: ignore[assignment]
        with owner_text.ydoc.transaction():
            owner_text._ysource += "three\n"
            owner_text.ystate["dirty"] = True
        await eventually(lambda: path.read_text() == "one\nthree\n", "the owner's autosave")
        await eventually(lambda: rd.shared.get() == "one\nthree\n", "the reader to see it")


async def test_a_reader_undone_in_a_dirty_room_leaves_the_owners_unsaved_mark(
    tmp_path: Path,
) -> None:
    """With autosave far off, the owner's edit stays unsaved: the reader's undone edit must not
    make the owner's tab look saved."""
    root = tmp_path / "root"
    write(root / "ganymede.toml", b"[serve]\nsave_delay = 60.0\n")
    notebook = write(root / "slow.ipynb", notebook_bytes("a = 1"))
    env = jupyter_env(tmp_path / "jupyter", PYTHONPATH=str(REPO))
    server = start_server(root, env, *SERVER_OPTIONS)
    try:
        reader = as_user(server, "reader")
        with server.client() as api:
            name, session = open_session(api, "slow.ipynb")
        async with room_client(server, name, session) as owner:
            async with room_client(reader, name, session) as rd:
                edit_first_cell(owner, " # unsaved")
                await eventually(lambda: sources(rd) == ["a = 1 # unsaved"], "the reader to see it")
                edit_first_cell(rd, " # reader")
                await eventually(lambda: sources(rd) == ["a = 1 # unsaved"], "the edit undone")
                assert owner.shared.ystate["dirty"] is True
                assert rd.shared.ystate["dirty"] is True
            assert await save(owner, 1) == {"type": "save", "responseTo": 1, "status": "success"}
        assert sources_on_disk(notebook) == ["a = 1 # unsaved"]
    finally:
        stop_server(server)


def file_modes_bind_this_process() -> bool:
    """False for a superuser (root with its usual capabilities), who may write any file."""
    with tempfile.NamedTemporaryFile() as probe:
        os.chmod(probe.name, 0o444)
        return not os.access(probe.name, os.W_OK)


@pytest.fixture
def bound_by_file_modes(tmp_path: Path) -> Iterator[RunningServer]:
    """A server that file modes bind: as root (CI runs so), one started without the capability
    to override them, as an unprivileged user's server is."""
    python = sys.executable
    if not file_modes_bind_this_process():
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("root, and no setpriv to start a server that file modes bind")
        python = str(tmp_path / "python-without-dac-override")
        Path(python).write_text(
            f'#!/bin/sh\nexec {setpriv} --bounding-set=-dac_override {sys.executable} "$@"\n'
        )
        os.chmod(python, 0o755)
    root = tmp_path / "root"
    root.mkdir()
    env = jupyter_env(tmp_path / "jupyter", PYTHONPATH=str(REPO))
    running = start_server(root, env, *SERVER_OPTIONS, python=python)
    yield running
    stop_server(running)


async def test_a_file_whose_mode_forbids_writing_gets_only_viewers(
    bound_by_file_modes: RunningServer,
) -> None:
    """jupyter-collaboration#324: there a read-only file takes edits and fails its save with a
    500. Here the room undoes them; and an atomic replace, which would swap the file whatever
    its mode, is never tried."""
    server = bound_by_file_modes
    notebook = write(server.root / "locked.ipynb", notebook_bytes("a = 1"))
    original = notebook.read_bytes()
    notebook.chmod(0o444)
    with server.client() as api:
        name, session = open_session(api, "locked.ipynb")
        assert (
            api.get("api/contents/locked.ipynb", params={"content": 0}).json()["writable"] is False
        )
    async with room_client(server, name, session) as owner:
        edit_first_cell(owner, " # edit")
        await eventually(lambda: sources(owner) == ["a = 1"], "the edit undone")
        assert await save(owner, 5) == {"type": "save", "responseTo": 5, "status": "failed"}
        with server.client() as api:  # an agent is refused too, saying why
            opened = api.post("api/agent/sessions", json={"agent": "locked-agent"})
            agent = opened.json()["session"]
            body = {"session": agent, "path": "locked.ipynb", "op": "add", "source": "b = 2"}
            refused = api.post("api/agent/cells", json=body)
            assert refused.status_code == 409, refused.text
            assert refused.json() == {
                "error": "read_only",
                "message": "locked.ipynb is read-only here: its file's mode forbids writing it",
            }
    assert notebook.read_bytes() == original


async def test_a_user_who_may_not_read_is_refused_before_the_upgrade(
    server: RunningServer,
) -> None:
    write(server.root / "private.ipynb", notebook_bytes("secret = 1"))
    with server.client() as api:
        name, session = open_session(api, "private.ipynb")
    with pytest.raises(HTTPClientError) as refused:
        await open_socket(as_user(server, "nobody"), name, session)
    assert refused.value.code == 403
    with as_user(server, "nobody").client() as nobody_api:
        segment = urllib.parse.quote("private.ipynb", safe="")
        answer = nobody_api.put(f"api/collaboration/session/{segment}", json={})
        assert answer.status_code == 403


def sample_url(pattern: str) -> str:
    """A path the URL pattern matches: each group filled with something it accepts."""
    samples = {
        r"(.+)": "json:notebook:0",
        r"([^/]+)": "json:notebook:0",
        r"([0-9a-f]+)": "0123abcd",
        r"(?P<kernel_id>\w+-\w+-\w+-\w+-\w+)": "00000000-0000-0000-0000-000000000000",
    }
    url = pattern
    for group, sample in samples.items():
        url = url.replace(group, sample)
    assert not re.search(r"[()\\]", url), f"no sample for a group of {pattern}"
    return url.lstrip("/")


ENDPOINTS = [
    (method, sample_url(pattern))
    for pattern, handler in default_handlers
    for method in ("get", "put", "post", "patch", "delete")
    # Every method the handler answers: not tornado's 405 (the room's GET is tornado's
    # websocket upgrade, its checks in ``prepare``).
    if getattr(handler, method) is not getattr(RequestHandler, method)
]


def test_the_endpoints_checked_below_are_every_ganymede_handlers_methods() -> None:
    """Read from the URL table itself, so a handler added later is checked too."""
    assert ("get", "api/collaboration/room/json:notebook:0") in ENDPOINTS
    assert ("post", "api/kernels/00000000-0000-0000-0000-000000000000/execute") in ENDPOINTS
    assert ("delete", "api/host/grants") in ENDPOINTS
    assert len(ENDPOINTS) >= 20


@pytest.mark.parametrize(("method", "url"), ENDPOINTS)
def test_nobody_is_refused_everywhere(server: RunningServer, method: str, url: str) -> None:
    with as_user(server, "nobody").client() as nobody_api:
        answer = nobody_api.request(method.upper(), url, json={})
    assert answer.status_code == 403, (method, url, answer.text)


@pytest.fixture
def kernel(server: RunningServer) -> Iterator[str]:
    with server.client() as api:
        answer = api.post("api/kernels", json={"name": "python3"})
        assert answer.status_code == 201, answer.text
        kernel_id = str(answer.json()["id"])
        yield kernel_id
        api.delete(f"api/kernels/{kernel_id}")


async def test_runs_need_execute_on_kernels(server: RunningServer, kernel: str) -> None:
    write(server.root / "run.ipynb", notebook_with(one="x = 40 + 2"))
    with server.client() as api:
        document, _ = open_session(api, "run.ipynb")
    cells = hashed(("one", "x = 40 + 2"))
    for name in ("reader", "editor"):
        user = as_user(server, name)
        async with httpx.AsyncClient(base_url=user.base, params={"token": user.token}) as client:
            refused = await execute(client, kernel, document, cells)
            assert refused.status_code == 403, (name, refused.text)
    # The kernel's own websocket asks the same (jupyter_server's check, with Ganymede's
    # connection class behind it).
    editor = as_user(server, "editor")
    channels = editor.base.replace("http", "ws", 1) + f"api/kernels/{kernel}/channels"
    with pytest.raises(HTTPClientError) as refused_socket:
        await websocket_connect(f"{channels}?token={editor.token}")
    assert refused_socket.value.code == 403
    runner = as_user(server, "runner")
    async with httpx.AsyncClient(
        base_url=runner.base, params={"token": runner.token}, timeout=60
    ) as client:
        ran = await execute(client, kernel, document, cells, wait=60)
    assert ran.status_code == 200, ran.text
    assert ran.json()["finished"] is True


def test_agents_run_only_with_execute_and_edit_only_with_write(server: RunningServer) -> None:
    write(server.root / "agent.ipynb", notebook_bytes("a = 1"))
    for name, may_edit in (("reader", False), ("editor", True)):
        with as_user(server, name).client() as api:
            opened = api.post("api/agent/sessions", json={"agent": f"{name}-agent"})
            assert opened.status_code == 201, opened.text
            session = opened.json()["session"]
            read = api.post("api/agent/read", json={"session": session, "path": "agent.ipynb"})
            assert read.status_code == 200, read.text
            added = api.post(
                "api/agent/cells",
                json={"session": session, "path": "agent.ipynb", "op": "add", "source": "b = 2"},
            )
            assert added.status_code == (200 if may_edit else 403), added.text
            run = api.post(
                "api/agent/run", json={"session": session, "path": "agent.ipynb", "ids": []}
            )
            assert run.status_code == 403, run.text
            api.delete(f"api/agent/sessions/{session}")


def test_grants_are_their_own_resource(server: RunningServer) -> None:
    with as_user(server, "runner").client() as runner_api:
        assert runner_api.get("api/host/grants").status_code == 403
    with server.client() as api:
        assert api.get("api/host/grants").status_code == 200
