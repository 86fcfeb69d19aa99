"""The fork core called from inside the server (as agent suggestions will call it), and the
fork events it emits with jupyter-collaboration's schema."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_ydoc import YNotebook

from ganymede.agent import Author, AuthorKind
from ganymede.serve.compat import FORK_EVENTS
from ganymede.serve.handlers.forks import FORKS_SETTINGS_KEY
from ganymede.serve.rooms.forks import Forks, UnknownFork
from tests.serve.rooms.client import eventually, room_client
from tests.serve.rooms.conftest import notebook_bytes, sources, sources_on_disk, write
from tests.serve.test_compat import recorder
from tests.serve.test_core_rooms import InProcessServer


@pytest.fixture
async def server(tmp_path: Path, isolated_jupyter: Path) -> AsyncIterator[InProcessServer]:
    root = tmp_path / "root"
    write(root / "ganymede.toml", b"[serve]\nsave_delay = 0.1\n")
    write(root / "nb.ipynb", notebook_bytes("a = 1"))
    running = InProcessServer(root)
    try:
        yield running
    finally:
        await running.app._cleanup()


async def test_a_fork_made_and_merged_in_the_server_is_an_agents_edit(
    server: InProcessServer,
) -> None:
    events: list[dict[str, Any]] = recorder(server, FORK_EVENTS)
    forks: Forks = server.app.web_app.settings[FORKS_SETTINGS_KEY]
    name, session = await server.open_session("nb.ipynb")
    async with room_client(server.running, name, session) as person:
        fork = await forks.create(name, title="suggestion", username="claude")
        shared = fork.room.document.shared
        assert isinstance(shared, YNotebook)
        with shared.ydoc.transaction():
            source = shared.ycells[0]["source"]
            source += "  # suggested"
        assert sources(person) == ["a = 1"]
        agent = Author("claude", AuthorKind.AGENT)
        await forks.delete(fork.roomid, merge=True, author=agent, username="claude")
        await eventually(lambda: sources(person) == ["a = 1  # suggested"], "the merge")
        room = server.app.web_app.settings["ganymede_rooms"].room(name)
        assert room.attribution is not None
        cell_id = shared.ycells[0]["id"]
        stamp = room.attribution.authors()[cell_id].source
        assert stamp is not None and stamp.author == agent
    await eventually(
        lambda: sources_on_disk(server.root / "nb.ipynb") == ["a = 1  # suggested"], "the save"
    )
    await eventually(lambda: len(events) == 2, "the fork events")
    info = {"root_roomid": name, "synchronize": False, "title": "suggestion", "description": ""}
    assert events == [
        {"username": "claude", "fork_roomid": fork.roomid, "fork_info": info, "action": "create"},
        {"username": "claude", "fork_roomid": fork.roomid, "fork_info": info, "action": "delete"},
    ]
    assert forks.of(name) == {}


async def test_a_person_deciding_a_fork_leaves_it_to_its_decider_when_it_has_one(
    server: InProcessServer,
) -> None:
    """What the fork door's DELETE calls: a fork made for a person to decide on (an agent's
    suggestion) is carried out by whoever made it; any other is deleted."""
    forks: Forks = server.app.web_app.settings[FORKS_SETTINGS_KEY]
    name, _ = await server.open_session("nb.ipynb")
    ada = Author("ada", AuthorKind.PERSON)
    decisions: list[tuple[bool, Author]] = []
    plain, decided = await forks.create(name), await forks.create(name)

    async def decide(merge: bool, author: Author) -> None:
        decisions.append((merge, author))
        await forks.delete(decided.roomid, merge=False, author=author)

    forks.decided_by(decided.roomid, decide)
    await forks.decide(decided.roomid, merge=True, author=ada)
    assert decisions == [(True, ada)]
    await forks.decide(plain.roomid, merge=False, author=ada)
    assert forks.of(name) == {}
    with pytest.raises(UnknownFork):
        await forks.decide(plain.roomid, merge=False, author=ada)
