"""Other programs change the files of open rooms: the rooms merge the changes in and lose nothing.

Real servers, real collaboration clients, real files written beside them. One server watches
with a short settle and never autosaves, so what its rooms write comes from taking in a change;
the other watches with a settle longer than any test, so its saves meet the change first.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from jupyter_ydoc import YNotebook, YUnicode

from ganymede.serve.rooms import protocol
from ganymede.serve.rooms.protocol import MessageType
from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server
from tests.serve.rooms.client import RoomClient, eventually, open_socket, room_client
from tests.serve.rooms.conftest import open_session, sources, write
from tests.serve.websocket import closed_with

QUICK_WATCHER = b"[serve]\nsave_delay = 60.0\nsettle = 0.2\nsettle_max = 2.0\n"
SLOW_WATCHER = b"[serve]\nsave_delay = 60.0\nsettle = 60.0\nsettle_max = 60.0\n"
METADATA = {
    "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
    "language_info": {"name": "python"},
}


def start(home: Path, config: bytes) -> RunningServer:
    root = home / "root"
    write(root / "ganymede.toml", config)
    return start_server(root, jupyter_env(home / "jupyter"))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = start(tmp_path_factory.mktemp("quick"), QUICK_WATCHER)
    yield running
    stop_server(running)


@pytest.fixture(scope="module")
def slow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = start(tmp_path_factory.mktemp("slow"), SLOW_WATCHER)
    yield running
    stop_server(running)


def notebook_bytes(cells: dict[str, str], minor: int = 5) -> bytes:
    """A notebook file with one code cell per id and source (no ids before nbformat 4.5)."""
    notebook = {
        "cells": [
            {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": []}
            | {"source": source}
            | ({"id": cell_id} if minor >= 5 else {})
            for cell_id, source in cells.items()
        ],
        "metadata": METADATA,
        "nbformat": 4,
        "nbformat_minor": minor,
    }
    return (json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode()


def on_disk(path: Path) -> dict[str, str]:
    cells = json.loads(path.read_text())["cells"]
    return {cell["id"]: "".join(cell["source"]) for cell in cells}


def in_room(client: RoomClient) -> dict[str, str]:
    notebook: YNotebook = client.shared  # type: ignore[assignment]
    return {cell["id"]: cell["source"] for cell in notebook.get()["cells"]}


def set_source(client: RoomClient, index: int, source: str) -> None:
    """Type into a cell and flag the document dirty, as JupyterLab does."""
    notebook: YNotebook = client.shared  # type: ignore[assignment]
    with notebook.ydoc.transaction():
        notebook.set_cell(index, source=source)
        notebook.ystate["dirty"] = True


def merges(server: RunningServer, name: str) -> int:
    return server.log.read_text().count(f"room {name}: took in a change")


@asynccontextmanager
async def two_clients(
    server: RunningServer, path: str, kind: str = "json:notebook"
) -> AsyncIterator[tuple[str, RoomClient, RoomClient]]:
    with server.client() as api:
        name, session = open_session(api, path, kind)
    async with room_client(server, name, session) as ada, room_client(server, name, session) as bob:
        yield name, ada, bob


async def save(client: RoomClient, save_id: int) -> str:
    await client.send_raw(protocol.save_request(save_id))
    answer: dict[str, Any] = protocol.decode_raw_json(await client.next_frame(MessageType.RAW))
    return str(answer["status"])


async def test_a_room_edit_and_a_file_edit_to_other_cells_both_survive(
    server: RunningServer,
) -> None:
    path = write(server.root / "both.ipynb", notebook_bytes({"a": "x = 1", "b": "y = 2"}))
    async with two_clients(server, "both.ipynb") as (name, ada, bob):
        set_source(ada, 0, "x = 1  # room 中文 📊")
        await eventually(lambda: in_room(bob)["a"].endswith("📊"), "the edit to reach the room")
        path.write_bytes(notebook_bytes({"a": "x = 1", "b": "y = 2  # file ✓"}))
        both = {"a": "x = 1  # room 中文 📊", "b": "y = 2  # file ✓"}
        await eventually(lambda: in_room(ada) == both, "ada to see the file's edit")
        await eventually(lambda: on_disk(path) == both, "the room to save the merge at once")
        await eventually(lambda: ada.shared.ystate["dirty"] is False, "the room to be clean")
        await eventually(lambda: in_room(bob) == both, "bob to see the merge too")
        assert merges(server, name) == 1


async def test_cells_the_file_adds_and_deletes_appear_and_go_live(server: RunningServer) -> None:
    path = write(server.root / "cells.ipynb", notebook_bytes({"a": "1", "b": "2"}))
    async with two_clients(server, "cells.ipynb") as (_, ada, _bob):
        path.write_bytes(notebook_bytes({"a": "1", "new": "added", "b": "2"}))
        await eventually(lambda: list(in_room(ada)) == ["a", "new", "b"], "the added cell")
        path.write_bytes(notebook_bytes({"new": "added", "b": "2"}))
        await eventually(lambda: in_room(ada) == {"new": "added", "b": "2"}, "the deletion")
        assert on_disk(path) == {"new": "added", "b": "2"}


async def test_the_file_wins_a_cell_both_changed_and_the_server_logs_it(
    server: RunningServer,
) -> None:
    path = write(server.root / "clash.ipynb", notebook_bytes({"a": "a = 0", "b": "b = 0"}))
    async with two_clients(server, "clash.ipynb") as (name, ada, bob):
        set_source(ada, 0, "a = 'room'")
        set_source(ada, 1, "b = 'room'")
        await eventually(lambda: in_room(bob)["b"] == "b = 'room'", "the edits to reach the room")
        path.write_bytes(notebook_bytes({"a": "a = 'file'", "b": "b = 0"}))
        merged = {"a": "a = 'file'", "b": "b = 'room'"}
        await eventually(lambda: in_room(ada) == merged, "the merge to reach ada")
        await eventually(lambda: on_disk(path) == merged, "the merge to be saved")
        assert f"room {name}: cell a, source: both changed the source" in server.log.read_text()


async def test_the_rooms_own_saves_are_not_taken_in(server: RunningServer) -> None:
    path = write(server.root / "own.ipynb", notebook_bytes({"a": "1"}))
    async with two_clients(server, "own.ipynb") as (name, ada, bob):
        for number in range(3):
            set_source(ada, 0, f"saved {number}")
            await eventually(lambda: in_room(bob)["a"] == f"saved {number}", "the room to have it")  # noqa: B023
            assert await save(ada, number) == "success"
        # A change of another program's after them: once it is in, the watcher has seen them.
        path.write_bytes(notebook_bytes({"a": "saved 2", "b": "from the file"}))
        await eventually(lambda: "b" in in_room(ada), "the file's change")
        assert merges(server, name) == 1


async def test_a_deleted_file_closes_the_clients_4404_and_is_not_written_back(
    server: RunningServer,
) -> None:
    path = write(server.root / "doomed.ipynb", notebook_bytes({"a": "1"}))
    async with two_clients(server, "doomed.ipynb") as (name, ada, bob):
        set_source(ada, 0, "unsaved")
        await eventually(lambda: in_room(bob)["a"] == "unsaved", "the edit to reach the room")
        path.unlink()
        # Each client's close frame arrives in its own time: wait for both before judging them.
        await eventually(
            lambda: None not in (ada.connection.close_code, bob.connection.close_code),
            "the room to close both clients",
        )
        assert ada.connection.close_code == bob.connection.close_code == 4404
        assert f"room {name}: its file is gone" in server.log.read_text()
    assert not path.exists()


async def test_a_half_written_file_changes_nothing_until_a_valid_one_comes(
    server: RunningServer,
) -> None:
    path = write(server.root / "half.ipynb", notebook_bytes({"a": "1", "b": "2"}))
    async with two_clients(server, "half.ipynb") as (name, ada, bob):
        set_source(ada, 0, "room")
        await eventually(lambda: in_room(bob)["a"] == "room", "the edit to reach the room")
        half = notebook_bytes({"a": "1", "b": "file"})[:40]
        path.write_bytes(half)
        refusal = f"room {name}: its file changed but cannot be read"
        await eventually(lambda: refusal in server.log.read_text(), "the room to refuse it")
        assert in_room(ada) == {"a": "room", "b": "2"}
        assert path.read_bytes() == half
        path.write_bytes(notebook_bytes({"a": "1", "b": "file"}))
        await eventually(lambda: in_room(ada) == {"a": "room", "b": "file"}, "the valid file")
        await eventually(lambda: on_disk(path) == {"a": "room", "b": "file"}, "the save")


async def test_a_version_replaced_before_it_settles_is_never_taken_in(
    server: RunningServer,
) -> None:
    """The room reads a changing file ahead (0.1 s after a change, here before the 0.2 s settle);
    a program writing again meanwhile makes that reading void, never merged."""
    path = write(server.root / "twice.ipynb", notebook_bytes({"a": "1", "b": "2"}))
    async with two_clients(server, "twice.ipynb") as (name, ada, _):
        set_source(ada, 0, "room")
        await eventually(lambda: in_room(ada)["a"] == "room", "the edit to be made")
        path.write_bytes(notebook_bytes({"a": "1", "b": "first"}))
        await asyncio.sleep(0.15)  # read ahead by now; not settled
        path.write_bytes(notebook_bytes({"a": "1", "b": "second", "c": "3"}))
        final = {"a": "room", "b": "second", "c": "3"}
        await eventually(lambda: in_room(ada) == final, "the second version")
        await eventually(lambda: on_disk(path) == final, "the merge to be saved")
        assert merges(server, name) == 1


async def test_a_file_with_a_number_beyond_64_bits_is_refused_and_the_watcher_goes_on(
    server: RunningServer,
) -> None:
    """pycrdt aborts on such a number with an exception no ``except Exception`` catches: taken
    into the room it once ended the watcher's task, and no room saw another file change."""
    path = write(server.root / "huge.ipynb", notebook_bytes({"a": "1", "b": "2"}))
    async with two_clients(server, "huge.ipynb") as (name, ada, _):
        set_source(ada, 0, "room")
        await eventually(lambda: in_room(ada)["a"] == "room", "the edit to be made")
        huge = json.loads(notebook_bytes({"a": "1", "b": "file"}))
        huge["metadata"]["widget_id"] = 2**64
        path.write_text(json.dumps(huge))
        refusal = f"room {name}: its file changed but cannot be read"
        await eventually(lambda: refusal in server.log.read_text(), "the room to refuse it")
        assert "beyond the 64 bits" in server.log.read_text()
        assert in_room(ada) == {"a": "room", "b": "2"}
        path.write_bytes(notebook_bytes({"a": "1", "b": "file"}))
        await eventually(lambda: in_room(ada) == {"a": "room", "b": "file"}, "the next change")


async def test_a_notebook_with_a_number_beyond_64_bits_does_not_open_and_says_why(
    server: RunningServer,
) -> None:
    huge = json.loads(notebook_bytes({"a": "1"}))
    huge["cells"][0]["metadata"]["seed"] = -(2**70)
    write(server.root / "huge-at-open.ipynb", json.dumps(huge).encode())
    with server.client() as api:
        name, session = open_session(api, "huge-at-open.ipynb")
    connection = await open_socket(server, name, session)
    code, reason = await closed_with(connection)
    assert code == protocol.CloseCode.BAD_REQUEST
    assert reason is not None and "beyond the 64 bits" in reason
    write(server.root / "fine.ipynb", notebook_bytes({"a": "1"}))
    async with two_clients(server, "fine.ipynb") as (_, ada, _):  # the server serves on
        assert in_room(ada) == {"a": "1"}


async def test_a_notebook_without_cell_ids_takes_the_file_outright(server: RunningServer) -> None:
    path = write(server.root / "old.ipynb", notebook_bytes({"a": "1", "b": "2"}, minor=4))
    async with two_clients(server, "old.ipynb") as (name, ada, bob):
        set_source(ada, 0, "room")
        await eventually(lambda: sources(bob) == ["room", "2"], "the edit to reach the room")
        path.write_bytes(notebook_bytes({"a": "1", "b": "file", "c": "3"}, minor=4))
        merged = ["1", "file", "3"]
        # Each client's frame comes in its own time: the second is not judged at the first's.
        await eventually(lambda: sources(ada) == sources(bob) == merged, "the file's content")
        assert f"room {name}: cell -, notebook: a notebook before" in server.log.read_text()


async def test_a_text_file_merges_line_by_line(server: RunningServer) -> None:
    path = write(server.root / "notes.md", b"one\ntwo\nthree\nfour\n")
    async with two_clients(server, "notes.md", "text:file") as (_, ada, bob):
        text: YUnicode = ada.shared  # type: ignore[assignment]
        with text.ydoc.transaction():
            text.set("one — 第一\ntwo\nthree\nfour\n")
            text.ystate["dirty"] = True
        await eventually(lambda: bob.shared.get().startswith("one —"), "the edit to reach it")
        path.write_text("one\ntwo\nthree\nfour 👍\n")
        merged = "one — 第一\ntwo\nthree\nfour 👍\n"
        await eventually(lambda: ada.shared.get() == merged, "the merge to reach ada")
        await eventually(lambda: path.read_text() == merged, "the merge to be saved")


async def test_an_explicit_save_takes_the_change_in_first(slow_server: RunningServer) -> None:
    server = slow_server
    path = write(server.root / "first.ipynb", notebook_bytes({"a": "1", "b": "2"}))
    async with two_clients(server, "first.ipynb") as (_, ada, bob):
        set_source(ada, 0, "room")
        await eventually(lambda: in_room(bob)["a"] == "room", "the edit to reach the room")
        path.write_bytes(notebook_bytes({"a": "1", "b": "file"}))
        assert await save(ada, 1) == "success"
        assert on_disk(path) == {"a": "room", "b": "file"}
        await eventually(lambda: in_room(ada) == {"a": "room", "b": "file"}, "the merge")


async def test_an_explicit_save_that_loses_a_room_edit_answers_failed(
    slow_server: RunningServer,
) -> None:
    server = slow_server
    path = write(server.root / "lost.ipynb", notebook_bytes({"a": "1", "b": "2"}))
    async with two_clients(server, "lost.ipynb") as (_, ada, bob):
        set_source(ada, 0, "room")
        set_source(ada, 1, "room too")
        await eventually(lambda: in_room(bob)["b"] == "room too", "the edits to reach the room")
        path.write_bytes(notebook_bytes({"a": "file", "b": "2"}))
        assert await save(ada, 1) == "failed"
        merged = {"a": "file", "b": "room too"}
        assert on_disk(path) == merged
        await eventually(lambda: in_room(ada) == merged, "the merge")
        assert await save(ada, 2) == "success"


async def test_an_explicit_save_writes_over_a_file_nobody_can_read(
    slow_server: RunningServer,
) -> None:
    server = slow_server
    path = write(server.root / "broken.ipynb", notebook_bytes({"a": "1"}))
    async with two_clients(server, "broken.ipynb") as (_, ada, bob):
        set_source(ada, 0, "kept")
        await eventually(lambda: in_room(bob)["a"] == "kept", "the edit to reach the room")
        path.write_bytes(b'{"cells": [')
        assert await save(ada, 1) == "success"
        assert on_disk(path) == {"a": "kept"}


async def test_after_a_rename_through_the_contents_api_the_new_path_is_watched(
    server: RunningServer,
) -> None:
    write(server.root / "before.ipynb", notebook_bytes({"a": "1"}))
    async with two_clients(server, "before.ipynb") as (_, ada, _bob):
        with server.client() as api:
            moved = api.patch("api/contents/before.ipynb", json={"path": "after.ipynb"})
            assert moved.status_code == 200, moved.text
        # The watcher reports the rename as the old path's deletion; this write is taken in
        # with that report, or once the room's file is watched at its new path.
        write(server.root / "after.ipynb", notebook_bytes({"a": "1", "b": "after the rename"}))
        await eventually(lambda: "b" in in_room(ada), "the change at the new path")
        assert ada.connection.close_code is None
        await eventually(lambda: ada.shared.path == "after.ipynb", "state.path to follow")


async def test_a_delete_through_the_contents_api_closes_the_clients_4404(
    server: RunningServer,
) -> None:
    path = write(server.root / "trashed.ipynb", notebook_bytes({"a": "1"}))
    async with two_clients(server, "trashed.ipynb") as (_, ada, _bob):
        with server.client() as api:
            assert api.delete("api/contents/trashed.ipynb").status_code == 204
        await eventually(lambda: ada.connection.close_code is not None, "the room to close")
        assert ada.connection.close_code == 4404
    assert not path.exists()
