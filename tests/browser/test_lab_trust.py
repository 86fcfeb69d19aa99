"""A signed notebook's HTML runs its scripts in JupyterLab opened through a room, after a reload
too; an unsigned or tampered one's output is shown sanitised and its scripts never run. A cell
JupyterLab runs over the kernel websocket (its outputs written into the room by the page) gets
the file signed."""

from __future__ import annotations

import nbformat
import pytest
from nbformat.sign import NotebookNotary
from nbformat.v4 import new_code_cell, new_output
from playwright.sync_api import expect

from tests.browser.conftest import OpenLab
from tests.browser.lab import LabPage, wait_for_disk, write_notebook
from tests.serve.conftest import RunningServer

pytestmark = pytest.mark.slow

# A script that leaves a mark on the page: it runs only when JupyterLab trusts the output.
SCRIPT_HTML = (
    "<div class='gm-shown'>rich output</div>"
    "<script>document.body.setAttribute('data-gm-script-ran', 'yes')</script>"
)


def html_cell(html: str) -> nbformat.NotebookNode:
    cell = new_code_cell("show()", execution_count=1)
    cell.outputs = [new_output("display_data", data={"text/html": html, "text/plain": "plain"})]
    return cell


def signed(server: RunningServer, path_name: str) -> bool:
    data_dir = server.root.parent / "jupyter" / "data"
    with NotebookNotary(data_dir=str(data_dir)) as notary:
        notebook = nbformat.read(server.root / path_name, as_version=4)
        return bool(notary.check_signature(notebook))


def sign_for(server: RunningServer, path_name: str) -> None:
    """Signed in the server's own signature store (its Jupyter data dir)."""
    path = server.root / path_name
    data_dir = server.root.parent / "jupyter" / "data"
    with NotebookNotary(data_dir=str(data_dir)) as notary:
        notary.sign(nbformat.read(path, as_version=4))


def shown_output(lab: LabPage) -> None:
    expect(lab.cells.nth(0).locator(".jp-OutputArea-output")).to_contain_text("rich output")


def script_ran(lab: LabPage) -> bool:
    return lab.page.evaluate("document.body.getAttribute('data-gm-script-ran')") == "yes"


def test_a_signed_notebooks_scripts_run_after_a_reload(
    served: RunningServer, lab_page: OpenLab
) -> None:
    write_notebook(served.root / "signed.ipynb", html_cell(SCRIPT_HTML))
    sign_for(served, "signed.ipynb")
    lab = lab_page("signed.ipynb")
    shown_output(lab)
    expect(lab.page.locator("body")).to_have_attribute("data-gm-script-ran", "yes")

    lab.open()  # loaded again while the room stays open: the page gets the room's document
    shown_output(lab)
    expect(lab.page.locator("body")).to_have_attribute("data-gm-script-ran", "yes")


@pytest.mark.parametrize("how", ["unsigned", "tampered"])
def test_an_untrusted_notebooks_scripts_never_run(
    served: RunningServer, lab_page: OpenLab, how: str
) -> None:
    path = write_notebook(served.root / f"{how}.ipynb", html_cell(SCRIPT_HTML))
    if how == "tampered":
        sign_for(served, path.name)
        path.write_text(path.read_text().replace("rich output", "rich output, changed"))
    lab = lab_page(path.name)
    shown_output(lab)
    assert not script_ran(lab)


@pytest.mark.parametrize("served", ["[serve]\nserver_side_execution = false\n"], indirect=True)
def test_a_cell_run_over_the_kernel_websocket_gets_the_file_signed(
    served: RunningServer, lab_page: OpenLab
) -> None:
    """Without server-side execution the page runs the cell and writes its outputs into the
    room itself: the server saw them come from its kernel, so they are trusted."""
    source = f"from IPython.display import HTML\nHTML({SCRIPT_HTML!r})"
    path = write_notebook(served.root / "ran.ipynb", new_code_cell(source))
    lab = lab_page("ran.ipynb")
    lab.cell_editor(0).click()
    lab.page.keyboard.press("Control+Enter")
    shown_output(lab)
    wait_for_disk(path, lambda p: "gm-script-ran" in p.read_text(), True)
    assert not [request for request in lab.requests if request.url.endswith("/execute")]
    wait_for_disk(path, lambda _: signed(served, path.name), True)

    lab.open()  # a page opened on the room now trusts the output too
    shown_output(lab)
    expect(lab.page.locator("body")).to_have_attribute("data-gm-script-ran", "yes")
