"""An agent at work, as a person sees it in JupyterLab: a real ``ganymede mcp`` (the MCP SDK's
client over stdio, named ``claude-code``) edits a cell of the notebook the page has open.

The MCP client runs on its own thread and event loop: Playwright's sync driver holds this one's.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from nbformat.v4 import new_code_cell
from playwright.sync_api import expect

from tests.browser.conftest import OpenLab
from tests.browser.lab import LabPage, write_notebook
from tests.mcp.conftest import call, door_to
from tests.serve.conftest import RunningServer

pytestmark = pytest.mark.slow

GONE_TIMEOUT_MS = 10_000


class McpAgent:
    """A ``ganymede mcp`` session on a thread of its own, told what to do step by step."""

    def __init__(self, server: RunningServer) -> None:
        self.server = server
        self._steps: queue.Queue[tuple[str, dict[str, object]] | None] = queue.Queue()
        self._answers: queue.Queue[str | BaseException] = queue.Queue()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._work()), daemon=True)

    def call(self, tool: str, **arguments: object) -> str:
        self._steps.put((tool, arguments))
        answer = self._answers.get(timeout=60)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    async def _work(self) -> None:
        try:
            async with door_to(self.server) as session:
                self._answers.put("open")
                while (step := await asyncio.to_thread(self._steps.get)) is not None:
                    tool, arguments = step
                    try:
                        self._answers.put(await call(session, tool, **arguments))
                    except BaseException as error:  # handed to the test's thread
                        self._answers.put(error)
        except BaseException as error:
            self._answers.put(error)
        self._answers.put("closed")

    @contextmanager
    def running(self) -> Iterator[McpAgent]:
        self._thread.start()
        assert self._answers.get(timeout=60) == "open"
        try:
            yield self
        finally:
            self.close()

    def close(self) -> None:
        if self._thread.is_alive():
            self._steps.put(None)
            self._thread.join(timeout=60)


def collaborators(lab: LabPage) -> None:
    """Open the Collaboration side panel (jupyter-collaboration-ui's)."""
    lab.page.locator('.jp-SideBar .lm-TabBar-tab[data-id="jp-collaboration-panel"]').click()


def test_an_mcp_agent_is_a_collaborator_with_its_cursor_in_the_cell_it_edits(
    served: RunningServer, lab_page: OpenLab
) -> None:
    path = "agent-presence.ipynb"
    first, second = new_code_cell("a = 1"), new_code_cell("b = 2")
    first["id"], second["id"] = "cell-a", "cell-b"
    write_notebook(served.root / path, first, second)
    lab = lab_page(path)
    collaborators(lab)
    listed = lab.page.locator(".jp-CollaboratorsList .jp-Collaborator", has_text="Claude Code")
    agent = McpAgent(served)
    with agent.running():
        agent.call("notebook_read", path=path)
        agent.call("cell_edit", path=path, id="cell-b", source="b = 3")
        expect(listed).to_be_visible()
        expect(lab.cell_editor(1)).to_have_text("b = 3")
        cursor = lab.cells.nth(1).locator(".jp-remote-cursor")
        expect(cursor).to_have_count(1)
        expect(lab.cells.nth(0).locator(".jp-remote-cursor")).to_have_count(0)
        flag = lab.page.locator(".jp-remote-userFlag-name")  # a tooltip: not inside the cell
        expect(flag).to_have_text("Claude Code")
    expect(lab.cells.nth(1).locator(".jp-remote-cursor")).to_have_count(0, timeout=GONE_TIMEOUT_MS)
    expect(listed).to_have_count(0, timeout=GONE_TIMEOUT_MS)
