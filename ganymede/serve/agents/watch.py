"""Settled changes for an agent that waits: what ``ganymede mcp watch`` prints.

A watcher looks at every open notebook room a few times a second. Once a room has had no
change for ``settle`` seconds, it reports what changed since it last reported, cell by cell,
and moves on; by default only request cells (a person asking the agent), with ``everything``
every change by others. Watchers live in server memory: a client polls with the cursor of the
last event it saw, and the ``epoch`` tells it when a restarted server began counting anew.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ganymede.agent import CellAuthors, CellState, Change, Reader, notebook_states, report_changes
from ganymede.errors import UsageError
from ganymede.fileid import FileIdStore
from ganymede.serve.agents.cells import done_requests
from ganymede.serve.rooms import RoomManager
from ganymede.serve.rooms.document import notebook_content
from ganymede.serve.rooms.room import DocumentRoom
from ganymede.serve.service import detached_task, event_within

SCAN_INTERVAL = 0.25
IDLE_TIMEOUT = 300.0
"""A watcher nobody polled for this long stops (its client is gone)."""

LONG_POLL = 25.0
"""The longest a client's poll waits for a change."""

ReaderOf = Callable[[Mapping[str, Any], float], Reader]
AgentReader = Callable[[str, frozenset[str]], Reader]
"""The agent's reader, given the requests its notebook marks done."""
"""The reader a report is for, given the notebook and when the watcher started."""


@dataclass
class _Room:
    """What the watcher knows of one room: the cells as last reported, and when it last
    changed."""

    states: tuple[CellState, ...]
    reported_at: float
    version: int
    changed_at: float
    pending: bool = False


class Watcher:
    """One agent's feed of settled changes (requests only, or ``everything``)."""

    def __init__(
        self,
        rooms: RoomManager,
        file_ids: FileIdStore,
        reader_of: ReaderOf,
        *,
        everything: bool,
        settle: float,
        clock: Callable[[], float],
    ) -> None:
        self.rooms = rooms
        self.file_ids = file_ids
        self.reader_of = reader_of
        self.everything = everything
        self.settle = settle
        self.clock = clock
        self.epoch = secrets.token_hex(4)
        self.started = clock()
        self.last_polled = self.started
        self.events: list[dict[str, Any]] = []
        self._rooms: dict[str, _Room] = {}
        self._arrived = asyncio.Event()
        self._scan(baseline=True)
        self._task = detached_task(self._run())

    @property
    def cursor(self) -> int:
        return len(self.events)

    async def after(self, cursor: int, timeout: float) -> list[dict[str, Any]]:
        """The events past ``cursor``, waiting up to ``timeout`` seconds for the first."""
        self.last_polled = self.clock()
        cursor = max(0, min(cursor, self.cursor))
        if cursor == self.cursor:
            self._arrived.clear()
            await event_within(self._arrived, timeout)
        self.last_polled = self.clock()
        return self.events[cursor:]

    def stop(self) -> None:
        self._task.cancel()

    @property
    def idle(self) -> bool:
        return self.clock() - self.last_polled > IDLE_TIMEOUT

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(SCAN_INTERVAL)
            self._scan(baseline=False)

    def _scan(self, *, baseline: bool) -> None:
        now = self.clock()
        open_rooms = self.rooms.notebook_rooms()
        for file_id in [known for known in self._rooms if known not in open_rooms]:
            del self._rooms[file_id]
        for file_id, room in open_rooms.items():
            if room.attribution is None:
                continue  # not a notebook's document
            # The version alone until something changed, so an idle room's document packed
            # away stays packed.
            version = _cells_version(room)
            known = self._rooms.get(file_id)
            if known is None:
                self._rooms[file_id] = self._first_sight(room, baseline, now)
                continue
            if version != known.version:
                known.version, known.changed_at, known.pending = version, now, True
            elif known.pending and now - known.changed_at >= self.settle:
                self._report(file_id, room, known, now)

    def _first_sight(self, room: DocumentRoom, baseline: bool, now: float) -> _Room:
        """A room open when the watcher started is its starting point. One opened since may
        already hold what a person did in it: cells written in it since the watcher started
        are left out of the starting point, so they are reported (as added) once it settles.
        Stamps a reopened room carried over from the room before it were reported then."""
        states = notebook_states(notebook_content(room.document.notebook))
        pending = False
        if not baseline:
            authors = _authors(room)
            attribution = room.attribution
            fresh = {
                cell_id
                for cell_id, stamps in authors.items()
                if _touched_after(stamps, self.started)
                and attribution is not None
                and attribution.cell_version(cell_id) > 0
            }
            pending = bool(fresh)
            states = tuple(state for state in states if state.id not in fresh)
        return _Room(states, self.started, _cells_version(room), now, pending)

    def _report(self, file_id: str, room: DocumentRoom, known: _Room, now: float) -> None:
        content = notebook_content(room.document.notebook)
        states = notebook_states(content)
        report = report_changes(
            known.states,
            states,
            _authors(room),
            self.reader_of(content, self.started),
            since=known.reported_at,
        )
        known.states, known.reported_at, known.pending = states, now, False
        path = self.file_ids.get_path(file_id)
        sources = {state.id: state.source for state in states}
        for entry in report:
            if not self.everything and Change.REQUEST not in entry.change:
                continue
            event = {"path": path, **entry.to_json(), "source": sources.get(entry.id, "")}
            self.events.append(event)
            self._arrived.set()


class Watchers:
    """Every agent's watchers, one for each agent, kind of change and settle time its clients
    ask for; one nobody polls stops (``stop_idle``)."""

    def __init__(
        self,
        rooms: RoomManager,
        file_ids: FileIdStore,
        reader: AgentReader,
        *,
        settle: float,
        clock: Callable[[], float],
        on_new: Callable[[], None],
    ) -> None:
        self.rooms = rooms
        self.file_ids = file_ids
        self.reader = reader
        self.settle = settle
        """Used where a client names none (``[agent] settle``)."""
        self.clock = clock
        self.on_new = on_new
        """Told of each watcher started: something must stop it once idle."""
        self._watchers: dict[tuple[str, bool, float], Watcher] = {}

    async def poll(
        self,
        agent: str,
        *,
        everything: bool,
        settle: float | None,
        epoch: str | None,
        after: int,
        timeout: float = LONG_POLL,
    ) -> dict[str, Any]:
        """Settled changes past ``after`` (waiting up to ``timeout`` for one). A client naming
        no ``epoch`` starts from now; one naming another (a restarted server) gets everything
        this watcher has."""
        settle = self.settle if settle is None else settle
        if settle < 0:
            raise UsageError("settle must be 0 or more seconds")
        key = (agent, everything, settle)
        watcher = self._watchers.get(key)
        if watcher is None:
            watcher = self._watchers[key] = Watcher(
                self.rooms,
                self.file_ids,
                lambda content, started: self._reader_of(agent, content, started),
                everything=everything,
                settle=settle,
                clock=self.clock,
            )
            self.on_new()
        if epoch is None:
            after = watcher.cursor  # a new client starts from now
        elif epoch != watcher.epoch:
            after = 0  # another server's cursor: everything this one has
        events = await watcher.after(after, timeout)
        return {"epoch": watcher.epoch, "cursor": after + len(events), "events": events}

    def _reader_of(self, agent: str, content: Mapping[str, Any], started: float) -> Reader:
        """A watcher counts requests from when it started, or the agent's session if older."""
        reader = self.reader(agent, done_requests(content.get("cells") or []))
        session = reader.session_started
        return replace(
            reader, session_started=started if session is None else min(session, started)
        )

    def stop_idle(self) -> None:
        for key, watcher in list(self._watchers.items()):
            if watcher.idle:
                watcher.stop()
                del self._watchers[key]

    def stop(self) -> None:
        for watcher in self._watchers.values():
            watcher.stop()
        self._watchers.clear()


def _cells_version(room: DocumentRoom) -> int:
    """Changes only when cells do: a save (which touches the document's state) is no edit."""
    return room.attribution.version if room.attribution is not None else 0


def _touched_after(stamps: CellAuthors, moment: float) -> bool:
    return any(stamp is not None and stamp.at > moment for stamp in (stamps.source, stamps.placed))


def _authors(room: DocumentRoom) -> Mapping[str, CellAuthors]:
    return room.attribution.authors() if room.attribution is not None else {}
