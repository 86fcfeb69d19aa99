"""A viewer in JupyterLab: a user the Authorizer lets do everything but write contents.

Two real JupyterLab pages on one notebook, the owner's and the viewer's: the viewer watches the
owner type, live; what the viewer types snaps back, and reaches neither the file nor the owner.
"""

from __future__ import annotations

import dataclasses
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell
from playwright.sync_api import Browser, expect

from tests.browser.conftest import stop_within_deadline
from tests.browser.lab import LabPage, sources_on_disk, wait_for_disk, write_notebook
from tests.serve.conftest import RunningServer, jupyter_env, start_server
from tests.serve.roles import SERVER_OPTIONS, token_of

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[RunningServer]:
    """A server with ``tests.serve.roles``'s users and Authorizer."""
    root = tmp_path / "root"
    root.mkdir()
    env = jupyter_env(tmp_path / "jupyter", PYTHONPATH=str(REPO))
    running = start_server(root, env, *SERVER_OPTIONS)
    yield running
    stop_within_deadline(running)


def as_user(server: RunningServer, name: str) -> RunningServer:
    parts = urllib.parse.urlsplit(server.url)
    query = urllib.parse.urlencode({"token": token_of(name)})
    return dataclasses.replace(server, url=parts._replace(query=query).geturl())


@pytest.fixture
def pages(browser: Browser, served: RunningServer) -> Iterator[tuple[LabPage, LabPage]]:
    """The owner's page (the server's own token) and the viewer's, each in its own context."""
    contexts = [browser.new_context(viewport={"width": 1280, "height": 720}) for _ in range(2)]
    write_notebook(served.root / "lesson.ipynb", new_code_cell("x = 1"))
    owner = LabPage.record(contexts[0], served, "lesson.ipynb").open()
    viewer = LabPage.record(contexts[1], as_user(served, "viewer"), "lesson.ipynb").open()
    yield owner, viewer
    for context in contexts:
        context.close()


def test_a_viewer_watches_live_and_changes_nothing(
    served: RunningServer, pages: tuple[LabPage, LabPage]
) -> None:
    owner, viewer = pages
    path = owner.file

    owner.type_at_end(owner.cell_editor(0), " + 2")
    expect(viewer.cell_editor(0)).to_have_text("x = 1 + 2")
    wait_for_disk(path, sources_on_disk, ["x = 1 + 2"])

    # JupyterLab's collaborative editor still takes keys (jupyterlab#18369): the room undoes
    # each edit, so the viewer's cell snaps back.
    viewer.type_at_end(viewer.cell_editor(0), " # viewer")
    expect(viewer.cell_editor(0)).to_have_text("x = 1 + 2")
    expect(owner.cell_editor(0)).to_have_text("x = 1 + 2")
    owner.type_at_end(owner.cell_editor(0), " + 3")
    wait_for_disk(path, sources_on_disk, ["x = 1 + 2 + 3"])
    expect(viewer.cell_editor(0)).to_have_text("x = 1 + 2 + 3")
    expect(owner.cell_editor(0)).to_have_text("x = 1 + 2 + 3")
