"""The self.* calls' cell edits, made in the calling notebook's room so every client sees them.

A kernel that edits itself holds its notebook's room open until it ends (``release``), as an
MCP connection does: the ids ``add`` returns stay valid even in a notebook saved without cell
ids. Each edit is one transaction, made only after the cell is found and its source hash
matches, so a refused edit changes nothing. Cells a kernel writes carry its provenance.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any

from jupyter_ydoc import YNotebook
from pycrdt import Map, Text

from ganymede.agent import Author, AuthorKind
from ganymede.core import OpenDocument, normalize_api_path
from ganymede.errors import CellNotFound, SourceMismatch, UsageError
from ganymede.fileid import FileIdStore
from ganymede.notebook.hashing import source_hash
from ganymede.notebook.provenance import KERNEL_AUTHOR, NAMESPACE, agent_stamp
from ganymede.notebook.schema import strip_transient
from ganymede.serve.execution.service import RoomHold
from ganymede.serve.rooms import RoomManager
from ganymede.serve.rooms.document import DocumentKind, notebook_content
from ganymede.serve.rooms.patch import patch_text
from ganymede.serve.rooms.room import DocumentRoom

KERNEL_MODE = "note"
"""The provenance ``mode`` of what a kernel writes into its own notebook."""
KERNEL_WRITER = Author(KERNEL_AUTHOR, AuthorKind.KERNEL)
"""Who the room's attribution names for a kernel's edits."""


def room_notebook_reader(rooms: RoomManager) -> OpenDocument:
    """What the notebooks core reads a notebook from while its room is open: the room's copy."""

    def open_document(api_path: str) -> dict[str, Any] | None:
        room = rooms.open_notebook_room(api_path)
        if room is None:
            return None
        notebook = notebook_content(room.document.shared)  # type: ignore[arg-type]
        strip_transient(notebook)  # the cells' trust marks are for JupyterLab, not the notebook
        return notebook

    return open_document


class HostRooms:
    """Edits notebooks through the server's rooms for kernels; a ``host.self_edits.CellEditor``."""

    def __init__(self, rooms: RoomManager, file_ids: FileIdStore) -> None:
        self.rooms = rooms
        self.file_ids = file_ids
        self._holds: dict[str, dict[str, tuple[DocumentRoom, RoomHold]]] = {}

    async def add(
        self, holder: str, path: str, cell_type: str, source: str, after: str | None
    ) -> str:
        room, notebook = await self._room(holder, path)
        index = len(notebook.ycells) if after is None else _index_of(notebook, after) + 1
        cell: dict[str, Any] = {
            "id": uuid.uuid4().hex[:16],
            "cell_type": cell_type,
            "source": source,
            "metadata": agent_stamp({}, by=KERNEL_AUTHOR, mode=KERNEL_MODE, at=_now()),
        }
        if cell_type == "code":
            cell.update(outputs=[], execution_count=None)
        with room.writing_as(KERNEL_WRITER):
            notebook.ycells.insert(index, notebook.create_ycell(cell))
        return str(cell["id"])

    async def edit(
        self, holder: str, path: str, cell_id: str, source: str, source_hash: str
    ) -> None:
        room, notebook = await self._room(holder, path)
        ycell = notebook.ycells[_checked_index(notebook, cell_id, source_hash)]
        text = ycell.get("source")
        replaced = str(text)
        with room.writing_as(KERNEL_WRITER):
            if isinstance(text, Text):
                patch_text(text, source)
            else:
                ycell["source"] = Text(source)
            _stamp(ycell, replaced)

    async def delete(self, holder: str, path: str, cell_id: str, source_hash: str) -> None:
        room, notebook = await self._room(holder, path)
        index = _checked_index(notebook, cell_id, source_hash)
        with room.writing_as(KERNEL_WRITER):
            del notebook.ycells[index]

    async def release(self, holder: str) -> None:
        """The kernel ended: its rooms close once their other clients have gone too."""
        for room, hold in self._holds.pop(holder, {}).values():
            self.rooms.leave(room, hold)

    async def _room(self, holder: str, path: str) -> tuple[DocumentRoom, YNotebook]:
        """``path``'s room, joined for ``holder`` on first use; never a read-only one."""
        api_path = normalize_api_path(path)
        kind = DocumentKind.NOTEBOOK
        name = f"{kind.format}:{kind.type}:{self.file_ids.index(api_path)}"
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
            held = holds.get(name)
            if held is not None:  # another call of this kernel joined while we waited
                self.rooms.leave(room, hold)
            else:
                held = holds[name] = (room, hold)
        room = held[0]
        if room.read_only:
            raise UsageError(f"{api_path} is read-only here: another server owns its file")
        notebook = room.document.shared
        assert isinstance(notebook, YNotebook)  # checked when the room was joined
        return room, notebook


def _index_of(notebook: YNotebook, cell_id: str) -> int:
    for index, ycell in enumerate(notebook.ycells):
        if ycell.get("id") == cell_id:
            return index
    raise CellNotFound(cell_id)


def _checked_index(notebook: YNotebook, cell_id: str, expected_hash: str) -> int:
    index = _index_of(notebook, cell_id)
    if source_hash(str(notebook.ycells[index].get("source", ""))) != expected_hash:
        raise SourceMismatch(cell_id)
    return index


def _stamp(ycell: Map, replaced_source: str) -> None:
    """Record the kernel as the cell's last writer, keeping the source it replaced."""
    metadata = ycell.get("metadata")
    current = metadata.to_py() if isinstance(metadata, Map) else {}
    stamped = agent_stamp(
        current, by=KERNEL_AUTHOR, mode=KERNEL_MODE, at=_now(), replaced_source=replaced_source
    )
    if isinstance(metadata, Map):
        metadata[NAMESPACE] = stamped[NAMESPACE]
    else:
        ycell["metadata"] = Map(stamped)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")
