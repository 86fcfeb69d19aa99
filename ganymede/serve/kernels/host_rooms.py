"""The self.* calls' cell edits, made in the calling notebook's room so every client sees them.

A kernel that edits itself holds its notebook's room open while it works, as an MCP connection
does: until it ends (``release``), or ``idle`` seconds after its last ``self.*`` call, when the
room may close (after its grace period, having saved) and the next call opens it again. Its
edits need nothing of the room between calls (each is checked against the source hash the
kernel sends), and a notebook saved without cell ids stays held until the kernel ends, so the
ids ``add`` returns stay valid. Each edit is one transaction, made only after the cell is found
and its source hash matches, so a refused edit changes nothing. Cells a kernel writes carry its
provenance.
"""

from __future__ import annotations

from typing import Any

from jupyter_ydoc import YNotebook

from ganymede.agent import Author, AuthorKind
from ganymede.core import OpenDocument
from ganymede.errors import SourceMismatch
from ganymede.fileid import FileIdStore
from ganymede.notebook.hashing import source_hash
from ganymede.notebook.provenance import KERNEL_AUTHOR
from ganymede.notebook.schema import strip_transient
from ganymede.serve.agents.room_edits import (
    RoomHolds,
    add_cell,
    delete_cell,
    edit_source,
    index_after,
    index_of,
)
from ganymede.serve.rooms import RoomManager
from ganymede.serve.rooms.document import notebook_content

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
    """Edits notebooks through the server's rooms for kernels; a ``host.self_edits.CellEditor``.

    The kernel's own notebook only, each edit after its source-hash check: the room editing and
    the holding are the agent tools' own (``agents.room_edits``), attributed to the kernel.
    """

    def __init__(
        self, rooms: RoomManager, file_ids: FileIdStore, *, idle: float | None = None
    ) -> None:
        """``idle``: seconds after a kernel's last call before its hold lets go (None: held
        until the kernel ends)."""
        self.holds = RoomHolds(rooms, file_ids, idle=idle)

    async def add(
        self, holder: str, path: str, cell_type: str, source: str, after: str | None
    ) -> str:
        with self.holds.in_use(holder):
            room, notebook = await self.holds.notebook(holder, path)
            index = len(notebook.ycells) if after is None else index_after(notebook, after)
            return add_cell(
                room,
                notebook,
                index,
                cell_type=cell_type,
                source=source,
                writer=KERNEL_WRITER,
                mode=KERNEL_MODE,
            )

    async def edit(
        self, holder: str, path: str, cell_id: str, source: str, source_hash: str
    ) -> None:
        with self.holds.in_use(holder):
            room, notebook = await self.holds.notebook(holder, path)
            index = _checked_index(notebook, cell_id, source_hash)
            edit_source(room, notebook, index, source, writer=KERNEL_WRITER, mode=KERNEL_MODE)

    async def delete(self, holder: str, path: str, cell_id: str, source_hash: str) -> None:
        with self.holds.in_use(holder):
            room, notebook = await self.holds.notebook(holder, path)
            index = _checked_index(notebook, cell_id, source_hash)
            delete_cell(room, notebook, index, writer=KERNEL_WRITER)

    async def release(self, holder: str) -> None:
        """The kernel ended: its rooms close once their other clients have gone too."""
        self.holds.release(holder)


def _checked_index(notebook: YNotebook, cell_id: str, expected_hash: str) -> int:
    index = index_of(notebook, cell_id)
    if source_hash(str(notebook.ycells[index].get("source", ""))) != expected_hash:
        raise SourceMismatch(cell_id)
    return index
