"""Ganymede under a real JupyterHub: ``ganymede serve`` as ``Spawner.cmd``, and
``jupyterhub-singleuser`` with Ganymede installed, each reached through the hub's proxy with a
browser's cookies and with a token: rooms that autosave, file ids that follow a rename, the host
API in a kernel the server started, and a stop from the hub that saves the last edit."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ganymede.client.discover import server_for
from tests.serve.conftest import RunningServer
from tests.serve.hub import HANDED_IN_TOKEN, USER_CONFIG_HEADER, Hub, running_hub
from tests.serve.plain_server import ROOT_FLAGS
from tests.serve.rooms.client import eventually, room_client
from tests.serve.rooms.conftest import edit_first_cell, notebook_bytes, sources_on_disk, write
from tests.serve.test_host_calls import run_cell

pytestmark = pytest.mark.slow

HOST_CHECK = "from ganymede.kernel import host\nprint(host() is not None)"
SPAWNED = {
    "ganymede serve": ([sys.executable, "-m", "ganymede", "serve"], []),
    # No argument of Ganymede's; jupyter_server itself refuses root without --allow-root.
    "jupyterhub-singleuser": (
        [str(Path(sys.executable).parent / "jupyterhub-singleuser")],
        ROOT_FLAGS,
    ),
}


class Door:
    """One way in through the proxy: a client for REST calls and the headers that open the
    websockets the same way."""

    def __init__(self, server: RunningServer, client: httpx.Client, headers: dict[str, str]):
        self.server = server
        self.client = client
        self.headers = headers

    def open_session(self, path: str) -> tuple[str, str]:
        segment = path.replace("/", "%2F")
        answer = self.client.put(
            f"api/collaboration/session/{segment}", json={"format": "json", "type": "notebook"}
        )
        assert answer.status_code in (200, 201), answer.text
        return f"json:notebook:{answer.json()['fileId']}", str(answer.json()["sessionId"])


def token_door(hub: Hub) -> Door:
    token = hub.user_token()
    server = RunningServer(None, hub.home, f"{hub.user_url}lab?token={token}", hub.log)  # type: ignore[arg-type]
    headers = {"Authorization": f"token {token}"}
    return Door(server, httpx.Client(base_url=hub.user_url, headers=headers, timeout=60), headers)


def cookie_door(hub: Hub) -> Door:
    browser = hub.logged_in()
    cookies = "; ".join(f"{cookie.name}={cookie.value}" for cookie in browser.cookies.jar)
    # What a browser sends on a websocket, and the hub wants with a cookie.
    headers = {"Cookie": cookies, "Sec-Fetch-Mode": "websocket"}
    server = RunningServer(None, hub.home, f"{hub.user_url}lab", hub.log)  # type: ignore[arg-type]
    return Door(server, browser, headers)


async def check_serving(door: Door, name: str, home: Path) -> None:
    path = write(home / f"{name}.ipynb", notebook_bytes(name))
    room, session = door.open_session(path.name)
    async with room_client(door.server, room, session, headers=door.headers) as client:
        edit_first_cell(client, " edited")
        await eventually(lambda: sources_on_disk(path) == [f"{name} edited"], "the autosave")
        renamed = f"{name}-renamed.ipynb"
        answer = door.client.patch(f"api/contents/{path.name}", json={"path": renamed})
        assert answer.status_code == 200, answer.text
        found = door.client.get("api/fileid/id", params={"path": renamed})
        assert found.json()["id"] == room.rsplit(":", 1)[1]
    started = door.client.post(
        "api/sessions", json={"path": renamed, "type": "notebook", "kernel": {"name": "python3"}}
    )
    assert started.status_code == 201, started.text
    kernel = started.json()["kernel"]["id"]
    try:
        assert await run_cell(door.server, kernel, HOST_CHECK, headers=door.headers) == "True\n"
    finally:
        door.client.delete(f"api/kernels/{kernel}")


@pytest.mark.timeout(900)
@pytest.mark.parametrize("spawned", list(SPAWNED))
async def test_the_hub_spawns_a_server_with_ganymede_whole(tmp_path: Path, spawned: str) -> None:
    command, args = SPAWNED[spawned]
    with running_hub(tmp_path, command, args) as hub:
        await asyncio.to_thread(hub.start_server)
        by_token, by_cookie = token_door(hub), cookie_door(hub)
        await check_serving(by_token, "by-token", hub.home)
        await check_serving(by_cookie, "by-cookie", hub.home)

        # ganymede's commands find the server as any other, from its runtime file.
        found = server_for(hub.home, hub.runtime_dir)
        assert found is not None
        status = httpx.get(
            f"{found.url}api/status", headers={"Authorization": f"token {found.token}"}
        )
        assert status.status_code == 200, status.text
        # c.Spawner.disable_user_config holds for both commands.
        assert USER_CONFIG_HEADER not in status.headers
        server_token = found.token
        pid = found.pid
        env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(hub.runtime_dir)}
        grant = [sys.executable, "-m", "ganymede", "grant", "--list", "--json"]
        done = subprocess.run(grant, cwd=hub.home, env=env, capture_output=True, text=True)
        # Through the server: with no answer from it, the command would warn and go to the store.
        assert done.returncode == 0 and not done.stderr, done.stderr

        last = write(hub.home / "last.ipynb", notebook_bytes("last"))
        room, session = by_cookie.open_session(last.name)
        async with room_client(by_cookie.server, room, session, headers=by_cookie.headers) as ada:
            edit_first_cell(ada, " edit")
            await asyncio.sleep(0.2)  # the edit is 0.2 s old when the hub stops the server
            began = time.monotonic()
            await asyncio.to_thread(hub.stop_server)
            took = time.monotonic() - began
        by_token.client.close()
        by_cookie.client.close()
        assert sources_on_disk(last) == ["last edit"]
        log = hub.log.read_text()
        # The hub's SIGINT did it: it sends SIGTERM only once 30 s have passed without an exit.
        assert "received signal 2, stopping" in log
        assert "received signal 15" not in log
        print(f"{spawned}: stopped from the hub in {took:.2f} s (pid {pid})")
        # No token handed in appears in any log or URL line: the hub's, the environment's,
        # the user's.
        assert server_token and server_token not in log
        assert HANDED_IN_TOKEN not in log
        assert by_token.headers["Authorization"].split()[1] not in log
        assert not (hub.runtime_dir / f"jpserver-{pid}.json").exists()
