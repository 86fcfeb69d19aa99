"""Document rooms through JupyterLab's own collaboration frontend (jupyter-docprovider).

Each test opens real JupyterLab pages in Chromium on a real ``ganymede serve`` and checks what a
person sees and what lands on disk; nothing here speaks the room protocol itself.
"""

from __future__ import annotations

import re
import time
import urllib.parse
from pathlib import Path

import httpx
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell
from playwright.sync_api import expect

from tests.browser.conftest import OpenLab
from tests.browser.lab import expect_source, sources_on_disk, wait_for_disk, write_notebook
from tests.serve.conftest import RunningServer
from tests.serve.test_metrics import figures, value

pytestmark = pytest.mark.slow

DIRTY = re.compile(r"\bjp-mod-dirty\b")


def test_a_notebook_opens_through_its_room(served: RunningServer, lab_page: OpenLab) -> None:
    write_notebook(
        served.root / "opened.ipynb",
        new_code_cell("total = 1\nprint(total)"),
        new_markdown_cell("# A title"),
    )
    lab = lab_page("opened.ipynb")

    session = lab.session_reply()
    assert (session["format"], session["type"]) == ("json", "notebook")
    sockets = lab.room_websockets(f"json:notebook:{session['fileId']}")
    assert sockets, f"no room websocket\n{lab.diagnostics()}"
    for socket in sockets:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(socket.url).query)
        assert query["sessionId"] == [session["sessionId"]]
    assert not sockets[-1].is_closed(), lab.diagnostics()
    expect_source(lab.cell_editor(0), "total = 1\nprint(total)")
    expect(lab.cells.nth(1).locator(".jp-RenderedMarkdown h1")).to_contain_text("A title")


def test_typing_in_a_cell_reaches_the_file(served: RunningServer, lab_page: OpenLab) -> None:
    cells = [new_code_cell("x = 1"), new_code_cell("y = 2")]
    path = write_notebook(served.root / "typed.ipynb", *cells)
    lab = lab_page("typed.ipynb")

    lab.type_at_end(lab.cell_editor(1), " + 40")

    wait_for_disk(path, sources_on_disk, ["x = 1", "y = 2 + 40"])


def test_two_pages_see_each_others_typing(served: RunningServer, lab_page: OpenLab) -> None:
    write_notebook(served.root / "shared.ipynb", new_code_cell("x = 1"))
    first = lab_page("shared.ipynb")
    second = lab_page("shared.ipynb")

    first.type_at_end(first.cell_editor(0), " + 2")
    expect(second.cell_editor(0)).to_have_text("x = 1 + 2")

    second.type_at_end(second.cell_editor(0), " + 3")
    expect(first.cell_editor(0)).to_have_text("x = 1 + 2 + 3")


def test_ctrl_s_after_an_autosave_saves_without_a_file_changed_dialog(
    served: RunningServer, lab_page: OpenLab
) -> None:
    path = write_notebook(served.root / "saved.ipynb", new_code_cell("x = 1"))
    lab = lab_page("saved.ipynb")
    editor = lab.cell_editor(0)
    # The autosave changes the file under JupyterLab, which still holds the hash it opened with
    # unless the room tells it the new one: a stale hash is what raises "File Changed".
    lab.type_at_end(editor, " + 1")
    wait_for_disk(path, sources_on_disk, ["x = 1 + 1"])
    lab.type_at_end(editor, " + 2")
    expect(lab.document_tab).to_have_class(DIRTY)

    lab.page.keyboard.press("Control+s")

    dialog = lab.page.locator(".jp-Dialog")
    expect(dialog.or_(lab.page.get_by_text("Saving completed")).first).to_be_visible()
    assert dialog.count() == 0, f"JupyterLab asked: {dialog.first.inner_text()}"
    expect(lab.document_tab).not_to_have_class(DIRTY)
    saves = [reply for reply in lab.raw_replies if reply.get("type") == "save"]
    assert [reply["status"] for reply in saves] == ["success"], lab.diagnostics()
    assert sources_on_disk(path) == ["x = 1 + 1 + 2"]


def test_a_text_file_opens_through_its_room_and_an_edit_reaches_it(
    served: RunningServer, lab_page: OpenLab
) -> None:
    path: Path = served.root / "script.py"
    path.write_text("print(1)\n")
    lab = lab_page("script.py")

    session = lab.session_reply()
    assert (session["format"], session["type"]) == ("text", "file")
    assert lab.room_websockets(f"text:file:{session['fileId']}"), lab.diagnostics()

    lab.type_at_end(lab.file_editor, "x = 2")

    wait_for_disk(path, Path.read_text, "print(1)\nx = 2")


@pytest.mark.parametrize("served", ["[serve]\npack_idle_after = 0.5\n"], indirect=True)
def test_pages_edit_on_after_their_idle_room_packed_its_document(
    served: RunningServer, lab_page: OpenLab
) -> None:
    """Each pause packs the room's document away; the next keystroke's update rebuilds it, and
    neither page notices: no reload, no dialog, each sees the other's typing."""
    path = write_notebook(served.root / "paused.ipynb", new_code_cell("x = 1"))
    first, second = lab_page("paused.ipynb"), lab_page("paused.ipynb")
    with served.client() as api:
        for page, other, typed in ((first, second, " + 2"), (second, first, " + 3")):
            wait_until_packed(api)
            page.type_at_end(page.cell_editor(0), typed)
            expect(other.cell_editor(0)).to_contain_text(typed)
        wait_for_disk(path, sources_on_disk, ["x = 1 + 2 + 3"])
        wait_until_packed(api)
    name = f"json:notebook:{first.session_reply()['fileId']}"
    for page in (first, second):
        sockets = page.room_websockets(name)
        assert len(sockets) == 1 and not sockets[0].is_closed(), page.diagnostics()
        assert page.page.locator(".jp-Dialog").count() == 0


@pytest.mark.parametrize("served", ["[serve]\npack_idle_after = 2\n"], indirect=True)
def test_clicking_into_a_cell_rebuilds_a_packed_document_before_the_first_keystroke(
    served: RunningServer, lab_page: OpenLab
) -> None:
    """JupyterLab tells the room where the cursor went (its awareness) when a person clicks
    into a cell: the room rebuilds its document then, not on the keystroke after."""
    write_notebook(served.root / "clicked.ipynb", new_code_cell("x = 1"))
    lab = lab_page("clicked.ipynb")
    with served.client() as api:
        wait_until_packed(api)
        lab.cell_editor(0).click()
        deadline = time.monotonic() + 30
        while value(figures(api), "ganymede_room_documents_packed") != 0:
            assert time.monotonic() < deadline, "the click left the document packed"
            time.sleep(0.05)


def wait_until_packed(api: httpx.Client) -> None:
    deadline = time.monotonic() + 30
    while value(figures(api), "ganymede_room_documents_packed") != 1:
        assert time.monotonic() < deadline, "the idle room never packed its document"
        time.sleep(0.1)
