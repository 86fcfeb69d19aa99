"""The timeline and undo_redo endpoints as JupyterLab's slider calls them, over room clients."""

from __future__ import annotations

import asyncio
import urllib.parse
from pathlib import Path

import httpx
import pytest
from jupyter_ydoc import YNotebook

from ganymede.history import HistoryStore, PointKind
from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server
from tests.serve.rooms.client import eventually, room_client
from tests.serve.rooms.conftest import (
    edit_first_cell,
    notebook_bytes,
    open_session,
    server_with,
    sources,
    sources_on_disk,
    write,
)
from tests.serve.rooms.test_forks import async_api
from tests.serve.rooms.test_history import history_db

pytestmark = pytest.mark.slow


def step_count(server: RunningServer, file_id: str) -> int:
    store = HistoryStore(history_db(server))
    try:
        return len([p for p in store.points(file_id) if p.kind.is_step])
    finally:
        store.close()


def kinds(server: RunningServer, file_id: str) -> list[PointKind]:
    store = HistoryStore(history_db(server))
    try:
        return [p.kind for p in store.points(file_id) if p.kind.is_step]
    finally:
        store.close()


async def timeline(api: httpx.AsyncClient, path: str) -> dict[str, object]:
    answer = await api.get(f"api/collaboration/timeline/{path}?format=json&&type=notebook")
    assert answer.status_code == 200, answer.text
    reply: dict[str, object] = answer.json()
    return reply


async def undo_redo(
    api: httpx.AsyncClient, room: str, action: str, steps: int, fork: str
) -> httpx.Response:
    segment = urllib.parse.quote(room, safe="")
    return await api.put(
        f"api/collaboration/undo_redo/{segment}?action={action}&&steps={steps}&&forkRoom={fork}"
    )


async def three_edits(server: RunningServer) -> str:
    """Three points by a person, each recorded before the next: the file id."""
    with server.client() as api:
        name, session = open_session(api, "nb.ipynb")
    file_id = name.rsplit(":", 1)[1]
    async with room_client(server, name, session) as person:
        for count, text in enumerate([" # one", " # two", " # three"], start=2):
            edit_first_cell(person, text)
            await eventually(lambda c=count: step_count(server, file_id) == c, "a point")
        await eventually(
            lambda: sources_on_disk(server.root / "nb.ipynb") == ["a = 1 # one # two # three"],
            "the autosave",
        )
    return file_id


def test_the_slider_walks_back_restores_and_still_works_after_a_restart(tmp_path: Path) -> None:
    write(tmp_path / "root" / "nb.ipynb", notebook_bytes("a = 1"))
    env = jupyter_env(tmp_path / "jupyter")
    server = start_server(tmp_path / "root", env)
    try:
        file_id = asyncio.run(three_edits(server))
    finally:
        stop_server(server)
    server = start_server(tmp_path / "root", env)
    try:

        async def slide() -> None:
            with server.client() as sync_api:
                name, session = open_session(sync_api, "nb.ipynb")
            async with async_api(server) as api, room_client(server, name, session) as person:
                reply = await timeline(api, "nb.ipynb")
                stamps = reply["timestamps"]
                assert isinstance(stamps, list)
                # The first server's load and three edits, then this server's load.
                assert len(stamps) == 5 and stamps == sorted(stamps)
                assert reply["roomId"] == name and reply["sessionId"] == session
                fork = str(reply["forkRoom"])
                async with room_client(server, fork, session, YNotebook()) as page:
                    assert sources(page) == ["a = 1 # one # two # three"]
                    undone = await undo_redo(api, name, "undo", 3, fork)  # back to "# one"
                    assert undone.json() == {"status": "undone"}
                    await eventually(lambda: sources(page) == ["a = 1 # one"], "the earlier state")
                    assert sources(person) == ["a = 1 # one # two # three"]  # only the fork
                    redone = await undo_redo(api, name, "redo", 1, fork)
                    assert redone.json() == {"status": "redone"}
                    await eventually(lambda: sources(page) == ["a = 1 # one # two"], "redo")
                    await undo_redo(api, name, "undo", 1, fork)
                    await eventually(lambda: sources(page) == ["a = 1 # one"], "undo again")
                    restored = await undo_redo(api, name, "restore", 0, fork)
                    assert restored.json() == {
                        "code": 200,
                        "status": "Document restored successfully",
                    }
                await eventually(lambda: sources(person) == ["a = 1 # one"], "the restore")
                # The page reconnects to the root with the fork's document, as JupyterLab does.
                async with room_client(server, name, session, page.shared) as back:
                    assert sources(back) == ["a = 1 # one"]
                    await asyncio.sleep(0.2)
                    assert sources(person) == ["a = 1 # one"]
                await eventually(
                    lambda: sources_on_disk(server.root / "nb.ipynb") == ["a = 1 # one"],
                    "the restore saved",
                )
                await eventually(
                    lambda: kinds(server, file_id)[-1] is PointKind.RESTORE, "a restore point"
                )

        asyncio.run(slide())
    finally:
        stop_server(server)


def test_the_ends_of_the_timeline_and_unknown_forks(tmp_path: Path) -> None:
    write(tmp_path / "root" / "nb.ipynb", notebook_bytes("a = 1"))
    server = start_server(tmp_path / "root", jupyter_env(tmp_path / "jupyter"))
    try:

        async def ends() -> None:
            with server.client() as sync_api:
                name, session = open_session(sync_api, "nb.ipynb")
            async with async_api(server) as api, room_client(server, name, session):
                await eventually(lambda: step_count(server, name.rsplit(":")[-1]) == 1, "load")
                reply = await timeline(api, "nb.ipynb")
                fork = str(reply["forkRoom"])
                assert len(reply["timestamps"]) == 1  # type: ignore[arg-type]
                none_back = await undo_redo(api, name, "undo", 1, fork)
                assert none_back.json() == {"error": "No more undo operations available"}
                none_on = await undo_redo(api, name, "redo", 1, fork)
                assert none_on.json() == {"error": "No more redo operations available"}
                unknown = await undo_redo(api, name, "undo", 1, "feedbeef")
                assert unknown.status_code == 404
                bad = await undo_redo(api, name, "rewind", 1, fork)
                assert bad.status_code == 400
                steps = await api.put(
                    f"api/collaboration/undo_redo/x?action=undo&steps=a&forkRoom={fork}"
                )
                assert steps.status_code == 400
                missing = await api.get(
                    "api/collaboration/timeline/nope.ipynb?format=json&type=notebook"
                )
                assert missing.status_code == 404
                wrong = await api.get("api/collaboration/timeline/nb.ipynb?format=json&type=zzz")
                assert wrong.status_code == 400

        asyncio.run(ends())
    finally:
        stop_server(server)


def test_with_history_off_the_timeline_is_empty_and_nothing_is_recorded(tmp_path: Path) -> None:
    write(tmp_path / "root" / "nb.ipynb", notebook_bytes("a = 1"))
    with server_with(tmp_path, b"[history]\nenabled = false\n") as server:

        async def empty() -> None:
            with server.client() as sync_api:
                name, session = open_session(sync_api, "nb.ipynb")
            async with async_api(server) as api, room_client(server, name, session) as person:
                edit_first_cell(person, " # kept in the file only")
                reply = await timeline(api, "nb.ipynb")
                assert reply["timestamps"] == []
                back = await undo_redo(api, name, "undo", 1, str(reply["forkRoom"]))
                assert back.json() == {"error": "No more undo operations available"}

        asyncio.run(empty())
    assert not history_db(server).exists()
