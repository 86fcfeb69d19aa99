"""Another program writes a room's file while nobody in the room has unsaved edits: the room
takes the change in and writes nothing, so the file stays byte for byte as that program wrote it
(git diffs, sync services, editors watching the file see only their own write).

Each case writes a first version, opens a room with a client on it, then writes a second
version as a program other than the server would, in its own formatting. An explicit save
answers only once every save the take-in started has finished, so after it the file shows
whatever the room wrote.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import nbformat
import pytest
from jupyter_ydoc import YNotebook, YUnicode
from nbformat.sign import NotebookNotary
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from ganymede.serve.rooms import protocol
from ganymede.serve.rooms.protocol import MessageType
from tests.serve.conftest import RunningServer
from tests.serve.rooms.client import RoomClient, eventually, room_client
from tests.serve.rooms.conftest import open_session, server_with, write

# Saves would come at once after a take-in, never from the autosave's delay.
QUICK_WATCHER = b"[serve]\nsave_delay = 60.0\nsettle = 0.2\nsettle_max = 2.0\n"
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with server_with(tmp_path_factory.mktemp("outside"), QUICK_WATCHER) as running:
        yield running


def nbformat_file(notebook: nbformat.NotebookNode) -> bytes:
    """As nbformat (papermill, nbconvert, a script) writes it."""
    return nbformat.writes(notebook).encode()


def other_formatting(notebook: nbformat.NotebookNode) -> bytes:
    """As a program with its own JSON habits writes it: two-space indent, keys as built,
    no newline at the end, non-ASCII as is."""
    return json.dumps(notebook, indent=2, ensure_ascii=False).encode()


def bare(source: str) -> nbformat.NotebookNode:
    """No kernelspec, no language_info: what a script making a notebook often writes."""
    return new_notebook(cells=[new_code_cell(source, id="c1")])


def described(source: str) -> nbformat.NotebookNode:
    metadata = {"kernelspec": KERNELSPEC, "language_info": {"name": "python", "version": "3"}}
    return new_notebook(cells=[new_code_cell(source, id="c1")], metadata=metadata)


def kernelspec_only(source: str) -> nbformat.NotebookNode:
    return new_notebook(cells=[new_code_cell(source, id="c1")], metadata={"kernelspec": KERNELSPEC})


def with_outputs(source: str) -> nbformat.NotebookNode:
    """Outputs, an execution count, a markdown cell with an empty attachments map."""
    cell = new_code_cell(source, id="c1", execution_count=3)
    cell.outputs = [
        new_output("stream", name="stdout", text="one\ntwo\n"),
        new_output("execute_result", data={"text/plain": "4"}, execution_count=3),
    ]
    notes = new_markdown_cell("# notes", id="m1")
    notes["attachments"] = {}
    return new_notebook(cells=[notes, cell], metadata={"kernelspec": KERNELSPEC})


def before_cell_ids(source: str) -> nbformat.NotebookNode:
    """nbformat 4.4: cells without ids."""
    notebook = bare(source)
    notebook.nbformat_minor = 4
    del notebook.cells[0]["id"]
    return notebook


Notebook = Callable[[str], nbformat.NotebookNode]
Writer = Callable[[nbformat.NotebookNode], bytes]
CASES: dict[str, tuple[Notebook, Writer]] = {
    "bare": (bare, nbformat_file),
    "bare, other formatting": (bare, other_formatting),
    "described": (described, nbformat_file),
    "kernelspec only": (kernelspec_only, other_formatting),
    "outputs": (with_outputs, nbformat_file),
    "nbformat 4.4": (before_cell_ids, nbformat_file),
}


async def settled_with(client: RoomClient, condition: Callable[[], bool], what: str) -> None:
    """Wait for the room to show the file's change, then for every save it led to."""
    await eventually(condition, what)
    await client.send_raw(protocol.save_request(0))
    answer: dict[str, Any] = protocol.decode_raw_json(await client.next_frame(MessageType.RAW))
    assert answer["status"] == "success"


def code_sources(client: RoomClient) -> list[str]:
    notebook: YNotebook = client.shared  # type: ignore[assignment]
    return [cell["source"] for cell in notebook.get()["cells"] if cell["cell_type"] == "code"]


@pytest.mark.parametrize("case", CASES)
async def test_a_change_written_by_another_program_stays_as_it_wrote_it(
    server: RunningServer, case: str
) -> None:
    make, writes = CASES[case]
    name = case.replace(" ", "-").replace(",", "").replace(".", "")
    path = write(server.root / f"{name}.ipynb", writes(make("x = 1")))
    with server.client() as api:
        room, session = open_session(api, path.name)
    async with room_client(server, room, session) as client:
        theirs = writes(make("x = 2  # from another program ✓"))
        path.write_bytes(theirs)
        stat = path.stat()
        await settled_with(
            client, lambda: code_sources(client) == ["x = 2  # from another program ✓"], case
        )
        assert path.read_bytes() == theirs
        assert path.stat().st_mtime_ns == stat.st_mtime_ns


async def test_a_signed_notebook_changed_by_another_program_is_not_written_again(
    server: RunningServer,
) -> None:
    """The room marks a signed notebook's cells trusted, which is not an edit to write."""
    notary = NotebookNotary(data_dir=str(server.root.parent / "jupyter" / "data"))

    def signed(source: str) -> bytes:
        notebook = with_outputs(source)
        notary.sign(notebook)
        return nbformat_file(notebook)

    path = write(server.root / "signed.ipynb", signed("x = 1"))
    with server.client() as api:
        room, session = open_session(api, path.name)
    async with room_client(server, room, session) as client:
        theirs = signed("x = 2")
        path.write_bytes(theirs)
        await settled_with(client, lambda: code_sources(client) == ["x = 2"], "the change")
        assert path.read_bytes() == theirs


async def test_a_text_file_changed_by_another_program_is_not_written_again(
    server: RunningServer,
) -> None:
    path = write(server.root / "notes.md", b"# notes\r\nfirst\r\n")
    with server.client() as api:
        room, session = open_session(api, path.name, "text:file")
    async with room_client(server, room, session) as client:
        text: YUnicode = client.shared  # type: ignore[assignment]
        theirs = b"# notes\nfirst\nsecond, from another program\n"
        path.write_bytes(theirs)
        await settled_with(client, lambda: "second" in str(text.get()), "the change")
        assert path.read_bytes() == theirs


async def test_a_notebook_without_cells_keeps_none_in_its_file(server: RunningServer) -> None:
    """Its room shows one empty cell (as jupyter_ydoc's set() makes it); another program's
    changes, and the cell it adds, reach the room without that cell reaching the file."""
    path = write(server.root / "empty.ipynb", nbformat_file(new_notebook()))
    with server.client() as api:
        room, session = open_session(api, path.name)
    async with room_client(server, room, session) as client:
        assert code_sources(client) == [""]
        described = nbformat_file(new_notebook(metadata={"kernelspec": KERNELSPEC}))
        path.write_bytes(described)
        notebook: YNotebook = client.shared  # type: ignore[assignment]
        await settled_with(
            client,
            lambda: notebook.get()["metadata"]["kernelspec"]["name"] == "python3",
            "the kernelspec",
        )
        assert path.read_bytes() == described
        assert code_sources(client) == [""]
        with_a_cell = nbformat_file(
            new_notebook(
                cells=[new_code_cell("x = 1", id="c1")], metadata={"kernelspec": KERNELSPEC}
            )
        )
        path.write_bytes(with_a_cell)
        await settled_with(client, lambda: code_sources(client) == ["x = 1"], "the new cell")
        assert path.read_bytes() == with_a_cell
