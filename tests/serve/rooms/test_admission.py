"""Clients that write before they sync: a Python model that sets ``state`` as it is built syncs
like any other client, and only history that changes content is refused (the verdicts, then
real clients of a real server)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from jupyter_ydoc import YNotebook
from jupyterlab_chat.models import NewMessage, User
from jupyterlab_chat.ychat import YChat
from pycrdt import Doc, Text

from ganymede.serve.rooms import protocol
from ganymede.serve.rooms.admission import (
    HistoryChanges,
    Verdict,
    history_changes,
    judge_history,
    judge_state_vector,
)
from ganymede.serve.rooms.presence import EMPTY_UPDATE
from tests.serve.conftest import RunningServer
from tests.serve.rooms.client import eventually, open_socket, room_client
from tests.serve.rooms.conftest import (
    chat_client,
    edit_first_cell,
    notebook_bytes,
    open_session,
    sources,
    sources_on_disk,
    write,
)
from tests.serve.websocket import closed_with

ROOM_ID = 7
CHAT_MESSAGE = {
    "body": "written by another program",
    "id": "outside-1",
    "time": 1_000.0,
    "sender": "ada",
    "type": "msg",
}


@pytest.mark.parametrize(
    ("clocks", "verdict"),
    [
        pytest.param({}, Verdict.SYNC, id="holds-nothing"),
        pytest.param({ROOM_ID: 3}, Verdict.SYNC, id="all-the-rooms-own"),
        pytest.param({ROOM_ID: 1, 99: 4}, Verdict.SYNC, id="some-of-the-rooms-own-and-more"),
        pytest.param({99: 1}, Verdict.HEAR_HISTORY, id="none-of-the-rooms-own"),
        pytest.param({ROOM_ID: 0, 99: 1}, Verdict.HEAR_HISTORY, id="none-counted-as-zero"),
        pytest.param({ROOM_ID: 4}, Verdict.REFUSE, id="more-than-the-room-made"),
    ],
)
def test_a_first_state_vector_syncs_waits_or_refuses(
    clocks: dict[int, int], verdict: Verdict
) -> None:
    assert judge_state_vector(clocks, ROOM_ID, 3) is verdict


@pytest.mark.parametrize(
    ("roots", "complete", "verdict"),
    [
        pytest.param(set(), True, Verdict.SYNC, id="nothing"),
        pytest.param({"state"}, True, Verdict.SYNC, id="state-alone"),
        pytest.param({"state", "messages"}, True, Verdict.REFUSE, id="state-and-content"),
        pytest.param({"cells"}, True, Verdict.REFUSE, id="content"),
        pytest.param({"state"}, False, Verdict.REFUSE, id="on-changes-the-room-lacks"),
    ],
)
def test_heard_history_is_harmless_only_when_it_changes_state_alone(
    roots: set[str], complete: bool, verdict: Verdict
) -> None:
    assert judge_history(HistoryChanges(frozenset(roots), complete)) is verdict


def test_a_refusal_names_what_the_history_changes() -> None:
    changes = HistoryChanges(frozenset({"state", "messages", "users"}), complete=True)
    assert changes.why_refused() == "it changes messages, users: content the room does not hold"
    incomplete = HistoryChanges(frozenset({"state"}), complete=False)
    assert incomplete.why_refused() == "it builds on changes the room never had"


def loaded_notebook(*sources: str) -> YNotebook:
    notebook = YNotebook()
    notebook.set(
        {
            "cells": [
                {"cell_type": "code", "source": s, "metadata": {}, "outputs": []} for s in sources
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )
    notebook.path = "loaded.ipynb"
    return notebook


def missing_from(room: YNotebook, client: Doc) -> bytes:
    """What the client sends in answer to the room's SyncStep1."""
    return client.get_update(room.ydoc.get_state())


def test_history_changes_name_the_roots_an_update_touches_and_leave_the_room_alone() -> None:
    room = loaded_notebook("a = 1")
    as_loaded = room.ydoc.get_update()

    built_first = YNotebook()
    built_first.dirty = True
    assert history_changes(room.ydoc, missing_from(room, built_first.ydoc)) == HistoryChanges(
        frozenset({"state"}), complete=True
    )

    stale_tab = loaded_notebook("a = 1")  # the same file, loaded by an earlier room
    assert history_changes(room.ydoc, missing_from(room, stale_tab.ydoc)).roots == {
        "cells",
        "meta",
        "state",
    }

    synced = Doc()
    synced.apply_update(as_loaded)
    before_edit = synced.get_state()
    YNotebook(synced).ycells[0]["source"] += " + 1"
    assert history_changes(room.ydoc, synced.get_update(before_edit)) == HistoryChanges(
        frozenset({"cells"}), complete=True
    )

    # An edit standing on the one above, which the room never had, would wait unseen in it.
    later = Doc()
    later.apply_update(synced.get_update())
    before_later = later.get_state()
    YNotebook(later).ycells[0]["source"] += " + 2"
    assert history_changes(room.ydoc, later.get_update(before_later)).complete is False

    elsewhere = Doc()
    elsewhere.get("notes", type=Text).insert(0, "a root the room lacks")
    assert history_changes(room.ydoc, missing_from(room, elsewhere)).roots == {"notes"}

    assert history_changes(room.ydoc, EMPTY_UPDATE) == HistoryChanges(frozenset(), True)
    assert room.ydoc.get_update() == as_loaded


async def test_a_chat_model_built_before_it_connects_brings_only_state() -> None:
    room = YChat()
    room.set(json.dumps({"messages": [CHAT_MESSAGE], "users": {}, "attachments": {}}))
    bot = YChat(Doc())
    changes = history_changes(room.ydoc, bot.ydoc.get_update(room.ydoc.get_state()))
    assert changes == HistoryChanges(frozenset({"state"}), complete=True)
    bot.add_message(NewMessage(body="posted before syncing", sender="bot"))
    changes = history_changes(room.ydoc, bot.ydoc.get_update(room.ydoc.get_state()))
    assert changes.roots == {"state", "messages"}


def bodies(chat: YChat) -> list[str]:
    return [message.body for message in chat.get_messages()]


def bodies_on_disk(path: Path) -> list[str]:
    return [message["body"] for message in json.loads(path.read_text())["messages"]]


async def test_a_python_chat_client_posts_into_a_chat_another_program_wrote(
    server: RunningServer, api: httpx.Client
) -> None:
    content = {"messages": [CHAT_MESSAGE], "users": {}, "attachments": {}, "metadata": {}}
    path = write(server.root / "admission" / "team.chat", json.dumps(content).encode())
    name, session = open_session(api, "admission/team.chat", "text:chat")
    async with chat_client(server, name, session) as (_, reader):
        bot = YChat(Doc())  # its constructor writes ``dirty`` before anything is synced
        async with room_client(server, name, session, bot):
            assert bodies(bot) == ["written by another program"]
            bot.set_user(User(username="bot", name="Bot"))
            bot.add_message(NewMessage(body="posted by a bot", sender="bot"))
            expected = ["written by another program", "posted by a bot"]
            await eventually(lambda: bodies(reader) == expected, "the other client to see it")
            await eventually(lambda: bodies_on_disk(path) == expected, "the file to hold it")
    assert "brought history" not in server.log.read_text()


async def test_a_notebook_client_that_set_dirty_first_edits_a_cell_into_the_file(
    server: RunningServer, api: httpx.Client
) -> None:
    path = write(server.root / "admission" / "dirty.ipynb", notebook_bytes("x = 1", "y = 2"))
    name, session = open_session(api, "admission/dirty.ipynb")
    notebook = YNotebook()
    notebook.dirty = True
    async with (
        room_client(server, name, session, notebook) as writer,
        room_client(server, name, session) as reader,
    ):
        assert sources(writer) == ["x = 1", "y = 2"]
        edit_first_cell(writer, " # edited")
        await eventually(lambda: sources(reader) == ["x = 1 # edited", "y = 2"], "the reader")
        await eventually(
            lambda: sources_on_disk(path) == ["x = 1 # edited", "y = 2"], "the file to hold it"
        )


async def test_a_client_that_wrote_content_before_syncing_is_told_to_reload_at_once(
    server: RunningServer, api: httpx.Client
) -> None:
    path = write(server.root / "admission" / "early.ipynb", notebook_bytes("kept"))
    name, session = open_session(api, "admission/early.ipynb")
    early = loaded_notebook("a cell nobody synced")
    early.dirty = True
    async with room_client(server, name, session) as reader:
        returning = await open_socket(server, name, session)
        await returning.write_message(protocol.sync_step1(early.ydoc.get_state()), binary=True)
        await returning.write_message(protocol.sync_step2(early.ydoc.get_update()), binary=True)
        code, reason = await closed_with(returning)
        assert code == protocol.CloseCode.UNSUPPORTED_DATA
        assert json.loads(reason or "")["reason"] == "unknown_session"
        assert sources(reader) == ["kept"]
    assert sources_on_disk(path) == ["kept"]
    assert server.log.read_text().count(f"room {name}: a client brought history") == 1
