"""The first cell the execute endpoint runs on a kernel just started or restarted keeps its
stdout and stderr in the order it wrote them, on a real server and real kernels.

A write to a stream while the kernel starts (debugpy's warning about frozen modules, an IPython
startup file) or just after (the host comm's refused offer) arms ipykernel's 0.2 s flush timer;
a cell started before it fires had its stderr published ahead of its stdout.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server
from tests.serve.execution.conftest import add_notebook, execute, hashed

pytestmark = pytest.mark.slow

WRITES_BOTH_STREAMS = (
    "import os, sys, time\n"
    "print(os.environ.get('PYDEVD_DISABLE_FILE_VALIDATION'))\n"
    "print('err', file=sys.stderr)\n"
    "time.sleep(0.3)"
)
"""Outlives the 0.2 s flush timers, so a timer decides the order; its stdout says whether the
kernel was started with debugpy's file validation off."""


def streams_of(answer: httpx.Response) -> list[tuple[str, str]]:
    assert answer.status_code == 200, answer.text
    reply = answer.json()
    assert reply["finished"] is True
    outputs: list[dict[str, Any]] = reply["cells"][0]["outputs"]
    return [(output["name"], output["text"]) for output in outputs]


async def run_first_cell(
    server: RunningServer, api: httpx.Client, endpoint: httpx.AsyncClient, name: str
) -> list[list[tuple[str, str]]]:
    """The streams of the first cell on a new session's kernel, then on it restarted."""
    document = add_notebook(server, api, name, both=WRITES_BOTH_STREAMS)
    body = {"path": name, "type": "notebook", "kernel": {"name": "python3"}}
    session = api.post("api/sessions", json=body)
    assert session.status_code == 201, session.text
    kernel = session.json()["kernel"]["id"]
    cells = hashed(("both", WRITES_BOTH_STREAMS))
    try:
        started = streams_of(await execute(endpoint, kernel, document, cells, wait=60))
        assert (await endpoint.post(f"api/kernels/{kernel}/restart")).status_code == 200
        restarted = streams_of(await execute(endpoint, kernel, document, cells, wait=60))
    finally:
        api.delete(f"api/sessions/{session.json()['id']}")
    return [started, restarted]


async def test_the_first_cell_after_a_start_or_a_restart_keeps_its_streams_in_order(
    server: RunningServer, api: httpx.Client, endpoint: httpx.AsyncClient
) -> None:
    """The kernel is started with debugpy's warning off (the server's environment does not set
    it); the host comm's offer, refused by a kernel without Ganymede's client, still writes."""
    for streams in await run_first_cell(server, api, endpoint, "first.ipynb"):
        assert streams == [("stdout", "1\n"), ("stderr", "err\n")]


@pytest.fixture(scope="module")
def noisy_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A server whose kernels write to stderr as they start: an IPython startup file, and
    debugpy's warning, which the environment asks for."""
    home = tmp_path_factory.mktemp("noisy")
    root = home / "root"
    root.mkdir()
    ipython = home / "ipython"
    startup = ipython / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-note.py").write_text("import sys\nprint('starting', file=sys.stderr)\n")
    env = jupyter_env(home / "jupyter", IPYTHONDIR=str(ipython), PYDEVD_DISABLE_FILE_VALIDATION="0")
    running = start_server(root, env)
    yield running
    stop_server(running)


async def test_writes_while_the_kernel_starts_leave_its_first_cell_in_order(
    noisy_server: RunningServer,
) -> None:
    headers = {"Authorization": f"token {noisy_server.token}"}
    with noisy_server.client() as api:
        async with httpx.AsyncClient(
            base_url=noisy_server.base, headers=headers, timeout=60
        ) as endpoint:
            runs = await run_first_cell(noisy_server, api, endpoint, "noisy.ipynb")
    for streams in runs:
        assert streams == [("stdout", "0\n"), ("stderr", "err\n")]
