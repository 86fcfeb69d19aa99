"""A served notebook's kernel calls the host while a JupyterLab-like client watches its websocket.

The client must see the cell's own messages and nothing of the host comm: no comm messages, no
status or other message caused by what the server sent, no host comm in ``comm_info_reply``;
and the kernel reads busy over REST while the cell waits on host calls.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server
from tests.serve.kernel_socket import connect

pytestmark = pytest.mark.slow

NOTEBOOK = "journal/today.ipynb"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    home = tmp_path_factory.mktemp("host-ws")
    root = home / "root"
    (root / "journal").mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), root / NOTEBOOK)
    nbformat.write(nbformat.v4.new_notebook(), root / "journal" / "older.ipynb")
    running = start_server(root, jupyter_env(home / "jupyter"))
    yield running
    stop_server(running)


def start_session(server: RunningServer) -> str:
    with server.client() as api:
        body = {"path": NOTEBOOK, "type": "notebook", "name": "", "kernel": {"name": "python3"}}
        created = api.post("api/sessions", json=body)
        assert created.status_code == 201, created.text
        return str(created.json()["kernel"]["id"])


def kernel_state(server: RunningServer, kernel_id: str) -> str:
    with server.client() as api:
        return str(api.get(f"api/kernels/{kernel_id}").json()["execution_state"])


CALLING_CELL = """
import os
from ganymede.kernel import host
h = host()
print(h.notebook, h.has('notebooks.list'), sorted(e['path'] for e in h.notebooks.list('journal')))
print('calling', flush=True)
calls = 0
while not os.path.exists('GO_FILE'):
    h.notebooks.list('journal')
    calls += 1
print('calls made', calls > 0)
"""


@pytest.mark.parametrize("v1", [False, True], ids=["json", "v1"])
async def test_host_traffic_stays_off_the_kernel_websocket(served: RunningServer, v1: bool) -> None:
    kernel_id = start_session(served)
    socket = await connect(served, kernel_id, v1)
    try:
        await socket.wait_for(lambda m: m["msg_type"] == "status")  # the connection is live
        go_file = f"go-{uuid.uuid4().hex}"
        msg_id = await socket.execute(CALLING_CELL.replace("GO_FILE", go_file))
        await socket.wait_for(lambda m: "calling" in socket.stdout(msg_id))
        busy_during_calls = kernel_state(served, kernel_id)
        (served.root / "journal" / go_file).touch()
        reply, stdout = await socket.finished(msg_id)
        assert reply["status"] == "ok", reply
        assert stdout.splitlines() == [
            f"{NOTEBOOK} True ['journal/older.ipynb', 'journal/today.ipynb']",
            "calling",
            "calls made True",
        ]
        assert busy_during_calls == "busy"
        info_id = await socket.send("shell", "comm_info_request", {})
        info = await socket.wait_for(
            lambda m: m["msg_type"] == "comm_info_reply" and m["parent_header"]["msg_id"] == info_id
        )
        assert info["content"] == {"status": "ok", "comms": {}}
    finally:
        await socket.close()
    comm_messages = [m for m in socket.received if m["msg_type"].startswith("comm_")]
    assert [m["msg_type"] for m in comm_messages] == ["comm_info_reply"]
    foreign = [
        m
        for m in socket.received
        if m["parent_header"] and m["parent_header"].get("session") != socket.session
    ]
    assert foreign == []


async def test_restarted_kernel_gets_the_comm_again(served: RunningServer) -> None:
    kernel_id = start_session(served)
    socket = await connect(served, kernel_id)
    try:
        reply, stdout = await socket.run("from ganymede.kernel import host\nprint(host().notebook)")
        assert (reply["status"], stdout) == ("ok", f"{NOTEBOOK}\n")
        with served.client() as api:
            assert api.post(f"api/kernels/{kernel_id}/restart").status_code == 200
        await socket.answering()
        reply, stdout = await socket.run(
            "import os\nfrom ganymede.kernel import host\n"
            "print(os.getpid() > 0, host().notebook, host().has('notebooks.read'))"
        )
        assert (reply["status"], stdout) == ("ok", f"True {NOTEBOOK} True\n")
    finally:
        await socket.close()
    assert not [m for m in socket.received if m["msg_type"] in ("comm_open", "comm_msg")]


def test_server_log_is_clean(served: RunningServer, tmp_path: Path) -> None:
    assert "host: " not in served.log.read_text()
