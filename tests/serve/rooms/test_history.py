"""Rooms record what they apply in the history store: who, when, how; it survives a restart,
and a corrupt store never stops a notebook opening as its file says."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_ydoc import YNotebook

from ganymede.history import HistoryStore, PointKind
from ganymede.history.store import DB_NAME
from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server
from tests.serve.rooms.client import eventually, room_client
from tests.serve.rooms.conftest import (
    edit_first_cell,
    notebook_bytes,
    open_session,
    server_with,
    sources,
    write,
)

pytestmark = pytest.mark.slow


def ganymede(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ganymede", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=60,
    )


def latest_source(server: RunningServer, file_id: str) -> str:
    """The first cell's source as of the store's latest point."""
    store = HistoryStore(history_db(server))
    try:
        points = store.points(file_id)
        latest = store.document_at(file_id, points[-1], points) if points else None
    finally:
        store.close()
    return str(YNotebook(latest).get()["cells"][0]["source"]) if latest is not None else ""


def sources_in(text: str) -> list[str]:
    return [cell.source for cell in nbformat.reads(text, as_version=4).cells]


def history_db(server: RunningServer) -> Path:
    return server.root.parent / "jupyter" / "data" / DB_NAME


def steps(server: RunningServer, file_id: str) -> list[tuple[str, PointKind]]:
    store = HistoryStore(history_db(server))
    try:
        return [(p.who, p.kind) for p in store.points(file_id) if p.kind.is_step]
    finally:
        store.close()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    write(tmp_path / "root" / "nb.ipynb", notebook_bytes("a = 1"))
    return tmp_path


async def edit_and_wait(server: RunningServer, text: str) -> str:
    with server.client() as api:
        name, session = open_session(api, "nb.ipynb")
    file_id = name.rsplit(":", 1)[1]
    async with room_client(server, name, session) as client:
        edit_first_cell(client, text)
        await eventually(
            lambda: PointKind.EDIT in {kind for _, kind in steps(server, file_id)},
            "the edit to be recorded",
        )
    return file_id


def test_edits_are_recorded_with_their_author_and_survive_a_restart(home: Path) -> None:
    env = jupyter_env(home / "jupyter")
    server = start_server(home / "root", env)
    try:
        file_id = asyncio.run(edit_and_wait(server, "\nb = 2"))
    finally:
        stop_server(server)
    first = steps(server, file_id)
    assert first[0] == ("file", PointKind.LOAD)
    assert PointKind.EDIT in {kind for _, kind in first}
    # Another program changes the file; the next room records its load and then the change.
    write(home / "root" / "nb.ipynb", notebook_bytes("from disk"))
    server = start_server(home / "root", env)
    try:
        asyncio.run(edit_and_wait(server, "\nc = 3"))
    finally:
        stop_server(server)
    second = steps(server, file_id)
    assert second[: len(first)] == first
    assert second.count(("file", PointKind.LOAD)) == 2
    # With no server running, the CLI reads the same history.
    listed = ganymede("history", "nb.ipynb", cwd=home / "root", env=env)
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout.splitlines()) == len(second)
    first_version = ganymede("history", "nb.ipynb", "--at", "1", cwd=home / "root", env=env)
    assert sources_in(first_version.stdout) == ["a = 1"]


def test_past_its_size_bound_a_rooms_history_is_compacted_and_stays_under(home: Path) -> None:
    with server_with(home, b"[history]\nmax_mb_per_document = 0.02\n") as server:

        async def many_edits() -> str:
            with server.client() as api:
                name, session = open_session(api, "nb.ipynb")
            file_id = name.rsplit(":", 1)[1]
            async with room_client(server, name, session) as client:
                notebook: YNotebook = client.shared  # type: ignore[assignment]
                for round_ in range(6):
                    for edit in range(20):  # each rewrites the cell: the history grows, not it
                        with notebook.ydoc.transaction():
                            source = notebook.ycells[0]["source"]
                            del source[:]
                            source += f"# {round_}.{edit} " + "x" * 2000
                    mark = f"# {round_}.19 "
                    await eventually(
                        lambda m=mark: latest_source(server, file_id).startswith(m), "a point"
                    )
            return file_id

        file_id = asyncio.run(many_edits())
    store = HistoryStore(history_db(server))
    try:
        assert store.size(file_id) <= 0.02 * 1024 * 1024
        assert store.points(file_id)[0].kind is PointKind.SNAPSHOT
    finally:
        store.close()
    assert latest_source(server, file_id).startswith("# 5.19 ")


def test_a_corrupt_history_is_moved_aside_and_the_notebook_opens_as_its_file_says(
    home: Path,
) -> None:
    data = home / "jupyter" / "data"
    data.mkdir(parents=True)
    (data / DB_NAME).write_bytes(b"not a database " * 200)
    server = start_server(home / "root", jupyter_env(home / "jupyter"))
    try:

        async def check() -> None:
            with server.client() as api:
                name, session = open_session(api, "nb.ipynb")
            async with room_client(server, name, session) as client:
                assert sources(client) == ["a = 1"]

        asyncio.run(check())
    finally:
        stop_server(server)
    log = server.log.read_text()
    assert log.count("cannot be read") == 1 and "started a new history" in log
    assert len(list(data.glob(f"{DB_NAME}.corrupt-*"))) == 1
