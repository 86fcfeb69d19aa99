"""A rename through the contents API under connected clients: the room follows, drops nobody.

The room's autosave, its watcher taking in the room's own write, and the rename's own
bookkeeping (the file moves on disk, then its id) all touch the file within a second of an
edit; the renames here land at many offsets from the edit, before, during and after the save
and the settle, so whichever order they meet in, the clients stay and every edit reaches the
renamed file.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ganymede.agent import Author, AuthorKind
from ganymede.fileid import FileIdStore
from ganymede.serve.contents import GanymedeContentsManager
from ganymede.serve.rooms import RoomManager
from ganymede.serve.rooms.room import DocumentRoom
from tests.serve.conftest import RunningServer
from tests.serve.rooms.client import eventually, room_client
from tests.serve.rooms.conftest import (
    edit_first_cell,
    notebook_bytes,
    open_session,
    server_with,
    write,
)

pytestmark = pytest.mark.slow

# Saves and settles come quickly, so a sweep of offsets covers them all in a few seconds.
QUICK = b"[serve]\nsave_delay = 0.2\nsettle = 0.2\nsettle_max = 1.0\n"
OFFSETS = [step * 0.05 for step in range(16)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with server_with(tmp_path_factory.mktemp("renames"), QUICK) as running:
        yield running


def first_source(path: Path) -> str:
    return "".join(json.loads(path.read_text())["cells"][0]["source"])


def rename(server: RunningServer, old: str, new: str) -> None:
    with server.client() as api:
        moved = api.patch(f"api/contents/{old}", json={"path": new})
        assert moved.status_code == 200, moved.text


async def rename_under_an_edit(
    server: RunningServer, old: str, new: str, offset: float, *, renamed_on_disk: str | None = None
) -> None:
    """Edit, rename ``offset`` s later, edit again: nobody dropped, both edits in the file."""
    with server.client() as api:
        name, session = open_session(api, old)
    async with room_client(server, name, session) as client:
        edit_first_cell(client, " before")
        await asyncio.sleep(offset)
        await asyncio.to_thread(rename, server, old, new)
        edit_first_cell(client, " after")
        target = server.root / (renamed_on_disk or new)
        await eventually(
            lambda: target.exists() and first_source(target).endswith(" before after"),
            f"both edits in {new} (rename {offset:.2f} s after the first)",
        )
        assert client.connection.close_code is None, f"dropped at offset {offset:.2f} s"
        await eventually(lambda: client.shared.path == new, "state.path to follow")
        assert not (server.root / old).exists(), "a save wrote the old path again"


@pytest.mark.parametrize("offset", OFFSETS)
async def test_a_rename_at_any_moment_keeps_the_clients_and_the_edits(
    server: RunningServer, offset: float
) -> None:
    old = f"moment-{offset:.2f}.ipynb"
    write(server.root / old, notebook_bytes("x = 1"))
    await rename_under_an_edit(server, old, f"moment-{offset:.2f}-renamed.ipynb", offset)


@pytest.mark.parametrize("offset", [0.0, 0.2, 0.4])
async def test_a_rename_into_another_folder_keeps_the_clients(
    server: RunningServer, offset: float
) -> None:
    old = f"home-{offset:.1f}.ipynb"
    write(server.root / old, notebook_bytes("x = 1"))
    (server.root / f"away-{offset:.1f}").mkdir()
    await rename_under_an_edit(server, old, f"away-{offset:.1f}/moved.ipynb", offset)


@pytest.mark.parametrize("offset", [0.0, 0.2, 0.4])
async def test_a_rename_back_keeps_the_clients(server: RunningServer, offset: float) -> None:
    old = f"there-{offset:.1f}.ipynb"
    write(server.root / old, notebook_bytes("x = 1"))
    await rename_under_an_edit(server, old, f"back-{offset:.1f}.ipynb", offset)
    await rename_under_an_edit(server, f"back-{offset:.1f}.ipynb", old, offset)


@pytest.mark.parametrize("offset", [0.0, 0.2, 0.4])
async def test_renaming_the_folder_holding_the_notebook_keeps_the_clients(
    server: RunningServer, offset: float
) -> None:
    folder, renamed = f"project-{offset:.1f}", f"project-{offset:.1f}-renamed"
    write(server.root / folder / "nb.ipynb", notebook_bytes("x = 1"))
    with server.client() as api:
        name, session = open_session(api, f"{folder}/nb.ipynb")
    async with room_client(server, name, session) as client:
        edit_first_cell(client, " before")
        await asyncio.sleep(offset)
        await asyncio.to_thread(rename, server, folder, renamed)
        edit_first_cell(client, " after")
        target = server.root / renamed / "nb.ipynb"
        await eventually(
            lambda: target.exists() and first_source(target).endswith(" before after"),
            "both edits in the renamed folder",
        )
        assert client.connection.close_code is None
        await eventually(lambda: client.shared.path == f"{renamed}/nb.ipynb", "state.path")
        assert not (server.root / folder).exists()


@dataclass(eq=False)
class RecordingClient:
    """A room connection that keeps what the room sends it and how it was closed."""

    frames: list[bytes] = field(default_factory=list)
    closed_with: int | None = None

    def send(self, frame: bytes) -> None:
        self.frames.append(frame)

    def close(self, code: int, reason: str) -> None:
        self.closed_with = code


@pytest.fixture
def halted_moves(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[threading.Event, threading.Event]]:
    """Each file move the contents manager makes stops once it is done on disk, before the
    manager carries the file's id along, until the test lets it go on."""
    moved, go_on = threading.Event(), threading.Event()
    real_move = shutil.move

    def move_then_halt(source: str, destination: str) -> object:
        answer = real_move(source, destination)
        moved.set()
        go_on.wait(30)
        return answer

    monkeypatch.setattr(shutil, "move", move_then_halt)
    yield moved, go_on
    go_on.set()


async def test_the_watcher_seeing_the_old_path_empty_mid_rename_closes_nobody(
    tmp_path: Path, halted_moves: tuple[threading.Event, threading.Event]
) -> None:
    """The rename is on disk, its id not yet moved, the watcher reports the old path gone and
    an edit's autosave comes due: the room waits for the rename rather than closing its
    clients 4404 or finding no file to save to, then saves the edit to the renamed file."""
    moved, go_on = halted_moves
    root = write(tmp_path / "root" / "nb.ipynb", notebook_bytes("x = 1")).parent
    file_ids = FileIdStore(root, tmp_path / "ids.db")
    rooms = RoomManager(
        file_ids, save_delay=0.05, settle=0.05, settle_max=0.2, runtime_dir=tmp_path / "runtime"
    )
    contents = GanymedeContentsManager(root_dir=str(root), file_ids=file_ids, rooms=rooms)
    client = RecordingClient()
    room = await rooms.join(f"json:notebook:{file_ids.index('nb.ipynb')}", client)
    try:
        renaming = asyncio.ensure_future(contents.rename_file("nb.ipynb", "renamed.ipynb"))
        await asyncio.to_thread(moved.wait, 30)
        assert isinstance(room, DocumentRoom)
        with room.writing_as(Author("ada", AuthorKind.PERSON)):
            source = room.document.shared.ycells[0]["source"]  # type: ignore[attr-defined]
            source += " # mid-rename"
        # The watcher's settle and the autosave's delay pass many times over meanwhile.
        await asyncio.sleep(1.0)
        go_on.set()
        await renaming
        assert client.closed_with is None, "the room closed its client mid-rename"
        assert room.document.shared.path == "renamed.ipynb"
        renamed = root / "renamed.ipynb"
        await eventually(lambda: "# mid-rename" in renamed.read_text(), "the edit to be saved")
        assert not (root / "nb.ipynb").exists()
    finally:
        go_on.set()
        await rooms.stop()
        file_ids.close()
