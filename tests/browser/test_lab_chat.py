"""A jupyterlab-chat chat through JupyterLab's own frontend, in a room of Ganymede's."""

from __future__ import annotations

import json
from pathlib import Path

from playwright.sync_api import expect

from tests.browser.conftest import OpenLab
from tests.browser.lab import wait_for_disk
from tests.serve.conftest import RunningServer

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

    session = lab.session_reply()
    assert (session["format"], session["type"]) == ("text", "chat")
    sockets = lab.room_websockets(f"text:chat:{session['fileId']}")
    assert sockets and not sockets[-1].is_closed(), lab.diagnostics()
    expect(lab.chat_messages).to_contain_text("hello from disk")

    lab.chat_input.fill("sent from JupyterLab")
    lab.chat_input.press("Enter")
    expect(lab.chat_messages).to_contain_text("sent from JupyterLab")
    wait_for_disk(path, bodies, ["hello from disk", "sent from JupyterLab"])
