"""An agent's suggestions on a real server: the change goes to a fork, the room is untouched
until a person accepts (merged, attributed to them) or rejects it (the fork gone), and the
agent's next reply line says which and by whom."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import nbformat
import pytest
from jupyter_ydoc import YNotebook

from tests.serve.conftest import RunningServer
from tests.serve.rooms.client import eventually, room_client
from tests.serve.rooms.conftest import server_with
from tests.serve.test_agent_api import Agent, cell_sources, notebook_file, person, type_into

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def suggest(agent: Agent, path: str, **body: object) -> dict[str, object]:
    answer = agent.cells(path=path, suggest=True, **body)
    assert answer.status_code == 200, answer.text
    return answer.json()["suggestion"]


def decide(api: httpx.Client, suggestion_id: object, action: str, by: str) -> httpx.Response:
    return api.post(f"api/agent/suggestions/{suggestion_id}", json={"action": action, "by": by})


def sources_on_disk(path: Path) -> list[str]:
    return [cell.source for cell in nbformat.read(path, as_version=4).cells]


async def test_an_accepted_suggestion_reaches_the_notebook_and_the_agent_hears_who(
    server: RunningServer, api: httpx.Client
) -> None:
    path = notebook_file(server.root, "suggested.ipynb", "a = 1", "b = 2")
    async with person(server, path, "Thomas") as thomas:
        agent = Agent(api, "suggesting-agent")
        agent.read(path)
        suggestion = suggest(
            agent, path, op="edit", id="cell-1", source="b = 3", title="Fix b", description="why"
        )
        assert suggestion["title"] == "Fix b" and suggestion["outcome"] is None
        listed = api.get("api/agent/suggestions", params={"path": path}).json()["suggestions"]
        assert [s["id"] for s in listed] == [suggestion["id"]]
        forks = api.get(f"api/collaboration/fork/{server_room(api, path)}").json()
        assert suggestion["fork"] in forks
        assert cell_sources(thomas) == ["a = 1", "b = 2"]  # the room is untouched

        decided = decide(api, suggestion["id"], "accept", "Thomas")
        assert decided.status_code == 200, decided.text
        await eventually(lambda: cell_sources(thomas) == ["a = 1", "b = 3"], "the merge")
        await eventually(
            lambda: sources_on_disk(server.root / path) == ["a = 1", "b = 3"], "the file"
        )
        lines = [entry["line"] for entry in agent.changed()]
        assert f"@@suggestion {suggestion['id']} accepted by Thomas" in lines
        assert all("@@suggestion" not in entry["line"] for entry in agent.changed())  # told once
        assert decide(api, suggestion["id"], "accept", "Thomas").status_code == 404
        api.delete(f"api/agent/sessions/{agent.session}")


async def test_a_rejected_suggestion_leaves_the_notebook_and_its_fork_goes(
    server: RunningServer, api: httpx.Client
) -> None:
    path = notebook_file(server.root, "rejected.ipynb", "a = 1")
    async with person(server, path, "Thomas") as thomas:
        agent = Agent(api, "rejected-agent")
        agent.read(path)
        added = suggest(agent, path, op="add", source="new = 1")
        deleted = suggest(agent, path, op="delete", id="cell-0")
        assert decide(api, added["id"], "reject", "Thomas").status_code == 200
        assert decide(api, deleted["id"], "reject", "Thomas").status_code == 200
        forks = api.get(f"api/collaboration/fork/{server_room(api, path)}").json()
        assert forks == {}
        assert cell_sources(thomas) == ["a = 1"]
        lines = sorted(entry["line"] for entry in agent.changed())
        assert lines == sorted(
            [
                f"@@suggestion {added['id']} rejected by Thomas",
                f"@@suggestion {deleted['id']} rejected by Thomas",
            ]
        )
        api.delete(f"api/agent/sessions/{agent.session}")


async def test_deciding_through_the_fork_endpoint_is_the_persons_decision(
    server: RunningServer, api: httpx.Client
) -> None:
    """As jupyter-suggestions decides: ``DELETE …/fork/ID?merge=true`` accepts, without merge
    rejects, and the agent hears the name of whoever is logged in."""
    path = notebook_file(server.root, "through-forks.ipynb", "a = 1", "b = 2")
    async with person(server, path, "Thomas") as thomas:
        agent = Agent(api, "forked-agent")
        agent.read(path)
        edited = suggest(agent, path, op="edit", id="cell-1", source="b = 3")
        rejected = suggest(agent, path, op="edit", id="cell-0", source="a = 0")
        deleted = suggest(agent, path, op="delete", id="cell-0")
        root = server_room(api, path)
        forks = api.get(f"api/collaboration/fork/{root}").json()
        description = json.loads(forks[deleted["fork"]]["description"])
        assert description["suggestionType"] == "DELETE" and description["cellId"] == "cell-0"

        merged = api.delete(f"api/collaboration/fork/{edited['fork']}", params={"merge": "true"})
        assert merged.status_code == 200, merged.text
        assert api.delete(f"api/collaboration/fork/{rejected['fork']}").status_code == 200
        merged = api.delete(f"api/collaboration/fork/{deleted['fork']}", params={"merge": "true"})
        assert merged.status_code == 200, merged.text
        await eventually(lambda: cell_sources(thomas) == ["b = 3"], "both merges")
        await eventually(lambda: sources_on_disk(server.root / path) == ["b = 3"], "the file")

        name = api.get("api/me").json()["identity"]["display_name"]
        lines = sorted(
            entry["line"] for entry in agent.changed() if entry["line"].startswith("@@suggestion")
        )
        assert lines == sorted(
            [
                f"@@suggestion {edited['id']} accepted by {name}",
                f"@@suggestion {rejected['id']} rejected by {name}",
                f"@@suggestion {deleted['id']} accepted by {name}",
            ]
        )
        assert api.get(f"api/collaboration/fork/{root}").json() == {}
        api.delete(f"api/agent/sessions/{agent.session}")


async def test_a_deletions_fork_keeps_the_cell_until_it_is_accepted(
    server: RunningServer, api: httpx.Client
) -> None:
    """jupyter-suggestions shows a deletion's cell from its fork, and deletes it there itself
    as it accepts."""
    path = notebook_file(server.root, "delete-in-fork.ipynb", "a = 1", "b = 2")
    agent = Agent(api, "deleting-agent")
    agent.read(path)
    deleted = suggest(agent, path, op="delete", id="cell-0")
    session_id = api.put(
        f"api/collaboration/session/{path}", json={"format": "json", "type": "notebook"}
    ).json()["sessionId"]
    fork = str(deleted["fork"])
    async with (
        room_client(server, fork, session_id, YNotebook()) as page,
        room_client(server, fork, session_id, YNotebook()) as watcher,
    ):
        assert cell_sources(page) == ["a = 1", "b = 2"]
        notebook: YNotebook = page.shared  # type: ignore[assignment]
        del notebook.ycells[0]
        await eventually(lambda: cell_sources(watcher) == ["b = 2"], "the deletion in the fork")
    decided = decide(api, deleted["id"], "accept", "Thomas")
    assert decided.status_code == 200, decided.text
    cells = agent.read(path)["notebook"]["cells"]
    assert [cell["source"] for cell in cells] == ["b = 2"]
    api.delete(f"api/agent/sessions/{agent.session}")


async def test_a_suggestion_on_a_cell_changed_since_keeps_the_persons_text(
    server: RunningServer, api: httpx.Client
) -> None:
    path = notebook_file(server.root, "changed-since.ipynb", "total = 1")
    async with person(server, path, "Thomas") as thomas:
        agent = Agent(api, "late-agent")
        agent.read(path)
        suggestion = suggest(agent, path, op="edit", id="cell-0", source="total = 1 + 1")
        type_into(thomas, 0, "  # Thomas")
        await eventually(lambda: agent.changed() != [], "Thomas's edit to reach the room")
        decided = decide(api, suggestion["id"], "accept", "Thomas")
        assert decided.status_code == 200, decided.text
        assert decided.json()["suggestion"]["changed_since"] is True

        def merged() -> bool:
            notebook: YNotebook = thomas.shared  # type: ignore[assignment]
            source = str(notebook.ycells[0]["source"])
            return "# Thomas" in source and "+ 1" in source

        await eventually(merged, "both texts in the cell")
        lines = [entry["line"] for entry in agent.changed() if "@@suggestion" in entry["line"]]
        assert lines and "changed since" in lines[0]
        api.delete(f"api/agent/sessions/{agent.session}")


def test_bad_decisions_and_suggestions_are_refused(
    server: RunningServer, api: httpx.Client
) -> None:
    path = notebook_file(server.root, "refusals.ipynb", "x = 1")
    agent = Agent(api, "refused-agent")
    agent.read(path)
    assert decide(api, "abcd", "accept", "Thomas").status_code == 404
    moved = agent.cells(path=path, op="move", id="cell-0", suggest=True)
    assert moved.status_code == 400 and "suggested" in moved.json()["message"]
    not_bool = agent.cells(path=path, op="edit", id="cell-0", source="y", suggest="yes")
    assert not_bool.status_code == 400
    suggestion = suggest(agent, path, op="edit", id="cell-0", source="x = 2")
    assert decide(api, suggestion["id"], "merge", "Thomas").status_code == 400
    assert decide(api, suggestion["id"], "accept", " ").status_code == 400
    assert decide(api, suggestion["id"], "reject", "Thomas").status_code == 200
    api.delete(f"api/agent/sessions/{agent.session}")


def server_room(api: httpx.Client, path: str) -> str:
    answer = api.put(
        f"api/collaboration/session/{path}", json={"format": "json", "type": "notebook"}
    )
    return f"json:notebook:{answer.json()['fileId']}"


def test_suggest_mode_makes_every_edit_a_suggestion_unless_a_call_says_not(
    tmp_path: Path,
) -> None:
    with server_with(tmp_path, b'[agent]\nmode = "suggest"\n') as suggesting:
        path = notebook_file(suggesting.root, "mode.ipynb", "x = 1")
        with suggesting.client() as api:
            agent = Agent(api, "mode-agent")
            agent.read(path)
            by_default = agent.cells(path=path, op="edit", id="cell-0", source="x = 2")
            assert by_default.status_code == 200 and "suggestion" in by_default.json()
            direct = agent.cells(path=path, op="edit", id="cell-0", source="x = 3", suggest=False)
            assert direct.status_code == 200 and direct.json()["id"] == "cell-0"
            live = agent.read(path)["notebook"]["cells"][0]["source"]
            assert live == "x = 3"


def test_outcomes_no_session_will_hear_are_forgotten(
    server: RunningServer, api: httpx.Client
) -> None:
    path = notebook_file(server.root, "forgotten.ipynb", "x = 1")
    agent = Agent(api, "gone-agent")
    agent.read(path)
    decided = suggest(agent, path, op="edit", id="cell-0", source="x = 2")
    still_open = suggest(agent, path, op="edit", id="cell-0", source="x = 3")
    assert decide(api, decided["id"], "reject", "Thomas").status_code == 200
    api.delete(f"api/agent/sessions/{agent.session}")
    left = api.get("api/agent/suggestions", params={"agent": "gone-agent"}).json()["suggestions"]
    assert [s["id"] for s in left] == [still_open["id"]]  # the open one waits for a person
    assert decide(api, still_open["id"], "reject", "Thomas").status_code == 200


def test_the_fork_describes_the_suggestion_as_jupyter_suggestions_reads_it(
    server: RunningServer, api: httpx.Client
) -> None:
    path = notebook_file(server.root, "described.ipynb", "x = 1")
    agent = Agent(api, "claude-code")
    agent.read(path)
    edit = suggest(agent, path, op="edit", id="cell-0", source="x = 2", description="tidier")
    added = suggest(agent, path, op="add", source="y = 1", cell_type="markdown")
    bad_type = agent.cells(path=path, op="add", source="z", cell_type="table", suggest=True)
    assert bad_type.status_code == 400
    forks = api.get(f"api/collaboration/fork/{server_room(api, path)}").json()
    assert set(forks) == {edit["fork"], added["fork"]}  # the refused one made no fork
    described = json.loads(forks[edit["fork"]]["description"])
    assert described["cellId"] == "cell-0" and described["path"] == path
    assert described["suggestionType"] == "CHANGE"
    assert described["mimeType"] == "text/x-ipython"
    assert described["metadata"]["author"]["display_name"] == "Claude Code"
    assert described["metadata"]["description"] == "tidier"
    new_cell = json.loads(forks[added["fork"]]["description"])
    assert new_cell["cellId"] == added["cell"] and new_cell["suggestionType"] == "ADD"
    assert new_cell["mimeType"] == "text/x-ipythongfm"
    for suggestion in (edit, added):
        assert decide(api, suggestion["id"], "reject", "Thomas").status_code == 200
    api.delete(f"api/agent/sessions/{agent.session}")
