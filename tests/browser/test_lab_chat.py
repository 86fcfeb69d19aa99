"""A jupyterlab-chat chat through JupyterLab's own frontend, in a room of Ganymede's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.conftest import OPENED_PAGES, OpenLab, stop_within_deadline
from tests.browser.lab import OPEN_TIMEOUT_MS, LabPage, wait_for_disk
from tests.serve.conftest import RunningServer, jupyter_env, start_server

pytestmark = pytest.mark.slow

ON_DISK = {
    "body": "hello from disk",
    "id": "on-disk-1",
    "time": 1700000000.0,
    "sender": "ada",
    "raw_time": False,
}


def bodies(path: Path) -> list[str]:
    return [message["body"] for message in json.loads(path.read_text())["messages"]]


def test_a_chat_opens_in_its_room_and_a_message_sent_in_jupyterlab_reaches_its_file(
    served: RunningServer, lab_page: OpenLab
) -> None:
    path = served.root / "team.chat"
    content = {"messages": [ON_DISK], "users": {"ada": {"username": "ada", "name": "Ada"}}}
    path.write_text(json.dumps(content | {"attachments": {}, "metadata": {"id": "team"}}))
    lab = lab_page("team.chat")

    # The list shows before the room's first sync; the message on disk shows after it.
    expect(lab.chat_messages).to_contain_text("hello from disk")
    session = lab.session_reply()
    assert (session["format"], session["type"]) == ("text", "chat")
    sockets = lab.room_websockets(f"text:chat:{session['fileId']}")
    assert sockets and not sockets[-1].is_closed(), lab.diagnostics()

    lab.chat_input.fill("sent from JupyterLab")
    lab.chat_input.press("Enter")
    expect(lab.chat_messages).to_contain_text("sent from JupyterLab")
    wait_for_disk(path, bodies, ["hello from disk", "sent from JupyterLab"])


@pytest.mark.timeout(300)  # three JupyterLab loads and two server starts on a busy machine
def test_a_chat_made_from_the_launcher_is_live_between_two_pages_and_whole_after_a_restart(
    request: pytest.FixtureRequest,
    browser: Browser,
    tmp_path: Path,
    served: RunningServer,
    lab_page: OpenLab,
) -> None:
    ada = lab_page("")
    ada.launcher_card("Create a chat and open it").click()
    expect(ada.chat_messages).to_be_visible(timeout=OPEN_TIMEOUT_MS)
    (path,) = served.root.glob("*.chat")
    ada.path = path.name  # the page now shows the chat it made

    bob = lab_page(path.name)
    ada.chat_input.fill("from ada")
    ada.chat_input.press("Enter")
    expect(bob.chat_bodies).to_have_text(["from ada"])
    bob.chat_input.fill("from bob")
    bob.chat_input.press("Enter")
    sent = ["from ada", "from bob"]
    expect(ada.chat_bodies).to_have_text(sent)
    expect(bob.chat_bodies).to_have_text(sent)
    wait_for_disk(path, bodies, sent)
    for page in (ada, bob):
        session = page.session_reply()
        assert (session["format"], session["type"]) == ("text", "chat")
        sockets = page.room_websockets(f"text:chat:{session['fileId']}")
        assert sockets and not sockets[-1].is_closed(), page.diagnostics()

    # The same port and token, so both pages reconnect to the new server with the history of
    # the old room: each must be told its session is gone rather than merge it in again.
    stop_within_deadline(served)
    env = jupyter_env(tmp_path / "jupyter")
    again = start_server(served.root, env, "--port", str(served.port), "--token", served.token)
    try:
        assert again.port == served.port, again.log.read_text()
        for page in (ada, bob):
            # JupyterLab's docprovider logs the refusal, then offers a reload (in a dialog that
            # may wait behind its own about the lost connection).
            page.wait_for_console_error('"reason":"unknown_session"')
            expect(page.chat_bodies).to_have_text(sent)
        context = browser.new_context(viewport={"width": 1280, "height": 720})
        carol = LabPage.record(context, again, path.name)
        request.node.stash[OPENED_PAGES].append(carol)
        carol.open()
        expect(carol.chat_bodies).to_have_text(sent)
        assert bodies(path) == sent
        context.close()
    finally:
        stop_within_deadline(again)
