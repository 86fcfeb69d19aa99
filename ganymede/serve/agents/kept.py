"""What an agent needs of a notebook whose room closed: the room's attribution and its cells'
fingerprints, kept so the room can close and be opened again on demand.

An agent holds a room only while it works (``room_edits.RoomHolds``); once it and every client
have gone the room saves and closes, and with it goes the record of who changed each cell. For
a notebook some agent holds a mark on, ``ClosedNotebooks`` keeps that record (kilobytes: per
cell an id, a fingerprint and up to three stamps) and hands it to the next room on the file,
which stamps whatever differs from it as another program's (worked out when the record is first
asked for, so an open does not wait for it): only another program can change a file no room has
open. Reports and edit checks after the reopen then name the same authors they
would have named had the room stayed open.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ganymede.agent import ANOTHER_PROGRAM, CellAuthors, CellState, Mark
from ganymede.agent.attribution import taken_in
from ganymede.errors import NotebookNotFound
from ganymede.serve.agents.cells import CellSnapshots
from ganymede.serve.rooms.presence import AwarenessRoom, Client
from ganymede.serve.rooms.room import DocumentRoom


@dataclass(frozen=True)
class ClosedNotebook:
    """A notebook room as it closed: what was saved, cell by cell, and who did what."""

    states: tuple[CellState, ...]
    """Fingerprints (``fingerprints``) of its cells as saved."""
    authors: Mapping[str, CellAuthors]
    file: Path
    stat: tuple[int, int]
    """The saved file's modification time (ns) and size: another differs if it was changed."""


class ClosedNotebooks:
    """A ``RoomObserver``: keeps the record of each notebook room that closes while an agent
    holds a mark on it, and gives it to the next room opened on the same file."""

    def __init__(
        self,
        seen: Callable[[str], Mapping[str, CellState] | None],
        cells: CellSnapshots,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``seen(file_id)``: the notebook's cells as agents' marks hold them (None: no agent
        holds a mark), whose fingerprints the record shares; ``clock``: the attribution's
        clock, which the stamps of changes taken in at a reopen use."""
        self._seen = seen
        self._cells = cells
        self._clock = clock
        self._kept: dict[str, ClosedNotebook] = {}

    def get(self, file_id: str) -> ClosedNotebook | None:
        return self._kept.get(file_id)

    def unchanged_since(self, file_id: str, mark: Mark) -> bool:
        """Whether the closed notebook is still what ``mark`` saw: its file untouched since the
        room closed, and its cells then as in the mark. False when nothing is kept."""
        closed = self._kept.get(file_id)
        if closed is None or _stat(closed.file) != closed.stat:
            return False
        return mark.states == closed.states

    def opened(self, room: AwarenessRoom) -> None:
        if not isinstance(room, DocumentRoom) or room.attribution is None:
            return
        closed = self._kept.pop(room.file.file_id, None)
        if closed is None:
            return
        opened_at, cells = self._clock(), self._cells

        def carried() -> Mapping[str, CellAuthors]:
            # Later than the open: cells changed in the room since have stamps of their own,
            # which win, so comparing with the cells as they are then stamps the same ones.
            now = cells.now(room).states
            return taken_in(closed.authors, closed.states, now, ANOTHER_PROGRAM, opened_at)

        room.attribution.carry_over(carried)

    def closed(self, room: AwarenessRoom) -> None:
        if not isinstance(room, DocumentRoom) or room.attribution is None:
            return
        file_id = room.file.file_id
        seen = self._seen(file_id)
        if seen is None:
            return
        try:
            file = room.file.os_path()
        except NotebookNotFound:
            return  # gone: a room opened on it again has nothing to compare with
        stat = _stat(file)
        if stat is None:
            return
        states = tuple(
            seen[state.id] if seen.get(state.id) == state else state.fingerprint()
            for state in self._cells.now(room).states
        )
        self._kept[file_id] = ClosedNotebook(states, room.attribution.authors(), file, stat)

    def joined(self, room: AwarenessRoom, client: Client) -> None:
        """Clients coming and going change nothing kept."""

    def left(self, room: AwarenessRoom, client: Client) -> None:
        """Clients coming and going change nothing kept."""


def _stat(file: Path) -> tuple[int, int] | None:
    try:
        stat = os.stat(file)
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size
