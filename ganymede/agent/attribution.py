"""Attribution: who last changed, placed and ran each cell of one live notebook.

The room knows who is writing while a transaction commits (the connection whose update it
applies, the file it merges in, or a server-side writer such as an agent's tool); this module
watches the notebook's cells and stamps each changed part with that author. It lives in server
memory only: nothing is written into the notebook, and a restart forgets it (reports then say
"a person or another agent").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from pycrdt import Array, ArrayEvent, Map, MapEvent

from ganymede.agent.changes import (
    Author,
    CellAuthors,
    CellState,
    Change,
    Reader,
    Stamp,
    report_changes,
)

SOURCE_KEYS = frozenset({"source", "cell_type"})
RUN_KEYS = frozenset({"outputs", "execution_count"})

AuthorNow = Callable[[], Author | None]


class NotebookAttribution:
    """Stamps cells as their transactions commit; ``authors()`` is the record so far.

    ``author_now`` names who made the transaction being observed, or None for changes nobody
    is answerable for (the room's bookkeeping), which leave the record as it was. A server-side
    run stamps its cell with ``record_run`` instead, since its outputs arrive over time.
    """

    def __init__(
        self,
        cells: Array[Any],
        author_now: AuthorNow,
        clock: Callable[[], float] = time.monotonic,
        *,
        cell_ids: list[str] | None = None,
    ) -> None:
        """``cell_ids``: the cells' ids in order when the caller knows them (a room that just
        filled its document does), which spares reading them from the document one by one."""
        self._author_now = author_now
        self._clock = clock
        self._authors: dict[str, CellAuthors] = {}
        self._carried: Callable[[], Mapping[str, CellAuthors]] | None = None
        self._order: list[str] = (
            list(cell_ids) if cell_ids is not None else [_cell_id(cell) for cell in cells]
        )
        self.version = 0
        """Counts the transactions that changed any cell: a cheap "did the cells change?"."""
        self._touched: dict[str, int] = {}  # cell id → the version that last changed it
        self._ran: dict[str, int] = {}  # cell id → the version that last changed its outputs
        self.watch(cells)

    def watch(self, cells: Array[Any]) -> None:
        """Stamp ``cells``' changes from now on: the cells at the start, and the same cells
        again once their document is rebuilt after being packed away (``close`` before
        that). What was recorded stays, as the cells are what they were."""
        self._cells: Array[Any] | None = cells
        self._subscription = cells.observe_deep(self._on_events)

    def authors(self) -> Mapping[str, CellAuthors]:
        if self._carried is not None:
            carried, self._carried = self._carried, None
            for cell_id, kept in carried().items():
                own = self._authors.get(cell_id)
                self._authors[cell_id] = kept if own is None else _part_by_part(own, kept)
        return dict(self._authors)

    def order(self) -> list[str]:
        """The cells' ids in document order, as the observed changes left them."""
        return list(self._order)

    def cell_version(self, cell_id: str) -> int:
        """The ``version`` that last changed ``cell_id`` (0: not since the room opened), so a
        reader can keep what it read of the cells that did not change."""
        return self._touched.get(cell_id, 0)

    def run_version(self, cell_id: str) -> int:
        """The ``version`` that last changed ``cell_id``'s outputs or execution count, or put
        the cell in place: a reader whose copy is older reads them again, else only the rest
        (outputs are most of a cell's bytes, and typing leaves them alone)."""
        return self._ran.get(cell_id, 0)

    def record_run(self, cell_id: str, author: Author) -> None:
        self._stamp(cell_id, "ran", Stamp(author, self._clock()))

    def carry_over(self, kept: Callable[[], Mapping[str, CellAuthors]]) -> None:
        """Start from what an earlier room on the same file recorded (``taken_in`` adds what
        changed in the file while no room was open): a room reopened on demand names the same
        authors its predecessor would have. ``kept`` is called when the record is first asked
        for, not while the room opens (working it out reads every cell, which would slow every
        open of a notebook an agent has read); this room's own stamps win, part by part."""
        self._carried = kept

    def close(self) -> None:
        """Stop stamping; the record stays. Nothing of the document is kept, so a document
        packed away goes."""
        if self._cells is not None:
            self._cells.unobserve(self._subscription)
            self._cells = None

    def _on_events(self, events: list[Any]) -> None:
        self.version += 1
        author = self._author_now()
        stamp = Stamp(author, self._clock()) if author is not None else None
        # The cells array first: later events address cells by their index after it.
        for event in sorted(events, key=lambda event: len(event.path)):
            path = event.path
            if not path:
                self._on_cells_changed(event, stamp)
            elif isinstance(path[0], int) and path[0] < len(self._order):
                if len(path) == 1 and isinstance(event, MapEvent) and "id" in event.keys:
                    self._order[path[0]] = _cell_id(event.target)
                cell_id = self._order[path[0]]
                self._touched[cell_id] = self.version
                if _changes_run(event, path):
                    self._ran[cell_id] = self.version
                part = _changed_part(event, path) if stamp is not None else None
                if stamp is not None and part is not None:
                    self._stamp(cell_id, part, stamp)

    def _on_cells_changed(self, event: ArrayEvent, stamp: Stamp | None) -> None:
        """Keep the id mirror in step; stamp inserted cells as placed (and written, when new)
        and removed ones as placed (the report names who deleted a cell by it)."""
        position = 0
        for step in event.delta:
            if "retain" in step:
                position += step["retain"]
            elif "delete" in step:
                removed = self._order[position : position + step["delete"]]
                del self._order[position : position + step["delete"]]
                if stamp is not None:
                    for cell_id in removed:
                        self._stamp(cell_id, "placed", stamp)
            elif "insert" in step:
                inserted = [_cell_id(cell) for cell in step["insert"]]
                self._order[position:position] = inserted
                position += len(inserted)
                for cell_id in inserted:
                    self._touched[cell_id] = self._ran[cell_id] = self.version
                if stamp is None:
                    continue
                for cell_id in inserted:
                    if cell_id not in self._authors:
                        self._stamp(cell_id, "source", stamp)  # a new cell: its author wrote it
                    self._stamp(cell_id, "placed", stamp)  # a move re-inserts the same id

    def _stamp(self, cell_id: str, part: str, stamp: Stamp) -> None:
        current = self._authors.get(cell_id, CellAuthors())
        self._authors[cell_id] = replace(current, **{part: stamp})


def _part_by_part(own: CellAuthors, kept: CellAuthors) -> CellAuthors:
    """A cell's stamps: this room's where it has one, else the carried one."""
    return CellAuthors(
        source=own.source or kept.source,
        placed=own.placed or kept.placed,
        ran=own.ran or kept.ran,
    )


def _changed_part(event: Any, path: list[Any]) -> str | None:
    """Which part of a cell an event below the cells array changed, if one we stamp."""
    if len(path) == 1 and isinstance(event, MapEvent):
        keys = set(event.keys)
        if keys & SOURCE_KEYS:
            return "source"
        if keys & RUN_KEYS:
            return "ran"
        return None
    if path[1] == "source":
        return "source"
    if path[1] == "outputs":
        return "ran"
    return None


def _changes_run(event: Any, path: list[Any]) -> bool:
    """Whether an event below the cells array changed a cell's outputs or execution count."""
    if len(path) == 1:
        return isinstance(event, MapEvent) and not RUN_KEYS.isdisjoint(event.keys)
    return path[1] == "outputs"


def _cell_id(cell: Any) -> str:
    return str(cell.get("id", "")) if isinstance(cell, Map | dict) else ""


def taken_in(
    kept: Mapping[str, CellAuthors],
    before: Sequence[CellState],
    now: Sequence[CellState],
    author: Author,
    at: float,
) -> dict[str, CellAuthors]:
    """``kept`` (a closed room's record, its cells ``before``) with every cell that differs in
    ``now`` (the file as a new room loaded it) stamped as ``author``'s at ``at``: what another
    program changed while no room was open, stamped as a room taking the change in would have.
    Pure; ``before`` may be fingerprints (``CellState`` compares by its source's digest)."""
    authors = dict(kept)
    stamp = Stamp(author, at)
    parts = {
        Change.ADDED: ("source", "placed"),
        Change.EDITED: ("source",),
        Change.MOVED: ("placed",),
        Change.DELETED: ("placed",),
        Change.RAN: ("ran",),
    }
    for change in report_changes(before, now, {}, Reader(author.name)):
        stamped = {part: stamp for kind in change.change for part in parts.get(kind, ())}
        authors[change.id] = replace(authors.get(change.id, CellAuthors()), **stamped)
    return authors
