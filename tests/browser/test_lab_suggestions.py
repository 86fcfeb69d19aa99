"""An agent's suggestion, reviewed in JupyterLab with jupyter-suggestions: a real ``ganymede mcp``
(the MCP SDK's client over stdio) makes a ``cell_edit`` with ``suggest``, the suggestion shows in
jupyter-suggestions' panel, and the person decides there.

jupyter-suggestions' RTC manager lists a notebook's suggestions from its room's forks (``GET
…/fork/ROOM`` as the notebook opens, then the fork events on ``/api/events/subscribe``), opens
each fork's room to show the suggested cell, accepts by merging the fork (``DELETE
…/fork/ID?merge=true``) and rejects by deleting it; whoever the page is logged in as decides,
and the agent hears their name.

jupyter-suggestions-rtc 0.1.1 registers its manager only with jupyter-collaboration 3's frontend
(its ``@jupyter/collaborative-drive`` 3.x), which the test venv does not have, so the server runs
from the layered environment ``tests/jupyter_suggestions_env.py`` builds (``make test``), whose
JupyterLab loads that frontend and jupyter-suggestions only.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell
from playwright.sync_api import Browser, Locator, Response, expect

from tests import jupyter_suggestions_env
from tests.browser.conftest import OPENED_PAGES, stop_within_deadline
from tests.browser.lab import (
    OPEN_TIMEOUT_MS,
    LabPage,
    expect_source,
    sources_on_disk,
    wait_for_disk,
    write_notebook,
)
from tests.browser.test_lab_agents import McpAgent
from tests.serve.conftest import RunningServer, jupyter_env, start_server
from tests.serve.test_cli import page_config

pytestmark = pytest.mark.slow

SCREENSHOT = Path(__file__).parents[2] / "docs" / "images" / "lab-agent-suggestion.png"

RTC_MANAGER = "RTC Suggestion Manager"
SUGGESTED = re.compile(r'@@suggested \{"cell":"cell-b","id":"([0-9a-f]+)"')
PATH = "suggested.ipynb"
# The page's extensions: jupyter-collaboration 3's frontend and jupyter-suggestions, and nothing
# built on another @jupyter/collaborative-drive (the test venv's chat and CAD extensions).
PAGE_EXTENSIONS = {
    "@jupyter/collaboration-extension",
    "@jupyter/docprovider-extension",
    "@jupyter/suggestions-core",
    "@jupyter/suggestions-rtc",
}


@pytest.fixture(scope="module")
def suggestions_python() -> Path:
    """The layered environment's Python. Skipped only where nothing could have built it (not
    root, so perhaps no ``make test``); as root ``make test`` builds it, and a missing one is a
    broken setup that fails instead of silently skipping the acceptance test."""
    layered = jupyter_suggestions_env.python()
    if layered.exists():
        return layered
    where = jupyter_suggestions_env.environment()
    if os.geteuid() != 0:
        pytest.skip(f"no jupyter-suggestions environment at {where} (`make test` builds it)")
    pytest.fail(f"no jupyter-suggestions environment at {where} although `make test` builds it")


@pytest.fixture
def served(tmp_path: Path, suggestions_python: Path) -> Iterator[RunningServer]:
    """``ganymede serve`` from the layered environment's Python, one empty root per test."""
    root = tmp_path / "root"
    root.mkdir()
    env = jupyter_env(tmp_path / "jupyter")
    running = start_server(root, env, python=str(suggestions_python))
    yield running
    stop_within_deadline(running)


def test_the_page_has_jupyter_collaboration_3s_frontend_and_the_server_starts_cleanly(
    served: RunningServer,
) -> None:
    with served.client() as api:
        page = page_config(api)
    assert str(page["appVersion"]).startswith("4.4."), page["appVersion"]
    extensions = page["federated_extensions"]
    assert isinstance(extensions, list)
    assert {extension["name"] for extension in extensions} == PAGE_EXTENSIONS, extensions
    log = served.log.read_text()
    errors = [line for line in log.splitlines() if line.startswith("[E ") or "Traceback" in line]
    assert not errors, log


@pytest.fixture
def review_page(
    request: pytest.FixtureRequest, browser: Browser, served: RunningServer
) -> Iterator[LabPage]:
    """JupyterLab with jupyter-suggestions set to its RTC manager in the page's settings, and
    the notebook opened from the file browser, as a person opens it: jupyter-collaboration 3's
    frontend opens it in its room from there (its RTC drive), not from a ``/lab/tree`` URL."""
    first, second = new_code_cell("a = 1"), new_code_cell("b = 2")
    first["id"], second["id"] = "cell-a", "cell-b"
    write_notebook(served.root / PATH, first, second)
    with served.client() as api:
        chosen = api.put(
            "lab/api/settings/@jupyter/suggestions-core:registry",
            json={"raw": json.dumps({"suggestionsManager": RTC_MANAGER})},
        )
        assert chosen.status_code == 204, chosen.text
        # Never ask whether to fetch Jupyter's news: the question would sit over the page.
        quiet = api.put(
            "lab/api/settings/@jupyterlab/apputils-extension:notification",
            json={"raw": json.dumps({"fetchNews": "false"})},
        )
        assert quiet.status_code == 204, quiet.text
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    lab = LabPage.record(context, served, PATH)
    request.node.stash[OPENED_PAGES] = [lab]  # a failure's report carries what the page saw
    query = urllib.parse.urlencode({"reset": "", "token": served.token})
    lab.page.goto(f"{served.base}lab?{query}")
    lab.page.locator(".jp-DirListing-item", has_text=PATH).dblclick(timeout=OPEN_TIMEOUT_MS)
    expect(lab.cells).to_have_count(2, timeout=OPEN_TIMEOUT_MS)
    expect_source(lab.cell_editor(1), "b = 2")
    in_room = [ws for ws in lab.websockets if "/api/collaboration/room/json:notebook:" in ws.url]
    assert in_room, f"the notebook is not open in its room\n{lab.diagnostics()}"
    yield lab
    context.close()


def suggestions_panel(lab: LabPage) -> Locator:
    """Open jupyter-suggestions' side panel; the panel, once it shows the RTC manager's list."""
    tab = '.jp-SideBar .lm-TabBar-tab[data-id="jupyter-suggestions:main-panel"]'
    lab.page.locator(tab).click()
    panel = lab.page.locator("#jupyter-suggestions\\:main-panel")
    expect(panel.locator(".jp-SidePanel-header")).to_have_text(f"{RTC_MANAGER} - {PATH}")
    return panel


def page_user(lab: LabPage) -> str:
    """The name the page is logged in under (jupyter_server's identity of its cookie)."""
    reply = lab.page.context.request.get(f"{lab.server.base}api/me")
    assert reply.ok, reply.status
    name: str = reply.json()["identity"]["display_name"]
    return name


def suggest_an_edit(agent: McpAgent) -> str:
    agent.call("notebook_read", path=PATH)
    reply = agent.call("cell_edit", path=PATH, id="cell-b", source="b = 3", suggest=True)
    found = SUGGESTED.search(reply)
    assert found, reply
    return found.group(1)


def fork_deleted(response: Response) -> bool:
    """The answer to the page's ``DELETE …/api/collaboration/fork/ID``: the decision is made."""
    request = response.request
    return request.method == "DELETE" and "/api/collaboration/fork/" in request.url


def suggested_cell(panel: Locator, lab: LabPage) -> Locator:
    """The suggestion's cell in the panel, by the agent (its author badge), once it shows."""
    cell = panel.locator(".jp-Cell")
    expect(cell).to_have_count(1)
    expect(panel.get_by_title("Claude Code")).to_be_visible()
    # The fork's source, "b = 3", with the text it replaces shown inline: "b = [2]3".
    expect(cell.locator(".cm-cell-diff-removed")).to_have_text("2")
    expect(cell.locator(".cm-content")).to_have_text("b = 23")
    expect_source(lab.cell_editor(1), "b = 2")  # the notebook has not changed
    return cell


def test_a_suggestion_accepted_in_the_page_is_in_the_notebook_and_the_agent_hears_who(
    served: RunningServer, review_page: LabPage
) -> None:
    lab = review_page
    panel = suggestions_panel(lab)
    agent = McpAgent(served)
    with agent.running():
        suggestion = suggest_an_edit(agent)
        cell = suggested_cell(panel, lab)
        with lab.page.expect_response(fork_deleted) as merged:
            panel.get_by_title("Accept suggestion").click()
        assert merged.value.ok and "merge=true" in merged.value.url, merged.value.url
        expect(cell).to_have_count(0)
        expect_source(lab.cell_editor(1), "b = 3")
        wait_for_disk(lab.file, sources_on_disk, ["a = 1", "b = 3"])
        reply = agent.call("notebooks_list")
        assert f"@@suggestion {suggestion} accepted by {page_user(lab)}" in reply, reply


def test_a_suggestion_rejected_in_the_page_leaves_the_notebook_alone(
    served: RunningServer, review_page: LabPage
) -> None:
    lab = review_page
    panel = suggestions_panel(lab)
    agent = McpAgent(served)
    with agent.running():
        suggestion = suggest_an_edit(agent)
        cell = suggested_cell(panel, lab)
        panel.get_by_title("Delete").click()
        with lab.page.expect_response(fork_deleted) as deleted:
            lab.page.locator(".jp-Dialog .jp-mod-accept").click()  # "Discard suggestion?"
        assert deleted.value.ok and "merge=false" in deleted.value.url, deleted.value.url
        expect(cell).to_have_count(0)
        reply = agent.call("notebooks_list")
        assert f"@@suggestion {suggestion} rejected by {page_user(lab)}" in reply, reply
        expect_source(lab.cell_editor(1), "b = 2")
        assert sources_on_disk(lab.file) == ["a = 1", "b = 2"]


def test_a_deletion_accepted_in_the_page_takes_the_cell_out(
    served: RunningServer, review_page: LabPage
) -> None:
    """jupyter-suggestions shows a deletion with the cell as it is, and deletes it in the fork
    as it accepts; the fork keeps the cell until then."""
    lab = review_page
    panel = suggestions_panel(lab)
    agent = McpAgent(served)
    with agent.running():
        agent.call("notebook_read", path=PATH)
        reply = agent.call("cell_delete", path=PATH, id="cell-b", suggest=True)
        found = SUGGESTED.search(reply)
        assert found, reply
        cell = panel.locator(".jp-Cell")
        expect(cell).to_have_count(1)
        expect(cell.locator(".cm-content")).to_have_text("b = 2")
        with lab.page.expect_response(fork_deleted) as merged:
            panel.get_by_title("Accept suggestion").click()
        assert merged.value.ok and "merge=true" in merged.value.url, merged.value.url
        expect(lab.cells).to_have_count(1)
        wait_for_disk(lab.file, sources_on_disk, ["a = 1"])
        reply = agent.call("notebooks_list")
        assert f"@@suggestion {found.group(1)} accepted by {page_user(lab)}" in reply, reply


def show_whose(cursor: Locator) -> None:
    """Point at the text just before a remote cursor: jupyter-collaboration 3's frontend names
    the cursor's owner in a tooltip while the mouse is near it."""
    box = cursor.bounding_box()
    assert box is not None, "the cursor is not on the page"
    cursor.page.mouse.move(box["x"] - 3, box["y"] + box["height"] / 2)


def test_an_agent_at_work_shows_its_cursor_in_the_cell_it_edited_beside_its_suggestion(
    served: RunningServer, review_page: LabPage
) -> None:
    """What the docs' screenshot shows, so it is taken here (with
    ``GANYMEDE_UPDATE_SCREENSHOT=1``): the agent's cursor, named, in the cell it edited, and the
    edit it only suggested waiting in the panel."""
    lab = review_page
    panel = suggestions_panel(lab)
    agent = McpAgent(served)
    with agent.running():
        suggest_an_edit(agent)
        agent.call("cell_edit", path=PATH, id="cell-a", source="a = 10")
        expect_source(lab.cell_editor(0), "a = 10")
        cursor = lab.cells.nth(0).locator(".jp-remote-cursor")
        expect(cursor).to_have_count(1)
        show_whose(cursor)
        expect(lab.page.locator(".jp-remote-userInfo")).to_have_text("Claude Code")
        suggested_cell(panel, lab)
        if os.environ.get("GANYMEDE_UPDATE_SCREENSHOT") == "1":
            lab.page.screenshot(path=SCREENSHOT)
