"""The MCP inspector (``mcp-inspector --cli``, from npm) against ``ganymede mcp``, over stdio
and over ``--http``: it lists the tools our own client lists, finds nothing unportable in their
schemas (``--strict``), and its reads and edits answer as our client's do.

Each inspector run is one short MCP session. Every door here names the same agent, so read
marks carry over from one door to the next as they do for one agent across sessions. A read
mark is a fresh id each read, so read replies are compared with their mark ids blanked.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import nbformat
import pytest
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.mcp.conftest import CLIENT_NAME, call, door_parameters, door_to, runtime_files
from tests.serve.conftest import STOP_TIMEOUT, RunningServer, jupyter_env
from tests.serve.rooms.client import eventually

pytestmark = pytest.mark.slow

INSPECTOR = "mcp-inspector"
AGENT = "inspector-check"
SERVING_HTTP = re.compile(
    r"ganymede mcp: serving MCP at (\S+) \(header 'Authorization: Bearer (\S+)'\)"
)
MARK_ID = re.compile(r"\b[0-9a-f]{16}\b")
# A stdio door's first answer waits for Python to start and import the server side.
CONNECT_TIMEOUT_MS = 120_000
RUN_TIMEOUT = 180
# What a stdio door needs from the test's environment: the inspector hands its servers only a
# few variables (HOME, PATH, ...) besides the ones named with -e.
FORWARDED = (
    "PYTHONPATH",
    "JUPYTER_DATA_DIR",
    "JUPYTER_RUNTIME_DIR",
    "JUPYTER_CONFIG_DIR",
    "XDG_DATA_HOME",
)


def inspector_command() -> str:
    found = shutil.which(INSPECTOR)
    if found is None:
        pytest.fail(f"{INSPECTOR} is not on PATH: `make test` installs it from npm")
    return found


@dataclass
class HttpDoor:
    """A ``ganymede mcp --http`` process; its stderr goes on into ``log`` once it listens."""

    process: subprocess.Popen[str]
    url: str
    token: str
    log: Path
    logging: threading.Thread

    def stop(self, signum: int) -> int:
        """Send ``signum`` and return the exit status, once the log holds all stderr said."""
        self.process.send_signal(signum)
        status = self.process.wait(timeout=STOP_TIMEOUT)
        self.logging.join(STOP_TIMEOUT)
        assert self.process.stdout is not None
        assert self.process.stdout.read() == "", "stdout carries nothing in --http mode"
        self.process.stdout.close()
        return status


def start_http_door(cwd: Path, env: dict[str, str], *args: str) -> HttpDoor:
    """``ganymede mcp --http 127.0.0.1:0 ARGS``, once it has printed where it listens."""
    log = cwd.parent / "http-door.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "ganymede", "mcp", "--http", "127.0.0.1:0", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    written = log.open("w")
    for line in process.stderr:
        written.write(line)
        found = SERVING_HTTP.match(line)
        if found:
            written.flush()
            logging = threading.Thread(
                target=_copy_and_close, args=(process.stderr, written), daemon=True
            )
            logging.start()
            return HttpDoor(process, found.group(1), found.group(2), log, logging)
    written.close()
    process.wait(timeout=STOP_TIMEOUT)
    pytest.fail(f"ganymede mcp --http exited {process.returncode}:\n{log.read_text()}")


def _copy_and_close(source: Any, target: Any) -> None:
    with source, target:
        shutil.copyfileobj(source, target)


@pytest.fixture(scope="module")
def http_door(server: RunningServer) -> Iterator[HttpDoor]:
    env = jupyter_env(server.root.parent / "jupyter")
    door = start_http_door(
        server.root, env, "--url", server.base, "--token", server.token, "--agent", AGENT
    )
    yield door
    assert door.stop(signal.SIGTERM) == 0


def stdio_target(server: RunningServer) -> list[str]:
    """The inspector's options and command for the stdio door our own client starts."""
    env = jupyter_env(server.root.parent / "jupyter")
    door = door_parameters(
        server.root, env, "--url", server.base, "--token", server.token, "--agent", AGENT
    )
    options = ["--cwd", str(door.cwd)]
    for name in FORWARDED:
        if name in env:
            options += ["-e", f"{name}={env[name]}"]
    return [*options, "--", door.command, *door.args]


def http_target(door: HttpDoor, token: str | None = None) -> list[str]:
    header = f"Authorization: Bearer {door.token if token is None else token}"
    return ["--transport", "http", "--header", header, "--", door.url]


@pytest.fixture(params=["stdio", "http"])
def target(request: pytest.FixtureRequest, server: RunningServer) -> list[str]:
    if request.param == "stdio":
        return stdio_target(server)
    return http_target(request.getfixturevalue("http_door"))


def inspect(home: Path, target: Sequence[str], *method: str) -> subprocess.CompletedProcess[str]:
    """One ``mcp-inspector --cli`` run, its own files (catalog, stored auth) under ``home``."""
    command = [inspector_command(), "--cli", "--format", "json"]
    command += ["--connect-timeout", str(CONNECT_TIMEOUT_MS), *method, *target]
    env = {**os.environ, "HOME": str(home)}
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT)


def inspected(home: Path, target: Sequence[str], *method: str) -> dict[str, Any]:
    """The result of a run the inspector found nothing wrong with."""
    done = inspect(home, target, *method)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    envelope = json.loads(done.stdout)
    assert "schemaFindings" not in envelope, envelope["schemaFindings"]
    return dict(envelope["result"])


def inspector_call(home: Path, target: Sequence[str], tool: str, **arguments: object) -> str:
    """The tool's text, as the inspector got it; a tool error fails the test."""
    called = ["--method", "tools/call", "--tool-name", tool]
    result = inspected(home, target, *called, "--tool-args-json", json.dumps(arguments))
    assert result["isError"] is False, result
    return "".join(item["text"] for item in result["content"] if item["type"] == "text")


def without_marks(text: str) -> str:
    return MARK_ID.sub("<mark>", text)


def source_on_disk(server: RunningServer, path: str, cell_id: str) -> str:
    notebook = nbformat.read(server.root / path, as_version=4)
    return next(str(cell.source) for cell in notebook.cells if cell.id == cell_id)


async def test_the_inspector_lists_the_tools_our_client_lists(
    server: RunningServer, target: list[str], tmp_path: Path
) -> None:
    listed = inspected(tmp_path, target, "--method", "tools/list", "--strict")
    async with door_to(server, agent=AGENT) as door:
        ours = (await door.list_tools()).tools
    theirs = {tool["name"]: (tool["description"], tool["inputSchema"]) for tool in listed["tools"]}
    assert "notebook_read" in theirs and "cell_edit" in theirs
    assert theirs == {tool.name: (tool.description, tool.input_schema) for tool in ours}


async def test_reads_and_edits_through_the_inspector_answer_as_ours_do(
    server: RunningServer, target: list[str], tmp_path: Path
) -> None:
    path = f"inspected-{tmp_path.name}.ipynb"
    cells = [
        nbformat.v4.new_code_cell("rows = 1", id="c1"),
        nbformat.v4.new_markdown_cell("# Rows", id="m1"),
    ]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), server.root / path)
    async with door_to(server, agent=AGENT) as door:
        our_read = await call(door, "notebook_read", path=path)
        their_read = inspector_call(tmp_path, target, "notebook_read", path=path)
        assert without_marks(their_read) == without_marks(our_read)
        assert "rows = 1" in their_read

        our_edit = await call(door, "cell_edit", path=path, id="c1", source="rows = 2")
        await call(door, "cell_edit", path=path, id="c1", source="rows = 1")
        their_edit = inspector_call(
            tmp_path, target, "cell_edit", path=path, id="c1", source="rows = 2"
        )
        assert their_edit == our_edit
        assert their_edit.startswith('@@edited {"id":"c1","index":0')
        await eventually(
            lambda: source_on_disk(server, path, "c1") == "rows = 2", "the edit on disk", 30
        )
        after = await call(door, "notebook_read", path=path, cells=["c1"])
    assert "rows = 2" in after


async def test_the_http_door_refuses_requests_without_its_token(
    http_door: HttpDoor, tmp_path: Path
) -> None:
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    accept = {"Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(timeout=30) as client:
        bare = await client.post(http_door.url, json=initialize, headers=accept)
        wrong = await client.post(
            http_door.url, json=initialize, headers={**accept, "Authorization": "Bearer nope"}
        )
    assert bare.status_code == 401 and wrong.status_code == 401
    assert bare.headers["WWW-Authenticate"].startswith("Bearer ")
    assert bare.json()["error"] == "invalid_token"
    assert "Authorization: Bearer <token>" in bare.json()["error_description"]
    assert wrong.json()["error_description"] == "the bearer token is not this endpoint's"
    # The inspector, never asked to log in interactively, reports the refusal and its reason.
    refused = inspect(
        tmp_path, http_target(http_door, "nope"), "--stored-auth-only", "--method", "tools/list"
    )
    assert refused.returncode != 0
    assert "the bearer token is not this endpoint's" in refused.stderr


@asynccontextmanager
async def http_session(url: str, token: str) -> AsyncIterator[ClientSession]:
    """Our own client (the MCP SDK's) on an HTTP door, its event stream open."""
    info = types.Implementation(name=CLIENT_NAME, version="1.0")
    headers = {"Authorization": f"Bearer {token}"}
    timeout = httpx2.Timeout(30, read=300)  # the event stream may be quiet a while
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write, client_info=info) as session,
    ):
        await session.initialize()
        yield session


async def test_ctrl_c_stops_an_http_door_and_its_own_server_with_a_client_connected(
    alone: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, env = alone
    door = start_http_door(root, {**env, "GANYMEDE_MCP_TOKEN": "handed-in-token"})
    try:
        assert door.token == "...", "a token handed in is not printed"
        listed = inspector_call(tmp_path, http_target(door, "handed-in-token"), "notebooks_list")
        assert '"path":"solo.ipynb"' in listed
        served = [Path(str(info["root_dir"])).resolve() for info in runtime_files(env)]
        assert served == [root.resolve()]
        async with http_session(door.url, "handed-in-token") as session:
            assert await call(session, "notebooks_list") == listed
            status = await asyncio.to_thread(door.stop, signal.SIGINT)
    finally:
        if door.process.poll() is None:
            door.stop(signal.SIGTERM)
    assert status == 0
    assert runtime_files(env) == []  # the embedded server stopped with the door
    assert "Traceback" not in door.log.read_text()
