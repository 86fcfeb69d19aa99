"""Forks over HTTP and room clients, as jupyter-collaboration's fork manager uses them."""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from jupyter_ydoc import YNotebook

from ganymede.history import HistoryStore, PointKind
from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server
from tests.serve.rooms.client import eventually, room_client
from tests.serve.rooms.conftest import (
    edit_first_cell,
    notebook_bytes,
    open_session,
    sources,
    sources_on_disk,
    write,
)
from tests.serve.rooms.test_history import history_db
from tests.serve.rooms.test_lock import holder

pytestmark = pytest.mark.slow


def merges(server: RunningServer, file_id: str) -> list[str]:
    """Who merged forks into the file, by the history store."""
    store = HistoryStore(history_db(server))
    try:
        return [p.who for p in store.points(file_id) if p.kind is PointKind.MERGE]
    finally:
        store.close()


def fork_url(roomid: str) -> str:
    return f"api/collaboration/fork/{urllib.parse.quote(roomid, safe='')}"


def async_api(server: RunningServer) -> httpx.AsyncClient:
    """Requests that leave the event loop free: the room clients keep syncing meanwhile."""
    headers = {"Authorization": f"token {server.token}"}
    return httpx.AsyncClient(base_url=server.base, headers=headers, timeout=30)


def create_fork(api: httpx.Client, root: str, **body: object) -> dict[str, object]:
    answer = api.put(fork_url(root), json=body)
    assert answer.status_code == 201, answer.text
    reply: dict[str, object] = answer.json()
    return reply


@pytest.fixture
def served(tmp_path: Path) -> Iterator[RunningServer]:
    write(tmp_path / "root" / "nb.ipynb", notebook_bytes("a = 1"))
    running = start_server(tmp_path / "root", jupyter_env(tmp_path / "jupyter"))
    yield running
    stop_server(running)


def test_a_fork_edited_and_merged_reaches_the_root_room_and_the_file(
    served: RunningServer,
) -> None:
    async def round_trip() -> None:
        with served.client() as api:
            root, session = open_session(api, "nb.ipynb")
        async with async_api(served) as api, room_client(served, root, session) as person:
            answer = await api.put(fork_url(root), json={"title": "idea", "description": "b"})
            assert answer.status_code == 201, answer.text
            reply = answer.json()
            fork_id = reply["fork_roomid"]
            assert reply["fork_info"] == {
                "root_roomid": root,
                "synchronize": False,
                "title": "idea",
                "description": "b",
            }
            assert reply["sessionId"] == session
            assert list((await api.get(fork_url(root))).json()) == [fork_id]
            async with (
                room_client(served, fork_id, session, YNotebook()) as forked,
                room_client(served, fork_id, session, YNotebook()) as watching,
            ):
                assert sources(forked) == ["a = 1"]
                edit_first_cell(forked, "\nb = 2")
                await eventually(lambda: sources(watching) == ["a = 1\nb = 2"], "the fork edit")
                assert sources(person) == ["a = 1"]  # not merged yet
                merged = await api.delete(fork_url(fork_id), params={"merge": "true"})
                assert merged.status_code == 200, merged.text
            await eventually(lambda: sources(person) == ["a = 1\nb = 2"], "the merge")
            assert (await api.get(fork_url(root))).json() == {}
        path = served.root / "nb.ipynb"
        await eventually(lambda: sources_on_disk(path) == ["a = 1\nb = 2"], "the autosave")
        # The merge is a point of the history, by whoever merged.
        file_id = root.rsplit(":", 1)[1]
        await eventually(lambda: merges(served, file_id), "the merge recorded")
        assert all(who for who in merges(served, file_id))

    asyncio.run(round_trip())


def test_a_synchronized_fork_follows_its_root_and_deleting_it_merges_nothing(
    served: RunningServer,
) -> None:
    async def follow() -> None:
        with served.client() as api:
            root, session = open_session(api, "nb.ipynb")
            fork_id = str(create_fork(api, root, synchronize=True)["fork_roomid"])
        async with async_api(served) as api, room_client(served, root, session) as person:
            async with room_client(served, fork_id, session, YNotebook()) as forked:
                edit_first_cell(person, "\nroot = 1")
                await eventually(lambda: sources(forked) == ["a = 1\nroot = 1"], "following")
                edit_first_cell(forked, "\nfork = 1")
                await asyncio.sleep(0.2)
            assert (await api.delete(fork_url(fork_id))).status_code == 200
            await asyncio.sleep(0.2)
            assert sources(person) == ["a = 1\nroot = 1"]

    asyncio.run(follow())


def test_bad_fork_requests_get_clear_errors(served: RunningServer) -> None:
    with served.client() as api:
        root, _ = open_session(api, "nb.ipynb")
        unknown = api.delete(fork_url("0123abcd"), params={"merge": "true"})
        assert unknown.status_code == 404
        assert "no fork room" in unknown.json()["error"]
        assert api.put(fork_url(root), content=b"[1]").status_code == 400
        assert api.put(fork_url(root), content=b"{nope").status_code == 400
        bad = api.put(fork_url(root), json={"synchronize": "yes"})
        assert (bad.status_code, bad.json()["error"]) == (400, "synchronize must be true or false")
        gone = api.put(fork_url("json:notebook:" + "0" * 32), json={})
        assert gone.status_code == 404
        assert api.put(fork_url("nocolons"), json={}).status_code == 400


def test_merging_into_a_read_only_room_is_refused_and_the_fork_kept(tmp_path: Path) -> None:
    notebook = write(tmp_path / "root" / "nb.ipynb", notebook_bytes("a = 1"))
    env = jupyter_env(tmp_path / "jupyter")
    other, answer = holder(notebook.resolve(), Path(env["JUPYTER_RUNTIME_DIR"]))
    assert answer == "held"  # another server's room owns the file
    served = start_server(tmp_path / "root", env)
    try:

        async def refused() -> None:
            with served.client() as api:
                root, session = open_session(api, "nb.ipynb")
                fork_id = str(create_fork(api, root)["fork_roomid"])
            async with room_client(served, fork_id, session, YNotebook()) as forked:
                edit_first_cell(forked, "\nb = 2")
                await asyncio.sleep(0.2)
            with served.client() as api:
                merged = api.delete(fork_url(fork_id), params={"merge": "true"})
                assert merged.status_code == 409
                assert "read-only" in json.loads(merged.text)["error"]
                assert fork_id in api.get(fork_url(root)).json()
                # A version restored from the timeline is refused the same way.
                reply = api.get("api/collaboration/timeline/nb.ipynb?format=json&type=notebook")
                segment = urllib.parse.quote(root, safe="")
                restored = api.put(
                    f"api/collaboration/undo_redo/{segment}",
                    params={"action": "restore", "steps": 0, "forkRoom": reply.json()["forkRoom"]},
                )
                assert restored.status_code == 409, restored.text

        asyncio.run(refused())
    finally:
        stop_server(served)
        assert other.stdin is not None and other.stdout is not None
        other.stdin.close()
        other.wait()
        other.stdout.close()
    assert sources_on_disk(notebook) == ["a = 1"]
