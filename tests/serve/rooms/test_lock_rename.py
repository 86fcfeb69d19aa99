"""A room's lock follows its file through a rename, so a second server still finds it owned."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ganymede.serve.rooms.lock import RoomLock
from tests.serve.rooms.client import eventually, room_client
from tests.serve.rooms.conftest import edit_first_cell, open_session, sources, sources_on_disk
from tests.serve.rooms.test_two_servers import ORIGINAL, Pair, start_pair, stop_server, writable

pytestmark = pytest.mark.slow


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    servers = start_pair(tmp_path)
    yield servers
    stop_server(servers.second)
    stop_server(servers.first)


def locked(path: Path, runtime_dir: Path) -> bool:
    """Whether some process holds the lock of ``path`` (this one takes it for a moment if not)."""
    probe = RoomLock(path.resolve(), runtime_dir)
    if probe.try_acquire():
        probe.release()
        return False
    return True


async def test_a_renamed_room_holds_the_new_paths_lock_and_lets_go_of_the_old(pair: Pair) -> None:
    moved = pair.root / "moved.ipynb"
    with pair.first.client() as first_api:
        name, session = open_session(first_api, "nb.ipynb")
        async with room_client(pair.first, name, session) as ada:
            assert locked(pair.notebook, pair.runtime_dir)
            renamed = first_api.patch("api/contents/nb.ipynb", json={"path": "moved.ipynb"})
            assert renamed.status_code == 200, renamed.text
            # Moved by the time the rename is answered, not when the watcher notices.
            assert locked(moved, pair.runtime_dir)
            assert not locked(pair.notebook, pair.runtime_dir)
            await eventually(lambda: ada.shared.path == "moved.ipynb", "the room to follow")

            with pair.second.client() as second_api:
                second_name, second_session = open_session(second_api, "moved.ipynb")
            async with room_client(pair.second, second_name, second_session) as bob:
                assert not writable(pair.second, "moved.ipynb")
                assert writable(pair.first, "moved.ipynb")
                edit_first_cell(bob, " # bob")
                await eventually(lambda: sources(bob) == ORIGINAL, "bob's edit to be undone")

                edit_first_cell(ada, " # ada")
                await eventually(lambda: "# ada" in moved.read_text(), "ada's room to save")
                await eventually(lambda: sources(bob)[0] == "a = 1 # ada", "bob to see it")
    assert sources_on_disk(moved) == ["a = 1 # ada", "b = 2"]
    assert not pair.notebook.exists()
