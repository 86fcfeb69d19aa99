"""AgentPresence on a real presence room: shown, renewed, gone when idle, back on a call, and
gone when its hold leaves the room."""

from __future__ import annotations

import asyncio
import json
import logging

from jupyter_ydoc import YNotebook

from ganymede.agent.presence import awareness_state
from ganymede.serve.agents.presence import AgentPresence, caret_in
from ganymede.serve.rooms import protocol
from ganymede.serve.rooms.presence import AWARENESS_TICK, AwarenessRoom, RoomHold

STATE = awareness_state("claude-code", None)


class Person:
    """A connection that keeps the awareness frames the room sends it.

    The room holds a frame that follows another within its tick until the tick ends, so a test
    awaits ``heard`` for the frame it expects rather than reading ``entries`` at once."""

    def __init__(self) -> None:
        self.entries: list[protocol.AwarenessEntry] = []
        self._frame = asyncio.Event()

    def send(self, frame: bytes) -> None:
        message = protocol.decode_frame(frame)
        if isinstance(message, protocol.AwarenessUpdate):
            self.entries.extend(message.entries)
            self._frame.set()

    async def heard(self) -> protocol.AwarenessEntry:
        """The latest entry once a frame not yet awaited has come."""
        await asyncio.wait_for(self._frame.wait(), timeout=10 * AWARENESS_TICK)
        self._frame.clear()
        return self.entries[-1]

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
    shown = await person.heard()
    assert shown.client_id == client_id
    assert json.loads(shown.state)["user"]["display_name"] == "Claude Code"
    assert room.present_client(client_id)

    clock.now += 100
    presence.tick()  # renewed: a newer clock, same state
    renewed = await person.heard()
    assert renewed.clock > shown.clock
    assert not renewed.gone

    clock.now += 301
    presence.tick()
    assert (await person.heard()).gone
    assert not room.present_client(client_id)
    sent = len(person.entries)
    presence.tick()  # gone once, not again and again
    await asyncio.sleep(2 * AWARENESS_TICK)  # past the tick that would have carried a repeat
    assert len(person.entries) == sent

    presence.show("s1", room, hold, STATE)
    assert not (await person.heard()).gone
    assert room.present_client(client_id)
    presence.stop()


async def test_the_hold_leaving_says_the_agent_left() -> None:
    room, person, hold, presence, _ = setup()
    presence.show("s1", room, hold, STATE)
    client_id = presence.client_id("s1")
    await person.heard()
    presence.forget("s1")
    room.leave(hold)
    left = await person.heard()
    assert left.client_id == client_id
    assert left.gone
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
