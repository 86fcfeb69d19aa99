"""Cells run from JupyterLab with its server-side executor on: the execute endpoint runs them.

The page config turns on the docprovider's executor, which posts ``{"cell_id", "document_id"}`` to
``POST /api/kernels/{id}/execute`` for each cell and reads the answer's status as the cell's
success. The tests watch those requests on the page and what reaches the file on disk.
"""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell
from playwright.sync_api import Request

from tests.browser.conftest import OpenLab
from tests.browser.lab import LabPage, wait_for_disk, write_notebook
from tests.serve.conftest import RunningServer

pytestmark = pytest.mark.slow

EXECUTE_PATH = re.compile(r"/api/kernels/[0-9a-f-]+/execute$")
CONNECTED = "execute: connected to the kernel"


def is_execute(request: Request) -> bool:
    path = urllib.parse.urlsplit(request.url).path
    return request.method == "POST" and EXECUTE_PATH.search(path) is not None


def execute_requests(lab: LabPage) -> list[Request]:
    return [request for request in lab.requests if is_execute(request)]


def cells_on_disk(path: Path) -> list[dict[str, Any]]:
    return list(nbformat.reads(path.read_text(), as_version=4).cells)


def stdout_on_disk(path: Path) -> list[str]:
    """Each cell's printed text, as saved."""
    return [
        "".join(o.get("text", "") for o in cell["outputs"] if o["output_type"] == "stream")
        for cell in cells_on_disk(path)
    ]


def runs_on_disk(path: Path) -> list[tuple[bool, list[str]]]:
    """Per cell: whether it has a count, and the types of its outputs."""
    return [
        (cell["execution_count"] is not None, [o["output_type"] for o in cell["outputs"]])
        for cell in cells_on_disk(path)
    ]


def test_a_cell_run_from_the_page_finishes_on_the_server_after_the_page_closed(
    served: RunningServer, lab_page: OpenLab
) -> None:
    source = 'import time; time.sleep(3); print("done")'
    path = write_notebook(served.root / "slow.ipynb", new_code_cell(source))
    lab = lab_page("slow.ipynb")
    document_id = f"json:notebook:{lab.session_reply()['fileId']}"

    lab.cell_editor(0).click()
    with lab.page.expect_request(is_execute) as posted:
        lab.page.keyboard.press("Control+Enter")  # run in place, no new cell
    lab.page.close()  # no client is left in the room while the cell sleeps

    assert posted.value.post_data_json == {"cell_id": cell_id(path, 0), "document_id": document_id}
    wait_for_disk(path, stdout_on_disk, ["done\n"])
    assert cells_on_disk(path)[0]["execution_count"] == 1
    assert CONNECTED in served.log.read_text(), "the server never opened its own kernel client"


def test_run_all_stops_at_the_cell_that_raises(served: RunningServer, lab_page: OpenLab) -> None:
    marker = served.root / "third-ran"
    cells = [
        new_code_cell("print('one')"),
        new_code_cell("raise ValueError('two')"),
        new_code_cell(f"open({str(marker)!r}, 'w').close()\nprint('three')"),
    ]
    path = write_notebook(served.root / "stops.ipynb", *cells)
    lab = lab_page("stops.ipynb")

    lab.page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    lab.page.locator(".lm-Menu-item", has_text="Run All Cells").first.click()

    wait_for_disk(path, runs_on_disk, [(True, ["stream"]), (True, ["error"]), (False, [])])
    posted = execute_requests(lab)
    answers = {request.post_data_json["cell_id"]: request.response() for request in posted}
    ids = [cell_id(path, index) for index in range(3)]
    assert answers[ids[0]] is not None and answers[ids[0]].status == 200, lab.diagnostics()
    assert answers[ids[1]] is not None and answers[ids[1]].status == 422, lab.diagnostics()
    assert answers[ids[1]].json()["ename"] == "ValueError"
    third = answers.get(ids[2])
    assert third is None or (third is not None and not third.ok), lab.diagnostics()
    # Every request has its answer: nothing is left to run the third cell.
    assert not marker.exists()
    assert runs_on_disk(path)[2] == (False, [])
    assert stdout_on_disk(path)[0] == "one\n"


def cell_id(path: Path, index: int) -> str:
    return str(cells_on_disk(path)[index]["id"])
