"""JupyterLab with jupyter-server-documents installed beside Ganymede (older jupyter-ai 3
releases pull it in): its frontend would open every document through its own server side, which
Ganymede keeps disabled, so the page keeps it out and documents still open through rooms."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell
from playwright.sync_api import Browser

from tests.browser.conftest import stop_within_deadline
from tests.browser.lab import LabPage, expect_source, sources_on_disk, wait_for_disk, write_notebook
from tests.serve.conftest import RunningServer, jupyter_env, start_server
from tests.serve.plain_server import SERVER_DOCUMENTS_PACKAGES, apart_env, install_apart

pytestmark = pytest.mark.slow


@pytest.fixture
def served_beside_server_documents(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningServer]:
    installed = install_apart(tmp_path_factory.mktemp("apart"), *SERVER_DOCUMENTS_PACKAGES)
    root = tmp_path / "root"
    root.mkdir()
    running = start_server(root, apart_env(jupyter_env(tmp_path / "jupyter"), installed))
    yield running
    stop_within_deadline(running)


def test_a_notebook_opens_through_its_room_and_typing_reaches_the_file(
    browser: Browser, served_beside_server_documents: RunningServer
) -> None:
    served = served_beside_server_documents
    path = write_notebook(served.root / "beside.ipynb", new_code_cell("x = 1"))
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        lab = LabPage.record(context, served, "beside.ipynb").open()
        session = lab.session_reply()
        sockets = lab.room_websockets(f"json:notebook:{session['fileId']}")
        assert sockets and not sockets[-1].is_closed(), lab.diagnostics()
        lab.type_at_end(lab.cell_editor(0), "0")
        expect_source(lab.cell_editor(0), "x = 10")
        wait_for_disk(path, sources_on_disk, ["x = 10"])
    finally:
        context.close()
