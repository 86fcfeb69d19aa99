"""A real ``ganymede mcp`` over stdio (the MCP SDK's own client), and a person in a room.

Thomas is a room client whose awareness names him, as JupyterLab's does; his edits reach the
server as JupyterLab's would, and the server attributes them to him.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import nbformat
import pytest
from jupyter_ydoc import YNotebook
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from pycrdt import Awareness, create_awareness_message

from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server
from tests.serve.rooms.client import RoomClient, room_client
from tests.serve.rooms.conftest import open_session

CLIENT_NAME = "claude-code"
THOMAS = {"name": "Thomas", "display_name": "Thomas"}
DEADLINE = 20.0


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp")


@pytest.fixture(scope="module")
def server(home: Path) -> Iterator[RunningServer]:
    root = home / "root"
    root.mkdir()
    running = start_server(root, jupyter_env(home / "jupyter"))
    yield running
    stop_server(running)


@pytest.fixture
def alone(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A root with one notebook and no server serving it, and the environment to run in."""
    root = tmp_path / "root"
    root.mkdir()
    cell = nbformat.v4.new_code_cell("print('hello')", id="c1")
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), root / "solo.ipynb")
    env = jupyter_env(tmp_path / "jupyter")
    env.pop("GANYMEDE_URL", None)
    return root, env


def runtime_files(env: dict[str, str]) -> list[dict[str, object]]:
    folder = Path(env["JUPYTER_RUNTIME_DIR"])
    return [json.loads(file.read_text()) for file in folder.glob("jpserver-*.json")]


@pytest.fixture
def api(server: RunningServer) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


def door_parameters(cwd: Path, env: dict[str, str], *args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "ganymede", "mcp", *args], env=env, cwd=cwd
    )


@asynccontextmanager
async def mcp_door(
    parameters: StdioServerParameters, heard: list[types.ServerNotification] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized MCP client session with a ``ganymede mcp`` process; the notifications
    the server sends go to ``heard``."""

    async def hear(message: object) -> None:
        if heard is not None and not isinstance(message, Exception):
            heard.append(message)  # type: ignore[arg-type]

    info = types.Implementation(name=CLIENT_NAME, version="1.0")
    log = Path(parameters.cwd or ".").parent / "door.log"
    with log.open("a") as errlog:
        try:
            async with (
                stdio_client(parameters, errlog=errlog) as (read, write),
                ClientSession(read, write, client_info=info, message_handler=hear) as session,
            ):
                await session.initialize()
                yield session
        except Exception as error:
            error.add_note(f"the door's log ends:\n{log.read_text()[-6000:]}")
            raise


@asynccontextmanager
async def door_to(
    server: RunningServer,
    heard: list[types.ServerNotification] | None = None,
    agent: str | None = None,
) -> AsyncIterator[ClientSession]:
    """A door to ``server``, its agent named by the client, or by ``--agent``."""
    env = jupyter_env(server.root.parent / "jupyter")
    named = ("--agent", agent) if agent is not None else ()
    parameters = door_parameters(
        server.root, env, "--url", server.base, "--token", server.token, *named
    )
    async with mcp_door(parameters, heard) as session:
        yield session


def text_of(result: types.CallToolResult) -> str:
    return "".join(item.text for item in result.content if isinstance(item, types.TextContent))


async def call(session: ClientSession, tool: str, **arguments: object) -> str:
    """The tool's text; the test fails on a tool error."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    return text_of(result)


async def until(produce: Callable[[], Awaitable[str]], wanted: str, what: str) -> str:
    """Call ``produce`` until its answer holds ``wanted``; fail naming ``what`` at the deadline."""
    deadline = time.monotonic() + DEADLINE
    while True:
        answer = await produce()
        if wanted in answer:
            return answer
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; last answer:\n{answer}")


@asynccontextmanager
async def thomas_in(
    server: RunningServer, api: httpx.Client, path: str
) -> AsyncIterator[RoomClient]:
    """Thomas with ``path`` open, his awareness naming him."""
    name, session_id = open_session(api, path)
    async with room_client(server, name, session_id) as thomas:
        awareness = Awareness(thomas.shared.ydoc)
        awareness.set_local_state({"user": THOMAS})
        update = awareness.encode_awareness_update([awareness.client_id])
        await thomas.send_raw(create_awareness_message(update))
        yield thomas


def cell_index(thomas: RoomClient, cell_id: str) -> int:
    notebook: YNotebook = thomas.shared  # type: ignore[assignment]
    ids = [cell["id"] for cell in notebook.get()["cells"]]
    return ids.index(cell_id)


def type_into(thomas: RoomClient, cell_id: str, text: str) -> None:
    """Thomas appends ``text`` to a cell, as typing in JupyterLab does."""
    notebook: YNotebook = thomas.shared  # type: ignore[assignment]
    with notebook.ydoc.transaction():
        source = notebook.ycells[cell_index(thomas, cell_id)]["source"]
        source += text


def add_markdown(thomas: RoomClient, text: str, cell_id: str) -> None:
    notebook: YNotebook = thomas.shared  # type: ignore[assignment]
    cell = {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": text}
    notebook.ycells.append(notebook.create_ycell(cell))
