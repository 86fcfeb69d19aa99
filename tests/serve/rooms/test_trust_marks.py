"""JupyterLab renders a cell's HTML and scripts only if the cell's ``metadata.trusted`` says so
when it builds the cell: the room marks the code cells whose outputs it trusts."""

from __future__ import annotations

from pathlib import Path

import httpx
import nbformat
import pytest
from jupyter_ydoc import YNotebook

from tests.serve.conftest import RunningServer
from tests.serve.rooms.client import RoomClient, eventually, room_client
from tests.serve.rooms.conftest import open_session
from tests.serve.rooms.test_trust import notary, notebook_with_html, post_trust

HTML = "<b>shown</b>"


def marks(client: RoomClient) -> list[object]:
    """Each code cell's ``metadata.trusted`` as the client's document holds it (None: unset)."""
    notebook: YNotebook = client.shared  # type: ignore[assignment]
    return [
        cell["metadata"].get("trusted")
        for cell in notebook.get()["cells"]
        if cell["cell_type"] == "code"
    ]


def sign(server: RunningServer, path: Path) -> None:
    with notary(server) as server_notary:
        server_notary.sign(nbformat.read(path, as_version=4))


async def test_a_signed_notebook_opens_with_every_code_cell_marked_trusted(
    server: RunningServer, api: httpx.Client
) -> None:
    path = notebook_with_html(server, "marks/signed.ipynb", HTML, "<i>two</i>")
    sign(server, path)
    before = path.read_bytes()
    name, session = open_session(api, "marks/signed.ipynb")
    async with room_client(server, name, session) as ada:
        assert marks(ada) == [True, True]
        assert ada.shared.get()["cells"][0]["metadata"] == {}  # markdown cells are never marked
        assert ada.shared.ystate["dirty"] is False  # marking is not an edit
    assert path.read_bytes() == before  # nor is it saved


@pytest.mark.parametrize("how", ["unsigned", "tampered"])
async def test_an_untrusted_notebook_opens_unmarked(
    server: RunningServer, api: httpx.Client, how: str
) -> None:
    path = notebook_with_html(server, f"marks/{how}.ipynb", HTML)
    if how == "tampered":
        sign(server, path)
        path.write_text(path.read_text().replace(HTML, "<script>steal()</script>"))
    name, session = open_session(api, f"marks/{how}.ipynb")
    async with room_client(server, name, session) as ada:
        assert marks(ada) == [None]


async def test_trust_notebook_marks_the_cells_of_clients_already_there(
    server: RunningServer, api: httpx.Client
) -> None:
    path = notebook_with_html(server, "marks/trusted-later.ipynb", HTML)
    name, session = open_session(api, "marks/trusted-later.ipynb")
    async with room_client(server, name, session) as ada:
        assert marks(ada) == [None]
        assert post_trust(api, "marks/trusted-later.ipynb").status_code == 201
        await eventually(lambda: marks(ada) == [True], "the trust mark")
    with notary(server) as server_notary:
        assert server_notary.check_signature(nbformat.read(path, as_version=4))


async def test_outputs_taken_in_from_an_unsigned_file_lose_the_mark(
    server: RunningServer, api: httpx.Client
) -> None:
    path = notebook_with_html(server, "marks/taken-in.ipynb", HTML, "<i>kept</i>")
    sign(server, path)
    name, session = open_session(api, "marks/taken-in.ipynb")
    async with room_client(server, name, session) as ada:
        assert marks(ada) == [True, True]
        theirs = nbformat.read(path, as_version=4)
        theirs.cells[1].outputs[0]["data"]["text/html"] = "<script>steal()</script>"
        nbformat.write(theirs, path)  # another program, unsigned
        await eventually(lambda: marks(ada) == [None, True], "the first cell to lose its mark")
