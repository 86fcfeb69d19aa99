"""Cell edits made by the server on someone's behalf, in a notebook's room.

Agents (their MCP tools) and kernels (their ``self.*`` host calls) change notebooks the same
way: through the open room, so every client sees the change live and autosave writes it. Each
edit is one transaction attributed to its writer, made only after every check has passed, so a
refused edit changes nothing. The cells carry provenance (``metadata.ganymede.agent``), and an
edit keeps the source it replaced in the cell's history.

A writer holds the rooms it works in open (``RoomHolds``) while it is at work: until it lets
go, or, with an ``idle`` time, until that long after its last call, when the rooms may close
(after their grace period, having saved) and its next call opens them again. What a writer
needs between calls survives without the room: an agent's marks, and the room's attribution,
which the agent core keeps for a closed room (``agents.kept``). A notebook saved without cell
ids stays held until the writer lets go, since a room opened on it again gives its cells new
ids and the ones ``add`` returned would name nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any, Protocol

from jupyter_ydoc import YNotebook
from pycrdt import Map, Text

from ganymede.agent import Author
from ganymede.core import normalize_api_path
from ganymede.errors import CellNotFound, ReadOnlyRoom, UsageError
from ganymede.fileid import FileIdStore
from ganymede.notebook.provenance import NAMESPACE, agent_stamp, request_done_stamp
from ganymede.serve.rooms import RoomManager
from ganymede.serve.rooms.document import DocumentKind, keeps_cell_ids
from ganymede.serve.rooms.patch import patch_text
from ganymede.serve.rooms.presence import RoomHold
from ganymede.serve.rooms.room import DocumentRoom
from ganymede.serve.service import detached_call_later

CELL_TYPES = ("code", "markdown", "raw")


class WritesAs(Protocol):
    """Where an edit is made: a room (attributed, saved) or a suggestion's fork (a copy)."""

    def writing_as(self, author: Author) -> AbstractContextManager[None]: ...


class ForkWriting:
    """A fork's document written as one transaction; the fork has no attribution of its own:
    the merge is attributed to whoever accepts it."""

    def __init__(self, notebook: YNotebook) -> None:
        self._notebook = notebook

    def writing_as(self, author: Author) -> AbstractContextManager[None]:
        del author  # the fork records no author
        return self._notebook.ydoc.transaction()  # type: ignore[return-value]


def notebook_room_name(file_id: str) -> str:
    kind = DocumentKind.NOTEBOOK
    return f"{kind.format}:{kind.type}:{file_id}"


class RoomHolds:
    """The notebook rooms each holder (an agent session, a kernel) keeps open.

    With ``idle`` (seconds), a holder's rooms are let go that long after its last use ended
    (``in_use``), never during one, and ``on_release`` hears which holder let go; without it
    they are held until ``release``.
    """

    def __init__(
        self,
        rooms: RoomManager,
        file_ids: FileIdStore,
        *,
        idle: float | None = None,
        on_release: Callable[[str], None] | None = None,
    ) -> None:
        self.rooms = rooms
        self.file_ids = file_ids
        self.idle = idle
        self.on_release = on_release
        self._holds: dict[str, dict[str, tuple[DocumentRoom, RoomHold]]] = {}
        self._busy: Counter[str] = Counter()
        self._last_use: dict[str, float] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}

    @contextlib.contextmanager
    def in_use(self, holder: str) -> Iterator[None]:
        """A call of ``holder``'s runs inside: its rooms stay held until ``idle`` after it."""
        self._busy[holder] += 1
        try:
            yield
        finally:
            self._busy[holder] -= 1
            if not self._busy[holder]:
                del self._busy[holder]
            if holder in self._holds:
                self._last_use[holder] = asyncio.get_running_loop().time()
                self._arm(holder)

    async def notebook(
        self, holder: str, path: str, *, writable: bool = True
    ) -> tuple[DocumentRoom, YNotebook]:
        """``path``'s room, joined for ``holder`` on first use (again once it let go).

        NotebookNotFound for no such file; UsageError for a file that is not a notebook, or,
        when ``writable``, a read-only room (another server owns the file, or its mode forbids
        writing).
        """
        api_path = normalize_api_path(path)
        name = notebook_room_name(self.file_ids.index(api_path))
        holds = self._holds.setdefault(holder, {})
        held = holds.get(name)
        if held is not None and held[1] not in held[0].clients:
            del holds[name]  # the room closed under us (its file went away): join anew
            held = None
        if held is None:
            hold = RoomHold()
            room = await self.rooms.join(name, hold)
            if not isinstance(room, DocumentRoom) or not isinstance(
                room.document.shared, YNotebook
            ):
                self.rooms.leave(room, hold)
                raise UsageError(f"{api_path} is not a notebook")
            holds = self._holds.setdefault(holder, {})  # let go of while we waited: anew
            held = holds.get(name)
            if held is not None:  # another call of this holder joined while we waited
                self.rooms.leave(room, hold)
            else:
                held = holds[name] = (room, hold)
            self._arm(holder)
        room = held[0]
        refusal = room.write_refusal() if writable else None
        if refusal is not None:
            raise ReadOnlyRoom(api_path, refusal)
        notebook = room.document.notebook  # checked when the room was joined
        return room, notebook

    def hold_in(self, holder: str, room: DocumentRoom) -> RoomHold | None:
        """The client through which ``holder`` is in ``room``, if it is."""
        held = self._holds.get(holder, {}).get(room.name)
        return held[1] if held is not None and held[0] is room else None

    def release(self, holder: str) -> None:
        """The holder is done: its rooms close once their other clients have gone too."""
        timer = self._timers.pop(holder, None)
        if timer is not None:
            timer.cancel()
        self._last_use.pop(holder, None)
        for room, hold in self._holds.pop(holder, {}).values():
            self.rooms.leave(room, hold)

    def release_all(self) -> None:
        for holder in list(self._holds):
            self.release(holder)

    def _arm(self, holder: str, after: float | None = None) -> None:
        """Look again ``after`` seconds (``idle`` by default) whether ``holder`` went idle."""
        if self.idle is None or holder in self._timers or not self._holds.get(holder):
            return
        wait = self.idle if after is None else after
        self._timers[holder] = detached_call_later(wait, self._let_go_if_idle, holder)

    def _let_go_if_idle(self, holder: str) -> None:
        """Idle ``idle`` seconds since its last use ended: let go of the rooms it can be given
        again (a call running now re-arms the look as it ends)."""
        self._timers.pop(holder, None)
        if self.idle is None or holder in self._busy:
            return
        left = self._last_use.get(holder, 0.0) + self.idle - asyncio.get_running_loop().time()
        if left > 0:
            self._arm(holder, left)
            return
        kept: dict[str, tuple[DocumentRoom, RoomHold]] = {}
        for name, (room, hold) in self._holds.pop(holder, {}).items():
            notebook = room.document.shared
            if (
                hold in room.clients
                and isinstance(notebook, YNotebook)
                and not keeps_cell_ids(notebook)
            ):
                kept[name] = (room, hold)
                continue
            self.rooms.leave(room, hold)
        if kept:
            self._holds[holder] = kept
        else:
            self._last_use.pop(holder, None)
        if self.on_release is not None:
            self.on_release(holder)


def required(value: str | None, name: str) -> str:
    """A tool call's string argument that this edit cannot go without."""
    if not isinstance(value, str):
        raise UsageError(f"{name} is required (a string)")
    return value


def index_of(notebook: YNotebook, cell_id: str) -> int:
    for index, ycell in enumerate(notebook.ycells):
        if ycell.get("id") == cell_id:
            return index
    raise CellNotFound(cell_id)


def index_after(notebook: YNotebook, after: str | None) -> int:
    """Where a cell goes to follow ``after`` (None: the top)."""
    return 0 if after is None else index_of(notebook, after) + 1


def add_cell(
    room: WritesAs,
    notebook: YNotebook,
    index: int,
    *,
    cell_type: str,
    source: str,
    writer: Author,
    mode: str,
    cell_id: str | None = None,
) -> str:
    """Insert a new cell at ``index`` (its id ``cell_id``, else a new one); its id."""
    if cell_type not in CELL_TYPES:
        raise UsageError(f"cell_type must be one of {', '.join(CELL_TYPES)}, not {cell_type!r}")
    cell: dict[str, Any] = {
        "id": cell_id or uuid.uuid4().hex[:16],
        "cell_type": cell_type,
        "source": source,
        "metadata": agent_stamp({}, by=writer.name, mode=mode, at=now()),
    }
    if cell_type == "code":
        cell.update(outputs=[], execution_count=None)
    with room.writing_as(writer):
        notebook.ycells.insert(index, notebook.create_ycell(cell))
    return str(cell["id"])


def edit_source(
    room: WritesAs, notebook: YNotebook, index: int, source: str, *, writer: Author, mode: str
) -> None:
    """Replace a cell's source with as small a text change as will do (collaborators' cursors
    stay put), keeping the replaced source in the cell's provenance history."""
    ycell = notebook.ycells[index]
    text = ycell.get("source")
    replaced = str(text) if text is not None else ""
    with room.writing_as(writer):
        if isinstance(text, Text):
            patch_text(text, source)
        else:
            ycell["source"] = Text(source)
        _set_metadata(
            ycell,
            agent_stamp(
                _metadata(ycell), by=writer.name, mode=mode, at=now(), replaced_source=replaced
            ),
        )


def delete_cell(room: WritesAs, notebook: YNotebook, index: int, *, writer: Author) -> None:
    with room.writing_as(writer):
        del notebook.ycells[index]


def move_cell(
    room: WritesAs, notebook: YNotebook, index: int, after: str | None, *, writer: Author
) -> int:
    """Move the cell at ``index`` to follow ``after`` (None: the top); its new index.

    As JupyterLab moves cells: the cell is removed and a copy with the same id inserted, in
    one transaction, so clients see one move.
    """
    cell = notebook.ycells[index].to_py()
    with room.writing_as(writer):
        del notebook.ycells[index]
        target = index_after(notebook, after)
        notebook.ycells.insert(target, notebook.create_ycell(cell))
    return target


def mark_request_done(
    room: DocumentRoom, notebook: YNotebook, index: int, *, writer: Author
) -> None:
    ycell = notebook.ycells[index]
    with room.writing_as(writer):
        _set_metadata(ycell, request_done_stamp(_metadata(ycell), now()))


def _metadata(ycell: Map) -> dict[str, Any]:
    metadata = ycell.get("metadata")
    return metadata.to_py() if isinstance(metadata, Map) else {}


def _set_metadata(ycell: Map, updated: dict[str, Any]) -> None:
    """Write the ``ganymede`` section only, leaving other keys (and their history) alone."""
    metadata = ycell.get("metadata")
    if isinstance(metadata, Map):
        metadata[NAMESPACE] = updated[NAMESPACE]
    else:
        ycell["metadata"] = Map(updated)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")
