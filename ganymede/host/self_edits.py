"""The self.* calls: a kernel edits its own notebook's cells, through the notebook's room.

The room work (joining and holding the room, the source-hash check, provenance) is the
server's; it is handed in as a ``CellEditor`` so this package never imports the server.
Only a kernel started for a notebook, with ``self_calls`` and the ``edit_self`` grant, may call.
"""

from __future__ import annotations

from typing import Any, Protocol

from ganymede.core import CELL_TYPES
from ganymede.errors import HostCallError
from ganymede.host.api import Caller
from ganymede.host.params import Params

SELF_METHODS = ("self.add", "self.edit", "self.delete")


class CellEditor(Protocol):
    """Edits cells of a notebook through its room, holding the room open for ``holder``.

    ``edit`` and ``delete`` raise SourceMismatch when ``source_hash`` is not the cell's
    source hash now, CellNotFound for an unknown id; every edit carries the kernel's
    provenance. The room stays open until ``release(holder)``.
    """

    async def add(
        self, holder: str, path: str, cell_type: str, source: str, after: str | None
    ) -> str: ...

    async def edit(
        self, holder: str, path: str, cell_id: str, source: str, source_hash: str
    ) -> None: ...

    async def delete(self, holder: str, path: str, cell_id: str, source_hash: str) -> None: ...

    async def release(self, holder: str) -> None: ...


def self_call_refusal(caller: Caller, method: str) -> HostCallError | None:
    """Why ``caller`` may not make ``method`` (a self.* call), or None when it may."""
    if caller.notebook is None:
        return HostCallError("unavailable", f"{method}: this kernel has no notebook")
    if not caller.self_calls:
        return HostCallError(
            "unavailable", f"{method}: runs and executed notebooks make no self.* calls"
        )
    if not caller.grant.edit_self:
        return HostCallError("denied", f"{method} needs edit_self granted for {caller.notebook}")
    return None


class SelfEdits:
    """The self.* methods over one cell editor."""

    def __init__(self, editor: CellEditor) -> None:
        self.editor = editor

    async def add(self, caller: Caller, params: Params) -> dict[str, Any]:
        cell_type = params.text("cell_type", "code")
        if cell_type not in CELL_TYPES:
            raise params.fail(f"cell_type must be one of {', '.join(CELL_TYPES)}")
        source = params.text("source")
        after = params.optional_text("after")
        cell_id = await self.editor.add(caller.kernel_id, _own(caller), cell_type, source, after)
        return {"id": cell_id}

    async def edit(self, caller: Caller, params: Params) -> dict[str, Any]:
        await self.editor.edit(
            caller.kernel_id,
            _own(caller),
            params.text("id"),
            params.text("source"),
            params.text("source_hash"),
        )
        return {}

    async def delete(self, caller: Caller, params: Params) -> dict[str, Any]:
        await self.editor.delete(
            caller.kernel_id, _own(caller), params.text("id"), params.text("source_hash")
        )
        return {}


def _own(caller: Caller) -> str:
    assert caller.notebook is not None  # self_call_refusal ran first
    return caller.notebook
