"""An agent's room released and opened again, on a real server: every guarantee the agent had
while it held the room holds after the room closed and its memory went.

The server lets an agent's hold go a second after its last call (``[agent] presence_idle``)
and closes a clientless room a second later (the grace period), so a test sees the room close
between two calls of the agent's, as it does after five idle minutes in use.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import nbformat
import pytest

from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server
from tests.serve.rooms.client import eventually
from tests.serve.rooms.conftest import open_session
from tests.serve.test_agent_api import Agent, notebook_file, person, type_into

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    home = tmp_path_factory.mktemp("server")
    root = home / "root"
    root.mkdir()
    (home / "ganymede.toml").write_text("[agent]\npresence_idle = 1\n")
    running = start_server(
        root,
        jupyter_env(home / "jupyter"),
        f"--GanymedeExtension.ganymede_toml={home / 'ganymede.toml'}",
        "--GanymedeExtension.room_grace_period=1",
    )
    yield running
    stop_server(running)


def change_on_disk(file: Path, index: int, source: str) -> None:
    """Another program rewrites one cell's source, as an editor or a script would."""
    notebook = nbformat.read(file, as_version=4)
    notebook.cells[index].source = source
    file.write_text(nbformat.writes(notebook) + "\n", encoding="utf-8")


def sources_on_disk(file: Path) -> list[str]:
    return [cell.source for cell in nbformat.read(file, as_version=4).cells]


async def test_a_room_opened_again_after_its_release_keeps_every_guarantee(
    server: RunningServer, api: httpx.Client
) -> None:
    path = notebook_file(server.root, "released.ipynb", "a = 1", "b = 2", "c = 3", "d = 4")
    file = server.root / path
    room, _ = open_session(api, path)

    def closes() -> int:
        return server.log.read_text().count(f"room {room}: closed")

    def opens() -> int:
        return server.log.read_text().count(f"room {room}: opened")

    agent = Agent(api)
    mark = agent.read(path)["mark"]
    answer = agent.cells(path=path, op="edit", id="cell-3", source="d = 40")
    assert answer.status_code == 200, answer.text

    # The agent goes quiet: its hold lets go, the room saves and closes.
    await eventually(lambda: closes() == 1, "the agent's room to close")
    assert sources_on_disk(file) == ["a = 1", "b = 2", "c = 3", "d = 40"]

    # Meanwhile another program changes a cell, and Thomas another in a room of his own.
    change_on_disk(file, 0, "a = 100")
    async with person(server, path, "Thomas") as thomas:
        type_into(thomas, 1, "  # checked")
        await eventually(lambda: sources_on_disk(file)[1] == "b = 2  # checked", "his save")
    await eventually(lambda: closes() == 2, "Thomas's room to close")
    assert opens() == 2

    # The agent's next call opens the room again and names exactly what others did.
    [notebook] = agent.changed()
    assert opens() == 3
    assert notebook["line"] == (
        f"@@changed 2 cells by another program and Thomas since your last read: "
        f'call notebook_read(since: "{mark}")'
    )
    assert notebook["changes"] == [
        {
            "id": "cell-0",
            "cell_type": "code",
            "change": ["edited"],
            "by": "another program",
            "index": 0,
        },
        {"id": "cell-1", "cell_type": "code", "change": ["edited"], "by": "Thomas", "index": 1},
    ]

    # An edit of a cell another program changed since the agent's read is refused, as before.
    refused = agent.cells(path=path, op="edit", id="cell-0", source="a = 0")
    assert refused.status_code == 409, refused.text
    assert refused.json()["by"] == "another program"
    assert refused.json()["cell"]["source"] == "a = 100"

    # An edit of a cell nobody changed is made, and a change on disk merged in keeps it.
    made = agent.cells(path=path, op="edit", id="cell-2", source="c = 30")
    assert made.status_code == 200, made.text
    change_on_disk(file, 3, "d = 400")
    await eventually(
        lambda: sources_on_disk(file) == ["a = 100", "b = 2  # checked", "c = 30", "d = 400"],
        "the merge of the agent's edit with the change on disk to reach the file",
    )
    report = agent.read(since=mark)
    assert [(change["id"], change["by"]) for change in report["changes"]] == [
        ("cell-0", "another program"),
        ("cell-1", "Thomas"),
        ("cell-3", "another program"),
    ]
    assert [cell["source"] for cell in report["notebook"]["cells"]] == sources_on_disk(file)

    # Idle again: the room closes once more, and the file is as the room had it.
    await eventually(lambda: closes() == 3, "the room to close again")
    assert sources_on_disk(file) == ["a = 100", "b = 2  # checked", "c = 30", "d = 400"]
    assert agent.changed() == []  # the agent read it all: nothing opens the room for it
    assert opens() == 3
