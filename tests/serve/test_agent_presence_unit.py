"""AgentPresence on a real presence room: shown, renewed, gone when idle, back on a call, and
gone when its hold leaves the room."""

from __future__ import annotations

import json
import logging

from jupyter_ydoc import YNotebook

from ganymede.agent.presence import awareness_state
from ganymede.serve.agents.presence import AgentPresence, caret_in
from ganymede.serve.rooms import protocol
from ganymede.serve.rooms.presence import AwarenessRoom, RoomHold

STATE = awareness_state("claude-code", None)


class Person:
    """A connection that keeps the awareness frames the room sends it."""

    def __init__(self) -> None:
        self.entries: list[protocol.AwarenessEntry] = []

    def send(self, frame: bytes) -> None:
        message = protocol.decode_frame(frame)
        if isinstance(message, protocol.AwarenessUpdate):
            self.entries.extend(message.entries)

    def close(self, code: int, reason: str) -> None:
        """Nothing to close."""


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def setup() -> tuple[AwarenessRoom, Person, RoomHold, AgentPresence, Clock]:
    room = AwarenessRoom("json:notebook:x", logging.getLogger("test"))
    person, hold = Person(), RoomHold()
    room.join(person)
    room.join(hold)
    clock = Clock()
    return room, person, hold, AgentPresence(idle=300, clock=clock), clock


async def test_shown_then_idle_then_back() -> None:
    room, person, hold, presence, clock = setup()
    presence.show("s1", room, hold, STATE)
    client_id = presence.client_id("s1")
    assert person.entries[-1].client_id == client_id
    assert json.loads(person.entries[-1].state)["user"]["display_name"] == "Claude Code"
    assert room.present_client(client_id)

    clock.now += 100
    presence.tick()  # renewed: a newer clock, same state
    assert person.entries[-1].clock > person.entries[-2].clock
    assert not person.entries[-1].gone

    clock.now += 301
    presence.tick()
    assert person.entries[-1].gone
    assert not room.present_client(client_id)
    sent = len(person.entries)
    presence.tick()  # gone once, not again and again
    assert len(person.entries) == sent

    presence.show("s1", room, hold, STATE)
    assert not person.entries[-1].gone
    assert room.present_client(client_id)
    presence.stop()


async def test_the_hold_leaving_says_the_agent_left() -> None:
    room, person, hold, presence, _ = setup()
    presence.show("s1", room, hold, STATE)
    client_id = presence.client_id("s1")
    presence.forget("s1")
    room.leave(hold)
    assert person.entries[-1].client_id == client_id
    assert person.entries[-1].gone
    assert not room.present_client(client_id)
    presence.stop()


async def test_caret_points_into_the_cells_source() -> None:
    notebook = YNotebook()
    notebook.set({"cells": [{"cell_type": "code", "source": "x = 1", "metadata": {}}]})
    caret = caret_in(notebook, 0)
    assert set(caret) <= {"item", "type", "tname", "assoc"}
    assert caret["assoc"] == -1
    empty = YNotebook()
    empty.set({"cells": [{"cell_type": "code", "source": "", "metadata": {}}]})
    assert "type" in caret_in(empty, 0)
