"""The contents manager: whichever one the server is configured with, plus file ids and rooms
that follow renames and deletes, and ``writable: false`` for a file another server's room owns or
the user may not write (the Authorizer says so, see ``roles``).

The extension wraps the configured class (jupyter_server's own, jupytext's, a user's subclass)
rather than replacing it: ``with_file_ids`` puts ``FileIdsFollow`` in front of an asynchronous
class, ``FileIdsFollowSync`` in front of a synchronous one (whose methods call each other without
awaiting), so every method the class defines still runs, with Ganymede's bookkeeping around it.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from jupyter_core.utils import ensure_async
from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from jupyter_server.services.contents.manager import AsyncContentsManager, ContentsManager
from tornado.web import HTTPError
from traitlets import Instance

from ganymede.client.discover import running_servers
from ganymede.fileid import FileIdStore
from ganymede.serve.roles import CONTENTS, WRITE, request_allows, request_allows_now
from ganymede.serve.rooms import RoomManager
from ganymede.serve.rooms.room import DocumentRoom


class FollowsFiles:
    """What both kinds of contents manager wrapper share: the store and rooms, attached by the
    server extension, which is loaded after the contents manager exists; until then (or when
    used on its own) files are renamed and deleted as usual. A file open in a read-only room, or
    one the user may not write, reads as not writable, as one the server may not write does."""

    file_ids: FileIdStore | None = None
    rooms: RoomManager | None = None
    log: Any

    def _marked(self, path: str, model: dict[str, Any], user_may_write: bool) -> dict[str, Any]:
        in_read_only_room = (
            self.rooms is not None and model["type"] != "directory" and self.rooms.read_only(path)
        )
        if in_read_only_room or not user_may_write:
            model["writable"] = False
        return model

    def _moved(self, old_path: str, new_path: str | None) -> None:
        if self.file_ids is None:
            return
        if new_path is None:
            self.file_ids.delete(old_path)
        else:
            self.file_ids.move(old_path, new_path)

    async def trust_notebook(self, path: str) -> None:
        """Trust Notebook: with a room open the room trusts and signs what it holds, since its
        next save would otherwise write outputs the signature does not cover. (jupyter_server
        awaits this whatever the wrapped class's is, and nothing calls it from inside.)"""
        room = self.rooms.open_notebook_room(path) if self.rooms is not None else None
        if room is None:
            await ensure_async(super().trust_notebook(path))  # type: ignore[misc]
            return
        if room.read_only:
            # Signing here would not last: the owner's room saves over the file without knowing.
            # Jupyter answers this request with an HTML page, so the reason phrase says why too.
            why = f"open read-only here: {self._owner(path)} owns it; trust it there"
            reason = why[0].upper() + why[1:]
            raise HTTPError(409, f"{path}: {why}".replace("%", "%%"), reason=reason)
        self.log.warning("Trusting notebook %s through its room", path)
        await room.trust()

    def _owner(self, path: str) -> str:
        """The server whose room owns ``path``, as a person can find it: URL and process id."""
        assert self.rooms is not None
        pid = self.rooms.owner_pid(path)
        if pid is None:
            return "another server"
        servers = running_servers(self.rooms.runtime_dir)
        url = next((server.url for server in servers if server.pid == pid), None)
        return f"the server at {url} (pid {pid})" if url else f"another server (pid {pid})"


class FileIdsFollow(FollowsFiles):
    """In front of an asynchronous contents manager: a rename or delete moves or drops the file
    id once it has succeeded, the rooms on the files waiting while they move."""

    async def get(
        self,
        path: str,
        content: bool = True,
        type: str | None = None,
        format: str | None = None,
        require_hash: bool = False,
    ) -> dict[str, Any]:
        model: dict[str, Any] = await super().get(  # type: ignore[misc]
            path, content=content, type=type, format=format, require_hash=require_hash
        )
        may_write = not model["writable"] or await request_allows(WRITE, CONTENTS)
        return self._marked(path, model, may_write)

    async def rename_file(self, old_path: str, new_path: str) -> None:
        async with self._moving(old_path):
            await super().rename_file(old_path, new_path)  # type: ignore[misc]
            self._moved(old_path, new_path)

    async def delete_file(self, path: str) -> None:
        async with self._moving(path):
            await super().delete_file(path)  # type: ignore[misc]
            self._moved(path, None)

    def _moving(self, path: str) -> contextlib.AbstractAsyncContextManager[None]:
        """Rooms on the files under ``path`` wait while they move, then follow or close."""
        return self.rooms.moving(path) if self.rooms is not None else contextlib.nullcontext()


class FileIdsFollowSync(FollowsFiles):
    """In front of a synchronous contents manager (its ``update`` calls ``rename_file`` and
    ``get`` without awaiting, so these stay synchronous): it moves with the event loop held, so
    no room reads in between, and the rooms look again once it is done."""

    _following: set[asyncio.Future[None]]

    def get(self, path: str, content: bool = True, **kwargs: Any) -> dict[str, Any]:
        model: dict[str, Any] = super().get(path, content=content, **kwargs)  # type: ignore[misc]
        may_write = not model["writable"] or request_allows_now(WRITE, CONTENTS)
        return self._marked(path, model, may_write)

    def rename_file(self, old_path: str, new_path: str) -> None:
        held = self.rooms.rooms_under(old_path) if self.rooms is not None else []
        super().rename_file(old_path, new_path)  # type: ignore[misc]
        self._moved(old_path, new_path)
        self._follow(held)

    def delete_file(self, path: str) -> None:
        held = self.rooms.rooms_under(path) if self.rooms is not None else []
        super().delete_file(path)  # type: ignore[misc]
        self._moved(path, None)
        self._follow(held)

    def _follow(self, held: list[DocumentRoom]) -> None:
        if self.rooms is None or not held:
            return
        if not hasattr(self, "_following"):
            self._following = set()
        task = asyncio.ensure_future(self.rooms.look_again(held))
        self._following.add(task)
        task.add_done_callback(self._following.discard)


class GanymedeContentsManager(FileIdsFollow, AsyncLargeFileManager):
    """jupyter_server's default contents manager with file ids that follow, for servers built in
    one piece (the embedded MCP server, tests) rather than wrapped by the extension."""

    file_ids = Instance(FileIdStore, allow_none=True)
    rooms = Instance(RoomManager, allow_none=True)


def with_file_ids(configured: type[ContentsManager]) -> type[ContentsManager]:
    """``configured`` with ``FileIdsFollow`` (or its synchronous twin) in front; a class that
    has one already is kept."""
    if issubclass(configured, FollowsFiles):
        return configured
    follow = FileIdsFollow if issubclass(configured, AsyncContentsManager) else FileIdsFollowSync
    name = f"FileIds{configured.__name__}"
    wrapped: type[ContentsManager] = type(
        name, (follow, configured), {"__module__": __name__, "__doc__": configured.__doc__}
    )
    return wrapped
