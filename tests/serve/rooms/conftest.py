"""Helpers for the room tests: files under the served root, the session request, notebooks,
chats."""

from __future__ import annotations

import urllib.parse
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import nbformat
from jupyter_ydoc import YNotebook, YUnicode
from jupyterlab_chat.ychat import YChat

from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server
from tests.serve.rooms.client import RoomClient, room_client


@contextmanager
def server_with(home: Path, toml: bytes) -> Iterator[RunningServer]:
    """A server on ``home``'s root, its ``ganymede.toml`` holding ``toml``."""
    root = home / "root"
    write(root / "ganymede.toml", toml)
    running = start_server(root, jupyter_env(home / "jupyter"))
    try:
        yield running
    finally:
        stop_server(running)


def notebook_bytes(*sources: str) -> bytes:
    """A notebook file as Jupyter writes it, one code cell per source."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    return (nbformat.writes(notebook) + "\n").encode()


def put_session(
    api: httpx.Client, path: str, body: Any = None, *, raw_body: bytes | None = None
) -> httpx.Response:
    """The docprovider's session request: the path URL-encoded as one segment."""
    segment = urllib.parse.quote(path, safe="")
    if raw_body is not None:
        return api.put(f"api/collaboration/session/{segment}", content=raw_body)
    body = {"format": "json", "type": "notebook"} if body is None else body
    return api.put(f"api/collaboration/session/{segment}", json=body)


def open_session(api: httpx.Client, path: str, kind: str = "json:notebook") -> tuple[str, str]:
    """The room name and session id for ``path``, as the frontend gets them."""
    format_, type_ = kind.split(":")
    answer = put_session(api, path, {"format": format_, "type": type_})
    assert answer.status_code in (200, 201), answer.text
    reply = answer.json()
    return f"{kind}:{reply['fileId']}", reply["sessionId"]


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def sources(client: RoomClient) -> list[str]:
    notebook: YNotebook = client.shared  # type: ignore[assignment]
    return [cell["source"] for cell in notebook.get()["cells"]]


def sources_on_disk(path: Path) -> list[str]:
    notebook = nbformat.reads(path.read_text(), as_version=4)
    return [cell["source"] for cell in notebook.cells]


def edit_first_cell(client: RoomClient, text: str) -> None:
    """Append to the first cell's source and flag the document dirty, as JupyterLab does."""
    notebook: YNotebook = client.shared  # type: ignore[assignment]
    with notebook.ydoc.transaction():
        source = notebook.ycells[0]["source"]
        source += text
        notebook.ystate["dirty"] = True


@asynccontextmanager
async def chat_client(
    server: RunningServer, name: str, session: str
) -> AsyncIterator[tuple[RoomClient, YChat]]:
    """A chat client as jupyterlab-chat's frontend is one: its chat model wraps the document
    once synced (a bot's model, made before it connects, is in ``test_admission``)."""
    async with room_client(server, name, session, YUnicode()) as client:
        yield client, YChat(client.shared.ydoc)
