"""JupyterLab's form (``{"cell_id", "document_id"}``, one request per cell, sent all at once):
requests waiting together run in the notebook's order, and a failure aborts those still waiting."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.serve.conftest import RunningServer
from tests.serve.execution.conftest import STARTUP, add_notebook, room_cells
from tests.serve.rooms.client import eventually, room_client
from tests.serve.rooms.conftest import open_session

pytestmark = pytest.mark.slow


async def test_cells_sent_together_run_in_notebook_order_and_stop_at_the_first_error(
    server: RunningServer, api: httpx.Client, endpoint: httpx.AsyncClient, kernel: str
) -> None:
    go, marker = server.root / "go", server.root / "third-ran"
    gate = f"import os, time\nwhile not os.path.exists({str(go)!r}):\n    time.sleep(0.01)"
    sources = {
        "gate": gate,
        "first": "print('first')",
        "second": "raise ValueError('second')",
        "third": f"open({str(marker)!r}, 'w').close()",
    }
    document = add_notebook(server, api, "together.ipynb", **sources)
    _, session = open_session(api, "together.ipynb")
    url = f"api/kernels/{kernel}/execute"

    def post(cell_id: str) -> asyncio.Task[httpx.Response]:
        body = {"cell_id": cell_id, "document_id": document}
        return asyncio.create_task(endpoint.post(url, json=body))

    async with room_client(server, document, session) as ada:

        def state(index: int) -> str:
            return str(room_cells(ada)[index].get("execution_state"))

        gated = post("gate")
        await eventually(lambda: room_cells(ada)[0]["execution_count"], "the gate", STARTUP)
        # Queued in the reverse of the notebook's order, each once the room shows it queued.
        answers = {}
        for index, cell_id in reversed(list(enumerate(sources))[1:]):
            answers[cell_id] = post(cell_id)
            await eventually(lambda index=index: state(index) == "running", f"{cell_id} queued")
        go.touch()

        assert (await gated).status_code == 200
        assert (await answers["first"]).status_code == 200
        second = await answers["second"]
        assert second.status_code == 422 and second.json()["ename"] == "ValueError"
        third = await answers["third"]
        assert third.status_code == 422 and third.json()["ename"] == "CellNotRun"

        await eventually(lambda: state(3) == "idle", "the third cell back to idle")
        cells = room_cells(ada)
        counts = [cell["execution_count"] for cell in cells]
        assert counts[1:] == [counts[0] + 1, counts[0] + 2, None]
        assert cells[1]["outputs"][0]["text"] == "first\n"
        assert cells[3]["outputs"] == []
        assert {cell["execution_state"] for cell in cells} == {"idle"}
    assert not marker.exists()


async def test_a_cell_sent_after_the_error_was_answered_runs(
    server: RunningServer, api: httpx.Client, endpoint: httpx.AsyncClient, kernel: str
) -> None:
    document = add_notebook(server, api, "after.ipynb", bad="1 / 0", good="print('ran')")
    url = f"api/kernels/{kernel}/execute"
    bad = await endpoint.post(url, json={"cell_id": "bad", "document_id": document})
    assert bad.status_code == 422
    good = await endpoint.post(url, json={"cell_id": "good", "document_id": document})
    assert good.status_code == 200, good.text
