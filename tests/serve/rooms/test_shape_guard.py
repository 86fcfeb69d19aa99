"""A client edit that leaves the notebook in a shape the room cannot save is refused and undone:
its sender is closed 1007, the other clients see the notebook back as it was, with their own
edits, and the room saves a valid notebook. Shapes JupyterLab makes are taken as they come."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx
import nbformat
import pytest
from jupyter_ydoc import YNotebook
from pycrdt import Array, Map, Text

from ganymede.serve.rooms import protocol
from ganymede.serve.rooms.shape_guard import meta_problem
from tests.serve.conftest import RunningServer
from tests.serve.rooms.client import RoomClient, eventually, room_client
from tests.serve.rooms.conftest import (
    edit_first_cell,
    notebook_bytes,
    open_session,
    sources,
    sources_on_disk,
    write,
)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("meta", "problem"),
    [
        ({"nbformat": 4, "nbformat_minor": 5}, None),
        ({"nbformat": 4.0, "nbformat_minor": 5.0, "metadata": {}}, None),
        ({"nbformat": 4, "nbformat_minor": "5"}, "nbformat_minor to '5'"),
        ({"nbformat": None, "nbformat_minor": 5}, "nbformat to None"),
        ({"nbformat": 4, "nbformat_minor": 4.5}, "nbformat_minor to 4.5"),
        ({"nbformat": True, "nbformat_minor": 5}, "nbformat to True"),
        ({"nbformat": 4, "nbformat_minor": -1}, "nbformat_minor to -1"),
        ({"nbformat": 5, "nbformat_minor": 0}, "nbformat to 5, not 4"),
        ({"nbformat": 4, "nbformat_minor": 5, "metadata": [1]}, "metadata to [1], not a map"),
        ({"nbformat": 4, "nbformat_minor": 5, "metadata": None}, "metadata to None, not a map"),
    ],
)
def test_format_fields_must_be_whole_numbers_and_metadata_a_map(
    meta: dict[str, object], problem: str | None
) -> None:
    found = meta_problem(meta)
    assert (found is None) if problem is None else (found is not None and problem in found)


async def test_an_unreadable_nbformat_is_undone_and_only_its_sender_closed(
    server: RunningServer, api: httpx.Client
) -> None:
    path = write(server.root / "rooms" / "format.ipynb", notebook_bytes("x"))
    name, session = open_session(api, "rooms/format.ipynb")
    async with room_client(server, name, session) as ada, room_client(server, name, session) as bob:
        meta = ada.shared.ydoc.get("meta", type=Map)
        meta["nbformat_minor"] = "print(1)"
        # ada's provider reads its socket: the close shows on the connection once it came.
        await eventually(lambda: ada.connection.close_code is not None, "ada to be closed")
        assert ada.connection.close_code == protocol.CloseCode.INVALID_PAYLOAD
        assert "nbformat_minor" in (ada.connection.close_reason or "")

        seen: YNotebook = bob.shared  # type: ignore[assignment]
        bob_meta = seen.ydoc.get("meta", type=Map)
        await eventually(lambda: bob_meta.get("nbformat_minor") == 5, "the field to come back")
        edit_first_cell(bob, " = 1")
        await eventually(lambda: sources_on_disk(path) == ["x = 1"], "the room to save")
        assert sources(bob) == ["x = 1"]


def cells_of(client: RoomClient) -> Array[Map]:
    notebook: YNotebook = client.shared  # type: ignore[assignment]
    return notebook.ycells


def set_first(key: str, value: object) -> Callable[[RoomClient], None]:
    def odd_edit(client: RoomClient) -> None:
        cells_of(client)[0][key] = value

    return odd_edit


def append_cell(cell: object) -> Callable[[RoomClient], None]:
    def odd_edit(client: RoomClient) -> None:
        cells_of(client).append(cell)

    return odd_edit


def append_output(output: object) -> Callable[[RoomClient], None]:
    def odd_edit(client: RoomClient) -> None:
        cells_of(client)[0]["outputs"].append(output)

    return odd_edit


def markdown_cell_with(extra: dict[str, object]) -> Map:
    cell = {"id": "m", "cell_type": "markdown", "source": Text("#"), "metadata": Map()}
    return Map(cell | extra)


def set_notebook_metadata(value: object) -> Callable[[RoomClient], None]:
    def odd_edit(client: RoomClient) -> None:
        client.shared.ydoc.get("meta", type=Map)["metadata"] = value

    return odd_edit


ODD_EDITS = {
    "source not text": (set_first("source", 5), "source must be shared text"),
    "source a plain string": (set_first("source", "x = 9"), "source must be shared text"),
    "metadata not a map": (set_first("metadata", "bogus"), "metadata must be a shared map"),
    "outputs not an array": (set_first("outputs", {"a": 1}), "outputs must be a shared array"),
    "no cell_type": (set_first("cell_type", None), "cell_type None"),
    "unknown cell_type": (set_first("cell_type", "bogus"), "cell_type 'bogus'"),
    "execution_count text": (set_first("execution_count", "1"), "execution_count"),
    "execution_count negative": (set_first("execution_count", -1), "execution_count -1 is below"),
    "id not an id": (set_first("id", "print(1)"), "id 'print(1)'"),
    "a key nbformat has no place for": (set_first("tags", []), "code cells have no tags"),
    "a markdown cell's count": (
        append_cell(markdown_cell_with({"execution_count": "1"})),
        "markdown cells have no execution_count",
    ),
    "cell with no cell_type": (append_cell(Map({"source": Text("2")})), "cell_type None"),
    "cell not a map": (append_cell("print(1)"), "a cell must be a shared map, not str"),
    "output not an output": (append_output(Map({"bogus": 1})), "output 0: output_type None"),
    "notebook metadata a list": (set_notebook_metadata([1, "a"]), "notebook's metadata to [1"),
    "notebook metadata null": (set_notebook_metadata(None), "notebook's metadata to None"),
}


@pytest.mark.parametrize("case", ODD_EDITS)
async def test_an_edit_leaving_the_notebook_unsaveable_is_undone_and_others_edits_kept(
    server: RunningServer, api: httpx.Client, case: str
) -> None:
    odd_edit, reason = ODD_EDITS[case]
    relative = f"rooms/odd/{case.replace(' ', '-')}.ipynb"  # a room of its own per case
    path = write(server.root / relative, notebook_bytes("x", "y"))
    name, session = open_session(api, relative)
    async with room_client(server, name, session) as ada, room_client(server, name, session) as bob:
        edit_first_cell(bob, " = 1")  # in the cell ada is about to break: it must survive
        await eventually(lambda: sources(ada)[0] == "x = 1", "ada to hold bob's edit")
        with ada.shared.ydoc.transaction():
            odd_edit(ada)
        append_to_cell(bob, 1, " = 2")  # alongside, in another cell

        await eventually(lambda: ada.connection.close_code is not None, "ada to be closed")
        assert ada.connection.close_code == protocol.CloseCode.INVALID_PAYLOAD
        assert reason in (ada.connection.close_reason or "")
        await eventually(lambda: readable(bob) == ["x = 1", "y = 2"], "bob's view to come back")
        await eventually(lambda: saved_sources(path) == ["x = 1", "y = 2"], "the room to save")
    assert "Traceback" not in server.log.read_text()


def append_to_cell(client: RoomClient, index: int, text: str) -> None:
    with client.shared.ydoc.transaction():
        source = cells_of(client)[index]["source"]
        source += text


def readable(client: RoomClient) -> list[str] | None:
    """The client's sources, if jupyter_ydoc can read its notebook (None while it cannot)."""
    try:
        return sources(client)
    except (AttributeError, KeyError, TypeError):
        return None


def saved_sources(path: Path) -> list[str] | None:
    """The file's sources once it is a valid notebook (nbformat's own schema)."""
    notebook = nbformat.reads(path.read_text(), as_version=nbformat.NO_CONVERT)
    nbformat.validate(notebook)
    return sources_on_disk(path)


async def test_cells_as_jupyterlab_makes_them_are_taken(
    server: RunningServer, api: httpx.Client
) -> None:
    path = write(server.root / "rooms" / "jupyterlab-shapes.ipynb", notebook_bytes("x"))
    name, session = open_session(api, "rooms/jupyterlab-shapes.ipynb")
    png = {"image/png": "iVBORw0KGgo="}
    async with room_client(server, name, session) as ada, room_client(server, name, session) as bob:
        cells = cells_of(ada)
        with ada.shared.ydoc.transaction():
            cells[0]["execution_state"] = "running"
            cells[0]["execution_count"] = 3.0  # Yjs numbers are floats
            cells.append(jupyterlab_cell("md", "markdown", "![a](attachment:a.png)"))
            cells[1]["attachments"] = {"a.png": png}
            cells.append(jupyterlab_cell("raw", "raw", "raw text"))
        await eventually(lambda: len(cells_of(bob)) == 3, "bob to hold the new cells")
        await eventually(lambda: saved_types(path) == ["code", "markdown", "raw"], "a save")
        assert ada.connection.close_code is None
    saved = nbformat.reads(path.read_text(), as_version=nbformat.NO_CONVERT)
    assert saved.cells[0].execution_count == 3
    assert saved.cells[1].attachments == {"a.png": png}
    assert "outputs" not in saved.cells[2]


def jupyterlab_cell(cell_id: str, cell_type: str, source: str) -> Map:
    """A raw or markdown cell as JupyterLab's frontend makes one: no outputs, no count."""
    return Map({"id": cell_id, "cell_type": cell_type, "source": Text(source), "metadata": Map()})


def saved_types(path: Path) -> list[str] | None:
    notebook = nbformat.reads(path.read_text(), as_version=nbformat.NO_CONVERT)
    nbformat.validate(notebook)
    return [cell.cell_type for cell in notebook.cells]


async def test_a_cell_read_with_a_key_of_another_tools_keeps_taking_edits(
    server: RunningServer, api: httpx.Client
) -> None:
    notebook = nbformat.reads(notebook_bytes("x").decode(), as_version=4)
    notebook.cells[0]["collapsed"] = True  # nbformat 3's, kept by tools that upgraded the file
    path = write(server.root / "rooms" / "extra-key.ipynb", json.dumps(notebook).encode())
    name, session = open_session(api, "rooms/extra-key.ipynb")
    async with room_client(server, name, session) as ada:
        cells_of(ada)[0]["execution_count"] = 7
        await eventually(lambda: saved_cell(path)["execution_count"] == 7, "the room to save")
        assert ada.connection.close_code is None
    assert saved_cell(path)["collapsed"] is True


def saved_cell(path: Path) -> dict[str, object]:
    first: dict[str, object] = json.loads(path.read_text())["cells"][0]
    return first
