"""The contents manager: jupyter_server's own, plus file ids and rooms that follow renames and
deletes, and ``writable: false`` for a file another server's room owns or the user may not
write."""

from __future__ import annotations

import contextlib
from typing import Any

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from tornado.web import HTTPError
from traitlets import Instance

from ganymede.client.discover import running_servers
from ganymede.fileid import FileIdStore
from ganymede.serve.roles import CONTENTS, WRITE, request_allows
from ganymede.serve.rooms import RoomManager


class GanymedeContentsManager(AsyncLargeFileManager):
    """Moves or drops file ids once a rename or delete through the contents API has succeeded.

    The store and the rooms are attached by the server extension, which is loaded after the
    contents manager exists; until then (or when used on its own) files are renamed and deleted
    as usual. A file open in a read-only room, or one the user may not write (the Authorizer
    says so, see ``roles``), reads as not writable, as one the server may not write does.
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
        in_read_only_room = (
            self.rooms is not None and model["type"] != "directory" and self.rooms.read_only(path)
        )
        if in_read_only_room or (model["writable"] and not await request_allows(WRITE, CONTENTS)):
            model["writable"] = False
        return model

    async def trust_notebook(self, path: str) -> None:
        """Trust Notebook: with a room open the room trusts and signs what it holds, since its
        next save would otherwise write outputs the signature does not cover."""
        room = self.rooms.open_notebook_room(path) if self.rooms is not None else None
        if room is None:
            await super().trust_notebook(path)
            return
        if room.read_only:
            # Signing here would not last: the owner's room saves over the file without knowing.
            # Jupyter answers this request with an HTML page, so the reason phrase says why too.
            why = f"open read-only here: {self._owner(path)} owns it; trust it there"
            reason = why[0].upper() + why[1:]
            raise HTTPError(409, f"{path}: {why}".replace("%", "%%"), reason=reason)
        self.log.warning("Trusting notebook %s through its room", path)
        await room.trust()

    async def rename_file(self, old_path: str, new_path: str) -> None:
        async with self._moving(old_path):
            await super().rename_file(old_path, new_path)
            if self.file_ids is not None:
                self.file_ids.move(old_path, new_path)

    async def delete_file(self, path: str) -> None:
        async with self._moving(path):
            await super().delete_file(path)
            if self.file_ids is not None:
                self.file_ids.delete(path)

    def _moving(self, path: str) -> contextlib.AbstractAsyncContextManager[None]:
        """Rooms on the files under ``path`` wait while they move, then follow or close."""
        return self.rooms.moving(path) if self.rooms is not None else contextlib.nullcontext()

    def _owner(self, path: str) -> str:
        """The server whose room owns ``path``, as a person can find it: URL and process id."""
        assert self.rooms is not None
        pid = self.rooms.owner_pid(path)
        if pid is None:
            return "another server"
        servers = running_servers(self.rooms.runtime_dir)
        url = next((server.url for server in servers if server.pid == pid), None)
        return f"the server at {url} (pid {pid})" if url else f"another server (pid {pid})"
