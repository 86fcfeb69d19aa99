"""Notebook 7 (``jupyter notebook``) on Ganymede: the page a user of the ``notebook`` package gets.

The server is ``jupyter notebook`` itself, started as a user starts it, with nothing of Ganymede's
on its command line: the environment's config enables Ganymede's extension, and Notebook 7's page
loads the same collaboration frontend (jupyter-docprovider) JupyterLab does. Each test checks what
a person sees in the pages and what lands on disk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell
from playwright.sync_api import Browser, expect

from tests.browser.conftest import empty_root, opened_pages
from tests.browser.lab import (
    STEP_TIMEOUT_MS,
    NotebookPage,
    expect_source,
    sources_on_disk,
    wait_for_disk,
    write_notebook,
)
from tests.browser.test_lab_execution import (
    CONNECTED,
    cell_id,
    cells_on_disk,
    is_execute,
    stdout_on_disk,
)
from tests.serve.conftest import RunningServer, jupyter_env
from tests.serve.plain_server import start_jupyter_server, stop_plain_server

pytestmark = pytest.mark.slow

NO_AUTOSAVE = "[serve]\nsave_delay = 60.0\n"
"""A page's edit stays unsaved until something else makes the room save."""

OpenNotebook = Callable[[str], NotebookPage]


@pytest.fixture
def notebook_server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[RunningServer]:
    """``jupyter notebook`` (the module its command runs) serving an empty root of its own."""
    root = empty_root(tmp_path, request)
    running = start_jupyter_server(root, jupyter_env(tmp_path / "jupyter"), module="notebook")
    yield running
    stop_plain_server(running)


@pytest.fixture
def notebook_page(
    request: pytest.FixtureRequest, browser: Browser, notebook_server: RunningServer
) -> Iterator[OpenNotebook]:
    """Opens a notebook of the served root in Notebook 7, each call in a browser context of its
    own; the page has shown every cell from the notebook's room and its kernel is idle."""
    with opened_pages(request, browser, notebook_server, NotebookPage) as open_notebook:
        yield open_notebook


def test_two_pages_type_into_each_other_and_the_edits_reach_the_file(
    notebook_server: RunningServer, notebook_page: OpenNotebook
) -> None:
    path = write_notebook(notebook_server.root / "shared.ipynb", new_code_cell("x = 1"))
    first = notebook_page("shared.ipynb")
    second = notebook_page("shared.ipynb")

    for page in (first, second):
        session = page.session_reply()
        sockets = page.room_websockets(f"json:notebook:{session['fileId']}")
        assert sockets and not sockets[-1].is_closed(), page.diagnostics()
    first.type_at_end(first.cell_editor(0), " + 2")
    expect_source(second.cell_editor(0), "x = 1 + 2")
    second.type_at_end(second.cell_editor(0), " + 3")
    expect_source(first.cell_editor(0), "x = 1 + 2 + 3")

    wait_for_disk(path, sources_on_disk, ["x = 1 + 2 + 3"])


@pytest.mark.parametrize("notebook_server", [NO_AUTOSAVE], indirect=True)
def test_a_change_on_disk_shows_in_the_pages_beside_an_unsaved_edit(
    notebook_server: RunningServer, notebook_page: OpenNotebook
) -> None:
    path = write_notebook(
        notebook_server.root / "merged.ipynb", new_code_cell("x = 1"), new_code_cell("y = 2")
    )
    editing = notebook_page("merged.ipynb")
    watching = notebook_page("merged.ipynb")
    editing.type_at_end(editing.cell_editor(0), " + 1")
    expect_source(watching.cell_editor(0), "x = 1 + 1")  # the room has the edit
    assert sources_on_disk(path) == ["x = 1", "y = 2"], "the edit was saved before the change"

    # Another program (an agent, an editor) rewrites the other cell in the file.
    notebook = nbformat.reads(path.read_text(), as_version=4)
    notebook.cells[1].source = "y = 20"
    path.write_text(nbformat.writes(notebook) + "\n")

    for page in (editing, watching):
        expect_source(page.cell_editor(1), "y = 20")
        expect_source(page.cell_editor(0), "x = 1 + 1")
    # Having taken the change in, the room saves what it had that the file lacked.
    wait_for_disk(path, sources_on_disk, ["x = 1 + 1", "y = 20"])
    for page in (editing, watching):
        assert page.page.locator(".jp-Dialog").count() == 0, page.diagnostics()


def test_a_cell_run_from_the_page_runs_on_the_server_and_shows_in_both_pages(
    notebook_server: RunningServer, notebook_page: OpenNotebook
) -> None:
    source = 'import time; time.sleep(3); print("done")'
    path = write_notebook(notebook_server.root / "ran.ipynb", new_code_cell(source))
    running = notebook_page("ran.ipynb")
    watching = notebook_page("ran.ipynb")
    document_id = f"json:notebook:{running.session_reply()['fileId']}"

    running.cell_editor(0).click()
    with running.page.expect_request(is_execute) as posted:
        running.page.keyboard.press("Control+Enter")  # run in place, no new cell
    running.page.close()  # the cell sleeps on with its page gone

    assert posted.value.post_data_json == {"cell_id": cell_id(path, 0), "document_id": document_id}
    output = watching.cells.nth(0).locator(".jp-OutputArea-output")
    expect(output).to_have_text("done", timeout=STEP_TIMEOUT_MS)
    wait_for_disk(path, stdout_on_disk, ["done\n"])
    assert cells_on_disk(path)[0]["execution_count"] == 1
    assert CONNECTED in notebook_server.log.read_text(), "the server never ran the cell itself"
