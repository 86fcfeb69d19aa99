"""An agent at work shows in the room's awareness as a collaborator, on a real server: a room
client playing Thomas sees it come with the agent's first call, its caret in the cell it edits,
and go when its session ends."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from jupyter_ydoc import YNotebook
from pycrdt import Assoc

from ganymede.serve.rooms import protocol
from ganymede.serve.rooms.presence import GLOBAL_AWARENESS_ROOM
from tests.serve.conftest import RunningServer
from tests.serve.rooms.client import DEADLINE, RoomClient, eventually, open_socket
from tests.serve.test_agent_api import Agent, notebook_file, person

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Awareness:
    """The awareness states a room client has heard, by client id."""

    def __init__(self, client: RoomClient) -> None:
        self.client = client
        self.states: dict[int, dict[str, Any] | None] = {}

    async def until(self, condition: Any, what: str) -> None:
        async def hear() -> None:
            while not condition(self):
                frame = await self.client.next_frame(protocol.MessageType.AWARENESS)
                message = protocol.decode_frame(frame)
                assert isinstance(message, protocol.AwarenessUpdate)
                for entry in message.entries:
                    self.states[entry.client_id] = None if entry.gone else json.loads(entry.state)

        try:
            await asyncio.wait_for(hear(), DEADLINE)
        except TimeoutError:
            raise AssertionError(f"timed out waiting for {what}: {self.states}") from None

    def agents(self) -> dict[int, dict[str, Any]]:
        return {
            client_id: state
            for client_id, state in self.states.items()
            if state is not None and state.get("user", {}).get("kind") == "agent"
        }


def caret_at_end_of(client: RoomClient, index: int) -> dict[str, Any]:
    notebook: YNotebook = client.shared  # type: ignore[assignment]
    source = notebook.ycells[index]["source"]
    return source.sticky_index(len(source), Assoc.BEFORE).to_json()


async def test_an_agent_is_seen_where_it_edits_and_leaves_with_its_session(
    server: RunningServer, api: httpx.Client
) -> None:
    path = notebook_file(server.root, "presence.ipynb", "a = 1", "b = 2")
    async with person(server, path, "Thomas") as thomas:
        heard = Awareness(thomas)
        agent = Agent(api)
        agent.read(path)
        await heard.until(lambda h: h.agents(), "the agent to show")
        [(client_id, state)] = heard.agents().items()
        assert state["user"]["name"] == "claude-code"
        assert state["user"]["display_name"] == "Claude Code"
        assert state["user"]["initials"] == "CC"
        assert "cursors" not in state  # reading, on no cell

        answer = agent.cells(path=path, op="edit", id="cell-1", source="b = 3")
        assert answer.status_code == 200, answer.text
        await heard.until(
            lambda h: "cursors" in (h.states.get(client_id) or {}), "the agent's caret"
        )
        [cursor] = heard.states[client_id]["cursors"]  # type: ignore[index]
        assert cursor["primary"] is True
        await heard.until(lambda h: thomas.shared.get()["cells"][1]["source"] == "b = 3", "edit")
        assert cursor["head"] == caret_at_end_of(thomas, 1) == cursor["anchor"]

        ended = api.delete(f"api/agent/sessions/{agent.session}")
        assert ended.status_code == 204
        await heard.until(lambda h: h.states.get(client_id, {}) is None, "the agent to leave")
        assert heard.agents() == {}


async def test_two_sessions_are_two_collaborators(server: RunningServer, api: httpx.Client) -> None:
    path = notebook_file(server.root, "two-agents.ipynb", "x = 1")
    async with person(server, path, "Thomas") as thomas:
        heard = Awareness(thomas)
        first, second = Agent(api, "claude-code"), Agent(api, "codex-mcp-client")
        first.read(path)
        second.read(path)
        await heard.until(lambda h: len(h.agents()) == 2, "both agents")
        names = sorted(state["user"]["display_name"] for state in heard.agents().values())
        assert names == ["Claude Code", "Codex"]
        api.delete(f"api/agent/sessions/{first.session}")
        await heard.until(lambda h: len(h.agents()) == 1, "one agent to leave")
        [state] = heard.agents().values()
        assert state["user"]["name"] == "codex-mcp-client"
        api.delete(f"api/agent/sessions/{second.session}")


async def test_the_collaboration_panel_hears_the_agent_in_the_global_awareness(
    server: RunningServer, api: httpx.Client
) -> None:
    path = notebook_file(server.root, "global.ipynb", "x = 1")
    connection = await open_socket(server, GLOBAL_AWARENESS_ROOM, None)
    try:
        agent = Agent(api, "panel-agent")
        agent.read(path)
        states: dict[int, dict[str, Any] | None] = {}

        async def hear(condition: Any) -> None:
            while not condition():
                frame = await asyncio.wait_for(connection.read_message(), DEADLINE)
                assert isinstance(frame, bytes)
                message = protocol.decode_frame(frame)
                if isinstance(message, protocol.AwarenessUpdate):
                    for entry in message.entries:
                        states[entry.client_id] = None if entry.gone else json.loads(entry.state)

        def agent_states() -> list[dict[str, Any]]:
            return [s for s in states.values() if s is not None and s["user"]["name"] == agent.name]

        await hear(lambda: agent_states())
        [state] = agent_states()
        assert state["documents"] == [path]
        assert state["current"] == f"notebook:{path}"
        api.delete(f"api/agent/sessions/{agent.session}")
        await hear(lambda: not agent_states())
    finally:
        connection.close()


async def test_a_queued_cell_shows_to_everyone_until_it_runs_and_the_runner_is_named(
    server: RunningServer, api: httpx.Client
) -> None:
    gate = server.root / "queued.gate"
    waits = (
        f"import pathlib, time\nwhile not pathlib.Path({str(gate)!r}).exists():\n"
        "    time.sleep(0.05)"
    )
    path = notebook_file(server.root, "queued.ipynb", waits, "after = 1")
    async with person(server, path, "Thomas") as thomas:
        heard = Awareness(thomas)
        agent = Agent(api, "runner-agent")
        agent.read(path)
        answer = agent.call("run", path=path, ids=["cell-0", "cell-1"], wait=0)
        assert answer.status_code == 200, answer.text
        assert answer.json()["finished"] is False

        def states() -> list[str | None]:
            notebook: YNotebook = thomas.shared  # type: ignore[assignment]
            return [ycell.get("execution_state") for ycell in notebook.ycells]

        await eventually(lambda: states() == ["running", "running"], "both cells shown queued")
        assert not gate.exists()  # the first has not finished: the second is only queued
        assert thomas.shared.get()["cells"][1]["execution_count"] is None

        await heard.until(
            lambda h: any(s.get("running") for s in h.agents().values()),
            "the runner in awareness",
        )
        [runner] = [s for s in heard.agents().values() if s.get("running")]
        assert runner["user"]["name"] == "runner-agent"
        assert runner["running"] == "cell-0"
        assert runner["cursors"][0]["head"] == caret_at_end_of(thomas, 0)

        gate.touch()
        await eventually(lambda: states() == ["idle", "idle"], "both cells to run")
        assert thomas.shared.get()["cells"][1]["execution_count"] is not None
        api.delete(f"api/agent/sessions/{agent.session}")
