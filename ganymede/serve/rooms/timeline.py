"""The document timeline JupyterLab's slider walks: a fork room showing the document as it was.

``open`` answers jupyter-collaboration's ``GET /api/collaboration/timeline``: the timestamps of
the document's points in the history store (every room instance's, so the slider works after
a restart) and a fork room the slider connects the page's document to. Moving the slider
(``undo``/``redo`` by some steps) brings the fork room's document to the document as of that
point, replayed from the store and applied as ordinary edits of the fork's copy: the page
holding the root's history sees exactly that, and nothing doubles. ``restore`` merges the fork
into the root as the restorer's edit, which the autosave writes and the history records.

The history is read, never replayed into the root: the root only ever takes the fork's edits.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from typing import Any, Literal

from jupyter_ydoc import YNotebook
from pycrdt import Doc, Text

from ganymede.history import HistoryStore, PointInfo, PointKind
from ganymede.history.points import step_points
from ganymede.serve.rooms.document import DocumentKind, RoomDocument
from ganymede.serve.rooms.forks import ForkRoom, Forks, UnknownFork
from ganymede.serve.rooms.manager import RoomManager
from ganymede.serve.rooms.mergein import restore_roots
from ganymede.serve.rooms.patch import patch_notebook, patch_text
from ganymede.serve.rooms.presence import RoomHold

Direction = Literal["undo", "redo"]


@dataclass
class TimelineView:
    """One slider's fork: the points it walks and where it stands."""

    root_roomid: str
    file_id: str
    points: list[PointInfo]  # every point of the document, bookkeeping included
    steps: list[PointInfo]  # the ones the slider shows
    index: int
    room: ForkRoom


class Timelines:
    """The timeline views open on this server, by fork room id."""

    def __init__(
        self,
        rooms: RoomManager,
        forks: Forks,
        store: HistoryStore | None,
        log: logging.Logger,
    ) -> None:
        self._rooms = rooms
        self._forks = forks
        self._store = store
        self._log = log
        self._views: dict[str, TimelineView] = {}

    async def open(self, root_roomid: str, file_id: str) -> dict[str, Any]:
        """A new view of the document's timeline, standing at its latest point."""
        hold = RoomHold()
        root = await self._forks.open_root(root_roomid, hold)
        try:
            if self._rooms.history is not None:
                await self._rooms.history.flush()  # the latest edits are points too
            points = await asyncio.to_thread(self._points, file_id)
            steps = step_points(points)
            roomid = uuid.uuid4().hex
            room = ForkRoom(roomid, root.document.copy(), self._log, closes_when_idle=True)
            self._rooms.add_room(room)
        finally:
            self._rooms.leave(root, hold)
        view = TimelineView(root_roomid, file_id, points, steps, len(steps) - 1, room)
        self._views[roomid] = view
        return {
            "roomId": root_roomid,
            "timestamps": [point.at for point in steps],
            "forkRoom": roomid,
            "sessionId": self._rooms.session_id,
        }

    async def move(self, fork_roomid: str, direction: Direction, steps: int) -> bool:
        """Move the view ``steps`` points back (``undo``) or on (``redo``); False when it
        stands at the end already."""
        view = self._view(fork_roomid)
        step = -steps if direction == "undo" else steps
        target = max(0, min(len(view.steps) - 1, view.index + step))
        if not view.steps or (direction == "undo" and view.index == 0):
            return False
        if direction == "redo" and view.index >= len(view.steps) - 1:
            return False
        if target != view.index:
            assert self._store is not None  # a view with steps read them from the store
            store = self._store
            then = await asyncio.to_thread(
                store.document_at, view.file_id, view.steps[target], view.points
            )
            show(view.room.document, then)
            view.index = target
        return True

    async def restore(self, root_roomid: str, fork_roomid: str, login: str | None) -> None:
        """Put the document as the view shows it in the root room, as the edit of the person
        logged in as ``login`` (ReadOnlyRoom or UsageError from the root leave everything as
        it was)."""
        view = self._view(fork_roomid)
        if view.root_roomid != root_roomid:
            raise UnknownFork(fork_roomid)
        hold = RoomHold()
        root = await self._forks.open_root(root_roomid, hold)
        try:
            update = view.room.document.doc.get_update()
            root.apply_edit(update, root.person(login), PointKind.RESTORE)
        finally:
            self._rooms.leave(root, hold)
        del self._views[fork_roomid]

    def forget_closed(self) -> None:
        """Drop the views whose fork room has closed (its page went away)."""
        for roomid in [r for r, v in self._views.items() if self._rooms.room(r) is not v.room]:
            del self._views[roomid]

    def _view(self, fork_roomid: str) -> TimelineView:
        self.forget_closed()
        view = self._views.get(fork_roomid)
        if view is None:
            raise UnknownFork(fork_roomid)
        return view

    def _points(self, file_id: str) -> list[PointInfo]:
        return self._store.points(file_id) if self._store is not None else []


def show(document: RoomDocument, then: Doc) -> None:
    """Edit ``document`` until its content is what ``then`` (a replayed document of the same
    kind, another lineage) holds; its ``state`` is left as it is."""
    kind = document.kind
    if kind is DocumentKind.NOTEBOOK:
        assert isinstance(document.shared, YNotebook)
        patch_notebook(document.shared, YNotebook(then).get())
    elif kind is DocumentKind.TEXT:
        patch_text(document.doc.get("source", type=Text), str(kind.new_shared(then).get()))
    else:
        before = RoomDocument(kind)
        before.doc.apply_update(then.get_update())
        restore_roots(document, before)
