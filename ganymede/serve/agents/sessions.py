"""Agents' sessions: one agent process at work, from its first call until it ends or falls
silent, and how it shows in the rooms it works in.

A session shows in each notebook room it reads, edits or runs in (its caret on the cell it
works on, through ``presence.AgentPresence``) and in the global awareness JupyterLab's
Collaboration panel lists, with the notebooks it is in. Ending a session takes it out of all
of them: its holds leaving tell each room the agent left.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ganymede.agent.presence import awareness_state, global_state
from ganymede.errors import UnknownSession, UsageError
from ganymede.serve import metrics
from ganymede.serve.agents.presence import AgentPresence
from ganymede.serve.agents.room_edits import RoomHolds
from ganymede.serve.rooms import RoomManager
from ganymede.serve.rooms.presence import GLOBAL_AWARENESS_ROOM, AwarenessRoom, RoomHold
from ganymede.serve.rooms.room import DocumentRoom


@dataclass
class AgentSession:
    id: str
    agent: str
    started: float
    last_seen: float
    documents: list[str] = field(default_factory=list)
    """The notebooks it read, edited or ran in, the latest last (what its presence shows)."""


class AgentSessions:
    """The open sessions, and each one's place in the rooms' awareness."""

    def __init__(
        self,
        rooms: RoomManager,
        holds: RoomHolds,
        presence: AgentPresence,
        log: logging.Logger,
        clock: Callable[[], float],
    ) -> None:
        self.rooms = rooms
        self.holds = holds
        self.presence = presence
        self.log = log
        self.clock = clock
        self._open: dict[str, AgentSession] = {}
        self._global_holds: dict[str, tuple[AwarenessRoom, RoomHold]] = {}

    def open(self, agent: str) -> AgentSession:
        if not agent.strip():
            raise UsageError("agent must name the agent (its MCP client name)")
        now = self.clock()
        session = AgentSession(secrets.token_hex(8), agent.strip(), now, now)
        self._open[session.id] = session
        metrics.AGENT_SESSIONS.inc()
        self.log.info("ganymede: agent %s started session %s", session.agent, session.id)
        return session

    def get(self, session_id: str) -> AgentSession:
        """The open session (UnknownSession if there is none), heard from now."""
        session = self._open.get(session_id)
        if session is None:
            raise UnknownSession(session_id)
        session.last_seen = self.clock()
        return session

    def close(self, session_id: str) -> AgentSession | None:
        """End the session; the one ended, None if it was not open."""
        session = self._open.pop(session_id, None)
        if session is not None:
            self.log.info("ganymede: agent %s ended session %s", session.agent, session.id)
            metrics.AGENT_SESSIONS.dec()
            self.presence.forget(session_id)
            self.holds.release(session_id)  # its holds leaving tell each room the agent left
            held = self._global_holds.pop(session_id, None)
            if held is not None:
                self.rooms.leave(*held)
        return session

    def started(self, agent: str) -> float | None:
        """When the agent's oldest open session began: requests count from then."""
        starts = [s.started for s in self._open.values() if s.agent == agent]
        return min(starts) if starts else None

    def latest_of(self, agent: str) -> AgentSession | None:
        """The agent's open session heard from last."""
        sessions = [s for s in self._open.values() if s.agent == agent]
        return max(sessions, key=lambda s: s.last_seen) if sessions else None

    def silent_since(self, cutoff: float) -> list[AgentSession]:
        return [s for s in self._open.values() if s.last_seen < cutoff]

    def stop(self) -> None:
        metrics.AGENT_SESSIONS.dec(len(self._open))
        self._open.clear()
        self.presence.stop()
        self.holds.release_all()
        for held in self._global_holds.values():
            self.rooms.leave(*held)
        self._global_holds.clear()

    async def show(
        self,
        session: AgentSession,
        room: DocumentRoom,
        api_path: str,
        caret: dict[str, Any] | None = None,
        *,
        running: str | None = None,
    ) -> None:
        """The session in ``room``'s awareness, on the cell ``caret`` points into, and in the
        global awareness JupyterLab's Collaboration panel lists, with the notebooks it is in."""
        hold = self.holds.hold_in(session.id, room)
        if hold is None:
            return
        state = awareness_state(session.agent, caret, running=running)
        self.presence.show(session.id, room, hold, state)
        if api_path in session.documents:
            session.documents.remove(api_path)
        session.documents.append(api_path)  # the last is the one it is in now
        held = self._global_holds.get(session.id)
        if held is None or held[1] not in held[0].clients:
            hold = RoomHold()
            joined = await self.rooms.join(GLOBAL_AWARENESS_ROOM, hold)
            if session.id not in self._open:  # it ended while we joined
                self.rooms.leave(joined, hold)
                return
            earlier = self._global_holds.get(session.id)
            if earlier is not None and earlier[1] in earlier[0].clients:
                self.rooms.leave(joined, hold)  # another call of the session joined first
                held = earlier
            else:
                held = self._global_holds[session.id] = (joined, hold)
        self.presence.show(
            session.id, held[0], held[1], global_state(session.agent, session.documents)
        )
