"""The contents manager: jupyter_server's own, plus file ids that follow renames and deletes,
and ``writable: false`` for a file another server's room owns."""

from __future__ import annotations

from typing import Any

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from traitlets import Instance

from ganymede.fileid import FileIdStore
from ganymede.serve.rooms import RoomManager


class GanymedeContentsManager(AsyncLargeFileManager):
    """Moves or drops file ids once a rename or delete through the contents API has succeeded.

    The store and the rooms are attached by the server extension, which is loaded after the
    contents manager exists; until then (or when used on its own) files are renamed and deleted
    as usual. A file open in a read-only room reads as not writable, which is what makes
    JupyterLab show it read-only.
    """

    file_ids = Instance(FileIdStore, allow_none=True)
    rooms = Instance(RoomManager, allow_none=True)

    async def get(
        self,
        path: str,
        content: bool = True,
        type: str | None = None,
        format: str | None = None,
        require_hash: bool = False,
    ) -> dict[str, Any]:
        model: dict[str, Any] = await super().get(
            path, content=content, type=type, format=format, require_hash=require_hash
        )
        if self.rooms is not None and model["type"] != "directory" and self.rooms.read_only(path):
            model["writable"] = False
        return model

    async def trust_notebook(self, path: str) -> None:
        """Trust Notebook: with a room open the room trusts and signs what it holds, since its
        next save would otherwise write outputs the signature does not cover."""
        room = self.rooms.open_notebook_room(path) if self.rooms is not None else None
        if room is None:
            await super().trust_notebook(path)
            return
        self.log.warning("Trusting notebook %s through its room", path)
        await room.trust()

    async def rename_file(self, old_path: str, new_path: str) -> None:
        await super().rename_file(old_path, new_path)
        if self.file_ids is not None:
            self.file_ids.move(old_path, new_path)

    async def delete_file(self, path: str) -> None:
        await super().delete_file(path)
        if self.file_ids is not None:
            self.file_ids.delete(path)
