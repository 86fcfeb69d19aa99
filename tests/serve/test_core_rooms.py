"""The server's notebooks core reads open rooms: unsaved edits show in read, results and search.

The server runs in this test's own event loop (no HTTP door reads the core yet), reached
through ``context.notebooks``; a room client edits over a real websocket meanwhile.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import nbformat
import pytest
from nbformat.sign import NotebookNotary
from nbformat.v4 import new_code_cell, new_notebook, new_output

from ganymede.notebook.results import RESULT_MIME
from ganymede.serve.app import (
    DISABLED_EXTENSIONS,
    EXTENSION,
    GanymedeServerApp,
    ServeOptions,
    server_argv,
)
from ganymede.serve.contents import GanymedeContentsManager
from ganymede.serve.context import SETTINGS_KEY, GanymedeContext
from tests.serve.conftest import RunningServer
from tests.serve.rooms.client import eventually, room_client
from tests.serve.rooms.conftest import edit_first_cell

TOKEN = "in-process"
# Autosave waits longer than any test: what the core sees of an edit comes from the room.
NO_AUTOSAVE = "[serve]\nsave_delay = 600.0\n"


class InProcessServer:
    """A ganymede ServerApp serving ``root`` on a loopback port, in the running event loop;
    ``extensions``: other server extensions it loads beside Ganymede's, ``argv`` options."""

    def __init__(
        self, root: Path, extensions: tuple[str, ...] = (), argv: tuple[str, ...] = ()
    ) -> None:
        enabled = dict.fromkeys((EXTENSION, *extensions), True)
        self.app = GanymedeServerApp(
            jpserver_extensions=enabled | dict.fromkeys(DISABLED_EXTENSIONS, False),
            contents_manager_class=GanymedeContentsManager,
        )
        self.app.init_signal = lambda: None  # type: ignore[method-assign]  # the test's signals
        options = ServeOptions(root=root, ip="127.0.0.1", port=0, open_browser=False, token=TOKEN)
        self.app.initialize(argv=[*server_argv(options), *argv], find_extensions=False)
        self.root = root

    @property
    def context(self) -> GanymedeContext:
        context = self.app.web_app.settings[SETTINGS_KEY]
        assert isinstance(context, GanymedeContext)
        return context

    @property
    def running(self) -> RunningServer:
        """What the room client needs of a server: its URL and token (no process of its own)."""
        url = f"http://127.0.0.1:{self.app.port}/lab?token={TOKEN}"
        return RunningServer(process=None, root=self.root, url=url, log=None)  # type: ignore[arg-type]

    def client(self) -> httpx.AsyncClient:
        headers = {"Authorization": f"token {TOKEN}"}
        return httpx.AsyncClient(base_url=self.running.base, headers=headers, timeout=30)

    async def open_session(self, path: str) -> tuple[str, str]:
        """The room name and session id of ``path``, as the docprovider asks for them."""
        segment = urllib.parse.quote(path, safe="")
        async with self.client() as api:
            answer = await api.put(
                f"api/collaboration/session/{segment}", json={"format": "json", "type": "notebook"}
            )
        assert answer.status_code in (200, 201), answer.text
        reply = answer.json()
        return f"json:notebook:{reply['fileId']}", reply["sessionId"]


@pytest.fixture
async def server(tmp_path: Path, isolated_jupyter: Path) -> AsyncIterator[InProcessServer]:
    root = tmp_path / "root"
    root.mkdir()
    (root / "ganymede.toml").write_text(NO_AUTOSAVE)
    running = InProcessServer(root)
    try:
        yield running
    finally:
        await running.app._cleanup()


def write_notebook(path: Path) -> Path:
    """A notebook whose first code cell computes ``x`` and whose second records it as a result."""
    first = new_code_cell("x = 1", execution_count=1)
    second = new_code_cell("result('answer', x)", execution_count=2)
    second.outputs = [result_output("answer", 1)]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(new_notebook(cells=[first, second]), path)
    return path


def result_output(name: str, value: Any) -> dict[str, Any]:
    """A named result as ``ganymede.kernel.result`` writes it."""
    data = {RESULT_MIME: {"name": name, "value": value}, "text/plain": json.dumps(value)}
    return new_output("display_data", data=data)  # type: ignore[no-any-return]


async def test_read_results_and_search_see_a_rooms_unsaved_edit(server: InProcessServer) -> None:
    path = write_notebook(server.root / "sub" / "live.ipynb")
    with NotebookNotary() as notary:  # signed: the room marks its code cells trusted
        notary.sign(nbformat.read(path, as_version=4))
    before = path.read_bytes()
    notebooks = server.context.notebooks
    assert notebooks is not None
    assert notebooks.results("sub/live.ipynb") == {"answer": 1}

    name, session = await server.open_session("sub/live.ipynb")
    async with room_client(server.running, name, session) as ada:
        edit_first_cell(ada, "  # edited live")
        with ada.shared.ydoc.transaction():
            outputs = ada.shared.ycells[1]["outputs"]  # type: ignore[attr-defined]
            outputs.clear()
            outputs.extend(ada.shared._create_youtputs([result_output("answer", 42)]))  # type: ignore[attr-defined]

        # The server shares this loop: waiting lets it take the client's edit in.
        await eventually(
            lambda: notebooks.results("sub/live.ipynb") == {"answer": 42}, "the room's edit"
        )
        read = notebooks.read("sub/live.ipynb")
        first = read["notebook"]["cells"][0]
        assert first["source"] == "x = 1  # edited live"
        assert set(read["hashes"]) == {cell["id"] for cell in read["notebook"]["cells"]}
        assert ada.shared.get()["cells"][0]["metadata"] == {"trusted": True}
        assert [cell["metadata"] for cell in read["notebook"]["cells"]] == [{}, {}]  # JSON as filed
        assert notebooks.results("sub/live.ipynb") == {"answer": 42}
        found = notebooks.search("edited live")
        assert [(hit["path"], hit["index"]) for hit in found["hits"]] == [("sub/live.ipynb", 0)]
        assert path.read_bytes() == before  # all of it from the room: nothing saved yet
    assert notebooks.search("nowhere to be found")["total"] == 0
