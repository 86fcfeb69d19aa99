"""Agent sessions in the awareness of the rooms they work in, so people see them as collaborators.

Each session is one awareness client (its own client id) in every notebook room it reads, edits
or runs in, speaking through the session's hold on the room: when the session lets go of the room
(it ends, goes silent, or its hold lets go after ``idle`` seconds without a call), the room tells
its clients the agent left, as it does for a browser that drops. A session that makes no call
for ``idle`` seconds leaves every room while it stays open, and its next call brings it back.
Yjs clients drop a peer not heard from in 30 s, so the states are renewed every
``RENEW_INTERVAL`` seconds while shown.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from jupyter_ydoc import YNotebook
from pycrdt import Assoc

from ganymede.serve.rooms.awareness import LEFT
from ganymede.serve.rooms.presence import AwarenessRoom
from ganymede.serve.rooms.protocol import AwarenessEntry, encode_awareness
from ganymede.serve.service import detached_task

RENEW_INTERVAL = 10.0
"""Well inside y-protocols' 30 s outdated timeout, so no client times an agent out."""
DEFAULT_IDLE = 300.0


@dataclass
class _Shown:
    """What one session shows in one room, and through which of its clients."""

    room: AwarenessRoom
    owner: Hashable
    state: str


@dataclass
class _SessionPresence:
    client_id: int
    last_call: float
    clock: int = 0
    rooms: dict[str, _Shown] = field(default_factory=dict)


def caret_in(notebook: YNotebook, index: int) -> dict[str, Any]:
    """A relative position at the end of cell ``index``'s source, in Yjs's JSON: it follows the
    text as people type around it, and resolves into that cell's editor only."""
    source = notebook.ycells[index]["source"]
    return source.sticky_index(len(source), Assoc.BEFORE).to_json()


class AgentPresence:
    """Every session's awareness client and the rooms it shows in."""

    def __init__(self, *, idle: float = DEFAULT_IDLE, clock: Callable[[], float] = time.monotonic):
        self.idle = idle
        self.clock = clock
        self._sessions: dict[str, _SessionPresence] = {}
        self._renewer: asyncio.Task[None] | None = None

    def show(
        self,
        session_id: str,
        room: AwarenessRoom,
        owner: Hashable,
        state: dict[str, Any],
    ) -> None:
        """The session is at work in ``room``, where it shows ``state``; every room it left for
        idleness it is back in with its last state."""
        presence = self._sessions.get(session_id)
        if presence is None:
            presence = self._sessions[session_id] = _SessionPresence(
                secrets.randbits(31) + 1, self.clock()
            )
        came_back = self.clock() - presence.last_call > self.idle
        presence.last_call = self.clock()
        if came_back:
            self.let_go(session_id)
            for shown in presence.rooms.values():
                self._announce(presence, shown, shown.state)
        text = json.dumps(state)
        shown = presence.rooms.get(room.name)
        if shown is not None and shown.room is room and shown.state == text and not came_back:
            return
        shown = presence.rooms[room.name] = _Shown(room, owner, text)
        self._announce(presence, shown, text)
        self._start_renewer()

    def let_go(self, session_id: str) -> None:
        """The session's holds let go of some rooms (they said goodbye for it): it shows there
        no more, and keeps no reference to them."""
        presence = self._sessions.get(session_id)
        if presence is None:
            return
        for name, shown in list(presence.rooms.items()):
            if shown.owner not in shown.room.clients:
                del presence.rooms[name]

    def forget(self, session_id: str) -> None:
        """The session ended: its holds leaving the rooms announce it gone."""
        self._sessions.pop(session_id, None)

    def client_id(self, session_id: str) -> int | None:
        presence = self._sessions.get(session_id)
        return presence.client_id if presence is not None else None

    def tick(self) -> None:
        """Renew what is shown; take away sessions idle past ``idle``."""
        now = self.clock()
        for presence in self._sessions.values():
            if not presence.rooms:
                continue
            idle = now - presence.last_call > self.idle
            for name, shown in list(presence.rooms.items()):
                if shown.owner not in shown.room.clients:
                    del presence.rooms[name]  # the hold left the room: it said goodbye already
                elif idle:
                    self._announce(presence, shown, LEFT)
                else:
                    self._announce(presence, shown, shown.state)

    def stop(self) -> None:
        if self._renewer is not None:
            self._renewer.cancel()
            self._renewer = None
        self._sessions.clear()

    def _announce(self, presence: _SessionPresence, shown: _Shown, state: str) -> None:
        if state == LEFT and not self._is_shown(presence, shown):
            return
        presence.clock += 1
        entry = AwarenessEntry(presence.client_id, presence.clock, state)
        shown.room.announce(encode_awareness([entry]), owner=shown.owner)

    @staticmethod
    def _is_shown(presence: _SessionPresence, shown: _Shown) -> bool:
        return shown.room.present_client(presence.client_id)

    def _start_renewer(self) -> None:
        if self._renewer is None:
            self._renewer = detached_task(self._renew())

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(RENEW_INTERVAL)
            self.tick()
