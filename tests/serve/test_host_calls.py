"""Host calls from cells of a served notebook: a real server, its kernels, rooms and grants API."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from tests.core.disk import code, display, markdown, write_notebook
from tests.serve.conftest import RunningServer
from tests.serve.rooms.client import eventually, room_client
from tests.serve.rooms.conftest import open_session, sources
from tests.serve.websocket import hang_up

pytestmark = pytest.mark.slow

RESULT_MIME = "application/vnd.ganymede.result+json"
INDEX = "journal/index.ipynb"
FREMONT = "journal/fremont.ipynb"
COUNTER = "from ganymede.kernel import params, result\nresult('counter', params().get('counter'))"


async def run_cell(
    server: RunningServer, kernel_id: str, source: str, headers: dict[str, str] | None = None
) -> str:
    """Run ``source`` over the kernel websocket as JupyterLab would; what it printed.
    ``headers`` authenticate it instead of the server's token (a browser's cookies)."""
    url = server.base.replace("http", "ws", 1) + f"api/kernels/{kernel_id}/channels"
    if headers is None:
        headers = {"Authorization": f"token {server.token}"}
    request = HTTPRequest(url, headers=headers)
    connection = await websocket_connect(request)
    msg_id = uuid.uuid4().hex
    header = {"msg_id": msg_id, "msg_type": "execute_request", "session": msg_id}
    header |= {"username": "test", "version": "5.3", "date": ""}
    content = {"code": source, "silent": False, "store_history": True, "user_expressions": {}}
    message = {"header": header, "parent_header": {}, "metadata": {}, "content": content}
    await connection.write_message(json.dumps({**message, "channel": "shell"}))
    printed: list[str] = []
    try:
        while True:
            frame = await asyncio.wait_for(connection.read_message(), 90)
            assert isinstance(frame, str), "the kernel websocket closed"
            reply = json.loads(frame)
            if reply["parent_header"].get("msg_id") != msg_id:
                continue
            if reply["msg_type"] == "stream":
                printed.append(reply["content"]["text"])
            elif reply["msg_type"] == "error":
                printed.append(f"{reply['content']['ename']}: {reply['content']['evalue']}\n")
            elif reply["msg_type"] == "status" and reply["content"]["execution_state"] == "idle":
                return "".join(printed)  # iopub's last word on the cell: every output is in
    finally:
        await hang_up(connection)


def start_session(api: httpx.Client, path: str) -> str:
    answer = api.post(
        "api/sessions", json={"path": path, "type": "notebook", "kernel": {"name": "python3"}}
    )
    assert answer.status_code == 201, answer.text
    return str(answer.json()["kernel"]["id"])


@pytest.fixture
def notebooks(server: RunningServer) -> Path:
    journal = server.root / "journal"
    write_notebook(
        server.root / INDEX,
        markdown("# Journal", cell_id="title"),
        code("print('old index')", cell_id="toc"),
    )
    write_notebook(
        server.root / FREMONT,
        markdown("# Fremont: weekday drop"),
        code(COUNTER, display({RESULT_MIME: {"name": "weekday_drop", "value": -0.19}})),
    )
    return journal


@pytest.fixture
def kernel_id(api: httpx.Client, notebooks: Path) -> Any:
    kernel = start_session(api, INDEX)
    yield kernel
    api.delete(f"api/kernels/{kernel}")


PREAMBLE = "from ganymede.kernel import host, HostError\nh = host()\n"


async def test_a_cell_searches_and_reads_results(server: RunningServer, kernel_id: str) -> None:
    printed = await run_cell(
        server,
        kernel_id,
        PREAMBLE + "print(h.notebook)\n"
        "hits = h.notebooks.search('weekday drop', dir='journal')['hits']\n"
        "print([hit['path'] for hit in hits])\n"
        "print(h.notebooks.results(hits[0]['path']))",
    )
    assert printed.splitlines() == [INDEX, f"['{FREMONT}']", "{'weekday_drop': -0.19}"]


async def test_a_run_is_denied_until_granted_over_the_api(
    server: RunningServer, api: httpx.Client, kernel_id: str
) -> None:
    api.delete("api/host/grants", params={"path": INDEX})  # the defaults: no runs
    call = f"h.notebooks.run({FREMONT!r}, params={{'counter': '2nd Ave'}})"
    source = PREAMBLE + f"try:\n    print({call}['results'])\nexcept HostError as e:\n    print(e)"
    assert await run_cell(server, kernel_id, source) == (
        f"denied: notebooks.run needs a run grant covering {FREMONT}\n"
    )
    granted = api.put("api/host/grants", params={"path": INDEX}, json={"run": ["journal"]})
    assert granted.status_code == 200, granted.text
    assert await run_cell(server, kernel_id, source) == "{'counter': '2nd Ave'}\n"


async def test_self_edit_checks_the_hash_and_reaches_a_room_client(
    server: RunningServer, api: httpx.Client, kernel_id: str
) -> None:
    room, session_id = open_session(api, INDEX)
    async with room_client(server, room, session_id) as person:
        printed = await run_cell(
            server,
            kernel_id,
            PREAMBLE + "try:\n"
            "    h.self.edit('toc', 'print(1)', '12345')\n"
            "except HostError as e:\n"
            "    print(e)\n"
            "me = h.notebooks.read(h.notebook)\n"
            "print(h.self.edit('toc', 'print(\"new index\")', me['hashes']['toc']))",
        )
        assert printed.splitlines() == [
            "failed: source_mismatch: cell toc changed since it was read",
            "{}",
        ]
        edited = ["# Journal", 'print("new index")']
        await eventually(lambda: sources(person) == edited, "the kernel's edit in the room")


GATED = (
    "import os, pathlib, time\n"
    "from ganymede.kernel import params\n"
    "pathlib.Path(params()['pid']).write_text(str(os.getpid()))\n"
    "while True:\n"
    "    time.sleep(0.02)"
)


def process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_interrupting_the_cell_shuts_the_runs_kernel_down(
    server: RunningServer, api: httpx.Client, kernel_id: str, tmp_path: Path
) -> None:
    write_notebook(server.root / "journal" / "gated.ipynb", code(GATED))
    granted = api.put("api/host/grants", params={"path": INDEX}, json={"run": ["journal"]})
    assert granted.status_code == 200, granted.text
    pid_file = tmp_path / "run.pid"
    os.mkfifo(pid_file)
    call = f"h.notebooks.run('journal/gated.ipynb', params={{'pid': {str(pid_file)!r}}})"
    cell = asyncio.ensure_future(
        run_cell(
            server,
            kernel_id,
            PREAMBLE + f"try:\n    {call}\nexcept KeyboardInterrupt:\n    print('interrupted')",
        )
    )
    run_pid = int(await asyncio.to_thread(pid_file.read_text))  # the run's cell is running
    assert api.post(f"api/kernels/{kernel_id}/interrupt").status_code == 204
    assert await cell == "interrupted\n"
    await eventually(lambda: process_gone(run_pid), "the run's kernel to be shut down")
