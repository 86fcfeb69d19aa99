"""Two servers on one notebook: the first room to open it owns it, the other's is read-only.

Both servers serve the same root with the same Jupyter dirs, as two ``ganymede serve`` started
by one user would. Each keeps its log apart: the second reaches the shared runtime dir through
a symlink, since the log sits beside the runtime dir's path.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ganymede.serve.rooms import protocol
from ganymede.serve.rooms.lock import RoomLock
from ganymede.serve.rooms.protocol import MessageType
from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server
from tests.serve.rooms.client import RoomClient, eventually, room_client
from tests.serve.rooms.conftest import (
    edit_first_cell,
    notebook_bytes,
    open_session,
    sources,
    sources_on_disk,
    write,
)

pytestmark = pytest.mark.slow

ORIGINAL = ["a = 1", "b = 2"]
# Autosave waits longer than any test: an edit reaches the file only when a room saves on purpose.
SAVE_ON_PURPOSE_ONLY = "[serve]\nsave_delay = 60.0\n"


@dataclass
class Pair:
    root: Path
    runtime_dir: Path
    first: RunningServer
    second: RunningServer
    notebook: Path


def shared_env(home: Path, owner_home: Path) -> dict[str, str]:
    """A server's environment whose Jupyter dirs are ``owner_home``'s, its log in ``home``."""
    env = jupyter_env(home)
    link = home / "runtime-shared"
    link.symlink_to(owner_home / "runtime")
    env["JUPYTER_RUNTIME_DIR"] = str(link)
    env["JUPYTER_DATA_DIR"] = str(owner_home / "data")
    env["JUPYTER_CONFIG_DIR"] = str(owner_home / "config")
    return env


def start_pair(tmp_path: Path, toml: str = "") -> Pair:
    root = tmp_path / "root"
    notebook = write(root / "nb.ipynb", notebook_bytes(*ORIGINAL))
    if toml:
        write(root / "ganymede.toml", toml.encode())
    first_home = tmp_path / "first"
    first = start_server(root, jupyter_env(first_home))
    try:
        second = start_server(root, shared_env(tmp_path / "second", first_home))
    except BaseException:
        stop_server(first)
        raise
    return Pair(root, first_home / "runtime", first, second, notebook)


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    servers = start_pair(tmp_path)
    yield servers
    stop_server(servers.second)
    stop_server(servers.first)


def writable(server: RunningServer, path: str) -> bool:
    with server.client() as api:
        model = api.get(f"api/contents/{path}", params={"content": 0})
        model.raise_for_status()
        return bool(model.json()["writable"])


async def save(client: RoomClient, save_id: int) -> dict[str, Any]:
    await client.send_raw(protocol.save_request(save_id))
    return protocol.decode_raw_json(await client.next_frame(MessageType.RAW))


def kill(server: RunningServer, how: signal.Signals) -> None:
    server.process.send_signal(how)
    server.wait_stopped()


async def test_the_second_servers_room_is_read_only(pair: Pair) -> None:
    with pair.first.client() as first_api, pair.second.client() as second_api:
        first_name, first_session = open_session(first_api, "nb.ipynb")
        second_name, second_session = open_session(second_api, "nb.ipynb")
    first = room_client(pair.first, first_name, first_session)
    second = room_client(pair.second, second_name, second_session)
    async with first as ada, second as bob:  # ada's room opens first
        assert sources(bob) == ORIGINAL
        assert writable(pair.first, "nb.ipynb")
        assert not writable(pair.second, "nb.ipynb")

        edit_first_cell(bob, " # bob")
        assert sources(bob)[0] == "a = 1 # bob"  # his own view first shows it
        await eventually(lambda: sources(bob) == ORIGINAL, "bob's edit to be undone")
        await eventually(lambda: bob.shared.ystate["dirty"] is False, "bob's tab to be clean")
        answer = await save(bob, 7)
        assert answer == {"type": "save", "responseTo": 7, "status": "failed"}
        assert sources_on_disk(pair.notebook) == ORIGINAL

        edit_first_cell(ada, " # ada")
        await eventually(
            lambda: sources_on_disk(pair.notebook) == ["a = 1 # ada", "b = 2"], "ada's save"
        )
        await eventually(lambda: sources(bob) == ["a = 1 # ada", "b = 2"], "bob to see it")
        assert sources(ada) == ["a = 1 # ada", "b = 2"]  # bob's edit never reached ada

        # Nor does the second server run cells into its read-only room.
        with pair.second.client() as second_api:
            started = second_api.post("api/kernels", json={"name": "python3"})
            assert started.status_code == 201, started.text
            cell_id = bob.shared.get()["cells"][0]["id"]
            body = {"cell_id": cell_id, "document_id": second_name}
            refused = second_api.post(f"api/kernels/{started.json()['id']}/execute", json=body)
        assert refused.status_code == 400, refused.text
        assert "read-only" in refused.text


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["stopped", "killed"])
async def test_the_read_only_room_takes_over_when_the_owner_goes(
    pair: Pair, how: signal.Signals
) -> None:
    with pair.first.client() as first_api, pair.second.client() as second_api:
        first_name, first_session = open_session(first_api, "nb.ipynb")
        second_name, second_session = open_session(second_api, "nb.ipynb")
    async with room_client(pair.first, first_name, first_session):
        pass  # the owner's room stays open through its grace period
    async with room_client(pair.second, second_name, second_session) as bob:
        assert not writable(pair.second, "nb.ipynb")
        kill(pair.first, how)
        gone = time.monotonic()
        await eventually(lambda: writable(pair.second, "nb.ipynb"), "the takeover")
        print(f"took over {time.monotonic() - gone:.2f} s after the owner went")
        edit_first_cell(bob, " # bob")
        await eventually(
            lambda: sources_on_disk(pair.notebook) == ["a = 1 # bob", "b = 2"], "bob's save"
        )


async def test_a_room_that_loses_its_lock_saves_then_turns_read_only(tmp_path: Path) -> None:
    root = tmp_path / "root"
    notebook = write(root / "nb.ipynb", notebook_bytes(*ORIGINAL))
    write(root / "ganymede.toml", SAVE_ON_PURPOSE_ONLY.encode())
    home = tmp_path / "jupyter"
    server = start_server(root, jupyter_env(home))
    other_process = RoomLock(notebook.resolve(), home / "runtime")
    try:
        with server.client() as api:
            name, session = open_session(api, "nb.ipynb")
        async with room_client(server, name, session) as ada:
            assert writable(server, "nb.ipynb")
            edit_first_cell(ada, " # ada")
            # Another process replaces the lock file and locks the new one.
            other_process.path.unlink()
            assert other_process.try_acquire()
            await eventually(lambda: not writable(server, "nb.ipynb"), "the room to turn")
            assert sources_on_disk(notebook) == ["a = 1 # ada", "b = 2"]

            edit_first_cell(ada, "!")
            await eventually(lambda: sources(ada) == ["a = 1 # ada", "b = 2"], "the undo")

            other_process.release()
            await eventually(lambda: writable(server, "nb.ipynb"), "the room to take it back")
    finally:
        other_process.release()
        stop_server(server)
