"""A kernel the server still knows but that is not running gets 400, and the room is untouched.

The server here never restarts a kernel that died (``KernelManager.autorestart=False``), so a
kernel that exited stays in the kernel list, dead, for as long as the test needs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server
from tests.serve.execution.conftest import add_notebook, execute, hashed, room_cells
from tests.serve.rooms.client import eventually, room_client
from tests.serve.rooms.conftest import open_session

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    home: Path = tmp_path_factory.mktemp("server")
    root = home / "root"
    root.mkdir()
    env = jupyter_env(home / "jupyter")
    running = start_server(root, env, "--KernelManager.autorestart=False")
    yield running
    stop_server(running)


async def test_a_dead_kernel_still_listed_is_refused_and_nothing_changes(
    server: RunningServer, api: httpx.Client, endpoint: httpx.AsyncClient, kernel: str
) -> None:
    sources = {"exit": "import os\nos._exit(1)", "kept": "print('kept')", "probe": "1 + 1"}
    document = add_notebook(server, api, "dead.ipynb", **sources)
    url = f"api/kernels/{kernel}/execute"
    kept = await endpoint.post(url, json={"cell_id": "kept", "document_id": document})
    assert kept.status_code == 200, kept.text
    died = await endpoint.post(url, json={"cell_id": "exit", "document_id": document})
    assert died.status_code == 422 and died.json()["ename"] == "KernelDied"
    assert api.get(f"api/kernels/{kernel}").status_code == 200  # still known

    _, session = open_session(api, "dead.ipynb")
    async with room_client(server, document, session) as ada:
        before = room_cells(ada)
        assert before[1]["outputs"][0]["text"] == "kept\n"

        refused = await execute(endpoint, kernel, document, hashed(("kept", "print('kept')")))
        assert refused.status_code == 400
        assert refused.json()["message"] == f"kernel {kernel} is not running"
        lab_form = await endpoint.post(url, json={"cell_id": "kept", "document_id": document})
        assert lab_form.status_code == 400

        # A run on another kernel, queued after the refusals, shows the room saw nothing else.
        other = api.post("api/kernels", json={"name": "python3"}).json()["id"]
        try:
            probe = await execute(endpoint, other, document, hashed(("probe", "1 + 1")), wait=60)
            assert probe.json()["finished"] is True
        finally:
            api.delete(f"api/kernels/{other}")
        await eventually(lambda: room_cells(ada)[2]["outputs"], "the probe's output")
        assert room_cells(ada)[:2] == before[:2]
