"""Long notebooks in rooms: the fast read of a document gives what jupyter_ydoc's ``get()`` gives,
patches compare values as JSON does, and a 2,000-cell room merges a change on disk with an
unsaved edit, keeping both, through a real server and real clients."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_ydoc import YNotebook

from ganymede.notebook.nbio import dumps_notebook
from ganymede.serve.rooms.document import DocumentKind, RoomDocument, notebook_content
from ganymede.serve.rooms.patch import patch_notebook
from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server
from tests.serve.rooms.client import eventually, room_client
from tests.serve.rooms.conftest import edit_first_cell, open_session, write

QUICK_WATCHER = b"[serve]\nsave_delay = 60.0\nsettle = 0.2\nsettle_max = 2.0\n"
CELLS = 2000
CHANGED_ON_DISK = 1500


def code(cell_id: str, source: str = "x = 1", **fields: Any) -> dict[str, Any]:
    cell = {"id": cell_id, "cell_type": "code", "metadata": {}, "source": source}
    return cell | {"outputs": [], "execution_count": None} | fields


def notebook(*cells: dict[str, Any], minor: int = 5) -> dict[str, Any]:
    metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3"}, "ratio": 0.25}
    return {"cells": list(cells), "metadata": metadata, "nbformat": 4, "nbformat_minor": minor}


def odd_values() -> list[dict[str, Any]]:
    """Values whose trip through Yjs (every number a float) and JSON is easy to get wrong."""
    metadata = {
        "big": 1e20,
        "small": 1e-7,
        "half": 0.5,
        "flag": True,
        "nothing": None,
        "nested": {"list": [1, 2.5, False, "1"]},
        "text": 'é📊 "quoted"\n\t\\',
    }
    stream = {"output_type": "stream", "name": "stdout", "text": "out\n"}
    result = {
        "output_type": "execute_result",
        "execution_count": 4,
        "data": {"text/plain": "4", "application/json": {"n": 4.0}},
        "metadata": {},
    }
    return [
        code("a", metadata=metadata, execution_count=4, outputs=[stream, result]),
        {"id": "b", "cell_type": "markdown", "metadata": {}, "source": "# t", "attachments": {}},
        {"id": "c", "cell_type": "raw", "metadata": {}, "source": "raw"},
    ]


def shared(content: dict[str, Any]) -> YNotebook:
    document = YNotebook()
    document.set(content)
    return document


@pytest.mark.parametrize("minor", [4, 5])
def test_the_fast_read_is_what_get_returns(minor: int) -> None:
    document = shared(notebook(*odd_values(), minor=minor))
    fast = notebook_content(document)
    assert fast == document.get()
    assert json.dumps(fast, sort_keys=True) == json.dumps(document.get(), sort_keys=True)


def test_cells_sharing_an_id_are_left_to_get() -> None:
    document = shared(notebook(code("same", "one"), code("same", "two")))
    with pytest.warns(UserWarning, match="Non-unique cell ID"):
        fast = notebook_content(document)
    ids = [cell["id"] for cell in fast["cells"]]
    assert ids[0] == "same" and ids[1] != "same"
    assert notebook_content(document) == document.get()  # renamed in the document: no warning


def test_a_document_saves_as_jupyter_writes_it() -> None:
    room_document = RoomDocument(DocumentKind.NOTEBOOK)
    content = notebook(*odd_values())
    content["metadata"]["language_info"] = {"name": "python"}  # get() invents none
    data = (dumps_notebook(content)).encode()
    room_document.load(data, "odd.ipynb", "hash")
    assert room_document.to_bytes() == dumps_notebook(room_document.shared.get()).encode()


def test_a_patch_tells_true_from_1_and_not_2_from_2_point_0() -> None:
    document = shared(notebook(code("a", metadata={"collapsed": 1, "width": 2})))
    updates: list[bytes] = []
    document.ydoc.observe(lambda event: updates.append(event.update))
    target = document.get()
    target["cells"][0]["metadata"]["width"] = 2.0
    patch_notebook(document, target)
    assert not updates
    target["cells"][0]["metadata"]["collapsed"] = True
    patch_notebook(document, target)
    assert document.get()["cells"][0]["metadata"]["collapsed"] is True


def long_notebook() -> dict[str, Any]:
    cells = [
        code(
            f"cell-{index}",
            f"value = {index}\nprint(value)",
            execution_count=index + 1,
            outputs=[{"output_type": "stream", "name": "stdout", "text": f"{index}\n" * 8}],
        )
        for index in range(CELLS)
    ]
    return notebook(*cells)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    home = tmp_path_factory.mktemp("large")
    write(home / "root" / "ganymede.toml", QUICK_WATCHER)
    running = start_server(home / "root", jupyter_env(home / "jupyter"))
    yield running
    stop_server(running)


def sources_of(path: Path) -> list[str]:
    return ["".join(cell["source"]) for cell in json.loads(path.read_text())["cells"]]


async def test_a_long_room_keeps_an_unsaved_edit_when_the_file_changes(
    server: RunningServer,
) -> None:
    content = long_notebook()
    path = write(server.root / "long.ipynb", dumps_notebook(content).encode())
    with server.client() as api:
        room, session_id = open_session(api, "long.ipynb")
    async with (
        room_client(server, room, session_id) as editor,
        room_client(server, room, session_id) as watcher,
    ):
        edited: YNotebook = editor.shared  # type: ignore[assignment]
        seen: YNotebook = watcher.shared  # type: ignore[assignment]
        assert len(seen.ycells) == CELLS
        edit_first_cell(editor, "\n# unsaved")
        await eventually(lambda: str(seen.ycells[0]["source"]).endswith("# unsaved"), "the edit")
        content["cells"][CHANGED_ON_DISK]["source"] = "changed on disk"
        path.write_text(dumps_notebook(content))
        # The room sends the change to each client in turn: wait until both hold it.
        await eventually(
            lambda: all(
                str(client.ycells[CHANGED_ON_DISK]["source"]) == "changed on disk"
                for client in (seen, edited)
            ),
            "the change on disk",
        )
        assert str(seen.ycells[0]["source"]).endswith("# unsaved")
        await eventually(lambda: sources_of(path)[0].endswith("# unsaved"), "the merge saved")
        on_disk = sources_of(path)
        assert on_disk[CHANGED_ON_DISK] == "changed on disk"
        assert on_disk[1:CHANGED_ON_DISK] == [
            f"value = {index}\nprint(value)" for index in range(1, CHANGED_ON_DISK)
        ]
