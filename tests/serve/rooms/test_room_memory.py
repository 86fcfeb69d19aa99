"""An open room keeps its document and little else: no parse of its file and no whole copy of
its bytes between merges, and merges with a change on disk still keep an unsaved edit."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path

import nbformat
import pytest

from ganymede.agent import Author, AuthorKind
from ganymede.fileid import FileIdStore
from ganymede.serve.rooms import RoomManager
from ganymede.serve.rooms.room import DocumentRoom
from tests.serve.rooms.client import eventually
from tests.serve.rooms.test_budget import QuietClient

pytestmark = pytest.mark.slow

CELLS = 1000
ADA = Author("ada", AuthorKind.PERSON)


def long_notebook(changed_last: str = "") -> bytes:
    printed = nbformat.v4.new_output("stream", name="stdout", text=f"{'row ' * 100}\n" * 4)
    cells = [
        nbformat.v4.new_code_cell(
            f"value_{n} = compute({n})", id=f"cell-{n}", outputs=[printed], execution_count=n
        )
        for n in range(CELLS)
    ]
    cells[-1].source += changed_last
    return (nbformat.writes(nbformat.v4.new_notebook(cells=cells)) + "\n").encode()


def python_mb() -> float:
    gc.collect()
    return tracemalloc.get_traced_memory()[0] / 2**20


@pytest.fixture
async def room(tmp_path: Path) -> AsyncIterator[tuple[DocumentRoom, Path]]:
    root = tmp_path / "root"
    root.mkdir()
    path = root / "long.ipynb"
    path.write_bytes(long_notebook())
    (root / "first.ipynb").write_bytes(nbformat.writes(nbformat.v4.new_notebook()).encode())
    file_ids = FileIdStore(root, tmp_path / "ids.db")
    manager = RoomManager(file_ids, save_delay=600, runtime_dir=tmp_path / "runtime")
    # The first room of a process sets up what every room shares (the watcher, caches).
    await manager.join(f"json:notebook:{file_ids.index('first.ipynb')}", QuietClient())
    tracemalloc.start()
    try:
        before = python_mb()
        opened = await manager.join(f"json:notebook:{file_ids.index('long.ipynb')}", QuietClient())
        assert isinstance(opened, DocumentRoom)
        opened.held_python_mb = python_mb() - before  # type: ignore[attr-defined]
        yield opened, path
    finally:
        tracemalloc.stop()
        await manager.stop()
        file_ids.close()


async def test_an_open_room_keeps_less_python_data_than_its_file(
    room: tuple[DocumentRoom, Path],
) -> None:
    opened, path = room
    file_mb = path.stat().st_size / 2**20
    # Before, a room kept the file's bytes, their parse and its loaded update: 3x the file.
    assert opened.held_python_mb < file_mb / 2  # type: ignore[attr-defined]


async def test_after_a_merge_the_room_lets_go_and_keeps_the_unsaved_edit(
    room: tuple[DocumentRoom, Path],
) -> None:
    opened, path = room
    with opened.writing_as(ADA):
        source = opened.document.shared.ycells[0]["source"]  # type: ignore[attr-defined]
        source += "  # unsaved"
    before = python_mb()
    path.write_bytes(long_notebook(changed_last="  # from disk"))
    assert await opened.take_in_file_change()
    # The room's own save is seen by the watcher and read ahead (bytes held for a moment, and
    # let go at once as the room's own): a parse kept for good never comes down.
    half_the_file = path.stat().st_size / 2**20 / 2
    await eventually(lambda: python_mb() - before < half_the_file, "the merge's parses to go")
    sources = [cell["source"] for cell in opened.document.content()["cells"]]
    assert sources[0].endswith("# unsaved") and sources[-1].endswith("# from disk")
    on_disk = nbformat.reads(path.read_text(), as_version=4)
    assert on_disk.cells[0].source.endswith("# unsaved"), "the merge was saved with the edit"
