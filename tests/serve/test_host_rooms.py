"""self.* through the responder into a real room: what a connected client sees, hash checks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_ydoc import YNotebook

from ganymede.core import Notebooks
from ganymede.errors import HostCallError
from ganymede.fileid import FileIdStore
from ganymede.grant import Grant, Grants, GrantStore, NotebookGrant
from ganymede.host.api import Caller
from ganymede.host.responder import HostResponder
from ganymede.notebook.hashing import source_hash
from ganymede.serve.kernels.host_rooms import HostRooms, room_notebook_reader
from ganymede.serve.rooms import RoomManager, protocol
from ganymede.serve.rooms.room import DocumentRoom
from tests.core.disk import code, markdown, write_notebook

INDEX = "journal/index.ipynb"
OTHER = "journal/other.ipynb"


class Mirror:
    """A room client that keeps a copy of the shared notebook, as JupyterLab's provider does."""

    def __init__(self) -> None:
        self.shared = YNotebook()
        self.closed: tuple[int, str] | None = None

    def send(self, frame: bytes) -> None:
        message = protocol.decode_frame(frame)
        if isinstance(message, protocol.SyncStep2 | protocol.SyncUpdate):
            self.shared.ydoc.apply_update(message.update)

    def close(self, code: int, reason: str) -> None:
        self.closed = (code, reason)

    def cells(self) -> list[dict[str, Any]]:
        return list(self.shared.get()["cells"])


@pytest.fixture
def root(tmp_path: Path) -> Path:
    served = tmp_path / "root"
    write_notebook(
        served / INDEX,
        markdown("# Journal", cell_id="title"),
        code("print('old index')", cell_id="toc"),
    )
    return served


@pytest.fixture
def host_rooms(rooms: RoomManager, file_ids: FileIdStore) -> HostRooms:
    return HostRooms(rooms, file_ids)


@pytest.fixture
def responder(
    root: Path, tmp_path: Path, file_ids: FileIdStore, rooms: RoomManager, host_rooms: HostRooms
) -> HostResponder:
    grants = Grants(root, Grant(), GrantStore(tmp_path / "grants.toml"), file_ids)
    notebooks = Notebooks(root, room_notebook_reader(rooms))
    return HostResponder(notebooks, grants, editor=host_rooms)


@pytest.fixture
async def mirror(rooms: RoomManager, file_ids: FileIdStore) -> AsyncIterator[Mirror]:
    client = Mirror()
    room = await rooms.join(f"json:notebook:{file_ids.index(INDEX)}", client)
    assert isinstance(room, DocumentRoom)
    await room.handle(client, protocol.SyncStep1(client.shared.ydoc.get_state()))
    yield client
    rooms.leave(room, client)


KERNEL = Caller("k1", INDEX, Grant())


async def call(responder: HostResponder, method: str, **params: Any) -> Any:
    return await responder.call(KERNEL, method, params)


async def test_hello_offers_self_calls_to_a_notebooks_kernel(responder: HostResponder) -> None:
    methods = (await call(responder, "hello"))["methods"]
    assert methods[-3:] == ["self.add", "self.edit", "self.delete"]
    run_kernel = Caller("k2", INDEX, Grant(), depth=1, self_calls=False)
    assert "self.add" not in (await responder.call(run_kernel, "hello", {}))["methods"]


async def test_an_edit_reaches_a_connected_client(responder: HostResponder, mirror: Mirror) -> None:
    read = await call(responder, "notebooks.read", path=INDEX)
    assert (
        await call(
            responder,
            "self.edit",
            id="toc",
            source="print('new index')",
            source_hash=read["hashes"]["toc"],
        )
        == {}
    )
    toc = mirror.cells()[1]
    assert toc["source"] == "print('new index')"
    agent = toc["metadata"]["ganymede"]["agent"]
    assert (agent["by"], agent["mode"]) == ("kernel", "note")
    assert [entry["source"] for entry in agent["history"]] == ["print('old index')"]
    again = await call(responder, "notebooks.read", path=INDEX)
    assert again["hashes"]["toc"] == source_hash("print('new index')")


async def test_a_stale_hash_is_a_source_mismatch_and_changes_nothing(
    responder: HostResponder, mirror: Mirror
) -> None:
    with pytest.raises(HostCallError) as failed:
        await call(
            responder, "self.edit", id="toc", source="x", source_hash=source_hash("print('older')")
        )
    assert (failed.value.code, failed.value.message) == (
        "failed",
        "source_mismatch: cell toc changed since it was read",
    )
    with pytest.raises(HostCallError, match=r"^failed: source_mismatch: "):
        await call(responder, "self.delete", id="toc", source_hash="1")
    assert [cell["source"] for cell in mirror.cells()] == ["# Journal", "print('old index')"]


async def test_add_places_a_stamped_cell(responder: HostResponder, mirror: Mirror) -> None:
    first = await call(
        responder, "self.add", cell_type="markdown", source="## Index", after="title"
    )
    last = await call(responder, "self.add", cell_type="code", source="1 + 1")
    cells = mirror.cells()
    assert [cell["id"] for cell in cells] == ["title", first["id"], "toc", last["id"]]
    assert cells[1]["cell_type"] == "markdown" and cells[1]["source"] == "## Index"
    stamp = cells[3]["metadata"]["ganymede"]["agent"]
    assert sorted(stamp) == ["at", "by", "mode"] and stamp["by"] == "kernel"
    assert cells[3]["outputs"] == []
    nbformat.validate(nbformat.from_dict(mirror.shared.get()))


async def test_delete_removes_the_cell(responder: HostResponder, mirror: Mirror) -> None:
    toc_hash = source_hash("print('old index')")
    assert await call(responder, "self.delete", id="toc", source_hash=toc_hash) == {}
    assert [cell["id"] for cell in mirror.cells()] == ["title"]


async def test_unknown_cells_fail(responder: HostResponder) -> None:
    with pytest.raises(HostCallError, match=r"^failed: self\.edit: no cell with id nope$"):
        await call(responder, "self.edit", id="nope", source="", source_hash="0")
    with pytest.raises(HostCallError, match=r"^failed: self\.add: no cell with id nope$"):
        await call(responder, "self.add", source="", after="nope")
    with pytest.raises(HostCallError, match=r"^failed: self\.add: cell_type must be one of"):
        await call(responder, "self.add", source="", cell_type="heading")


async def test_self_calls_need_a_notebook_and_edit_self(
    responder: HostResponder, file_ids: FileIdStore, root: Path, tmp_path: Path
) -> None:
    write_notebook(root / OTHER, code("pass"))
    no_edits = NotebookGrant(edit_self=False)
    GrantStore(tmp_path / "grants.toml").set(file_ids.index(OTHER), no_edits, OTHER)
    refusals = {
        Caller("k2", None, Grant()): "unavailable: self.add: this kernel has no notebook",
        Caller("k3", INDEX, Grant(), self_calls=False): (
            "unavailable: self.add: runs and executed notebooks make no self.* calls"
        ),
        Caller("k4", OTHER, Grant()): f"denied: self.add needs edit_self granted for {OTHER}",
    }
    for who, message in refusals.items():
        with pytest.raises(HostCallError) as failed:
            await responder.call(who, "self.add", {"source": "x"})
        assert str(failed.value) == message


async def test_the_room_stays_open_until_the_kernel_is_released(
    responder: HostResponder, rooms: RoomManager, root: Path
) -> None:
    await call(responder, "self.add", source="print('kept')")
    room = rooms.open_notebook_room(INDEX)
    assert room is not None and len(room.clients) == 1  # the kernel's hold, no other client
    read = await call(responder, "notebooks.read", path=INDEX)
    assert read["notebook"]["cells"][-1]["source"] == "print('kept')"  # unsaved, from the room
    assert await room.save() == "success"
    assert "print('kept')" in (root / INDEX).read_text()
    await responder.release("k1")
    assert room.clients == set()


async def test_calls_racing_to_join_hold_the_room_once(
    responder: HostResponder, rooms: RoomManager
) -> None:
    adds = [call(responder, "self.add", source=f"print({n})") for n in range(3)]
    added = await asyncio.gather(*adds)
    room = rooms.open_notebook_room(INDEX)
    assert room is not None and len(room.clients) == 1
    assert len({answer["id"] for answer in added}) == 3
    await responder.release("k1")
    assert room.clients == set()
