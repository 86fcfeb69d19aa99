"""The server's rooms by name: opened on the first client, closed a grace period after the last.

The grace period lets a client that drops and reconnects (a laptop waking, a tab reloading)
find the very room it left, with the same document history, instead of a fresh one loaded from
the file. On server stop every room saves what its clients wrote, then closes.

One watcher serves every open document room: when another program changes a room's file, the
room merges the change in; when the file is gone (deleted or moved away), the room's clients
are closed with 4404 and nothing is written back.

Each document room holds its file's lock (``lock``) while open; a room that cannot take it
(another server's room has the file) is read-only until the lock comes free.

Observers (``RoomObserver``) hear rooms open and close and clients come and go: the
compatibility surface turns these into jupyter-collaboration's events.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path, PurePosixPath
from typing import Protocol

from jupyter_core.paths import jupyter_runtime_dir

from ganymede.errors import NotebookNotFound
from ganymede.fileid import FileIdStore
from ganymede.serve.rooms.document import DocumentKind, RoomDocument
from ganymede.serve.rooms.file import RoomFile
from ganymede.serve.rooms.heap import release_freed_memory
from ganymede.serve.rooms.history import HistoryRecorder, RoomHistory
from ganymede.serve.rooms.lock import LockKeeper, RoomLock
from ganymede.serve.rooms.presence import AwarenessRoom, Client
from ganymede.serve.rooms.protocol import RoomName
from ganymede.serve.rooms.room import DocumentRoom
from ganymede.serve.rooms.trust import file_signed
from ganymede.serve.rooms.watcher import FileWatcher
from ganymede.serve.service import detached_call_later, detached_task
from ganymede.trust.outputs import KernelOutputs

DEFAULT_GRACE_PERIOD = 60.0
# Seconds after the last of a run of opens or closes before freed memory goes back to the
# system: rooms closing together (a hundred, at a grace period's end) cost one collection, not a
# hundred, and an open's scratch (the file's bytes, their parse) does not stay resident.
HEAP_RELEASE_DELAY = 1.0
# How often, as a share of ``pack_idle_after``, the rooms are looked over for documents to pack.
PACK_CHECKS_PER_PERIOD = 4


class RoomObserver(Protocol):
    """Told of every room's life: opened once it is loaded, before its first client joins;
    closed once it has let go of its clients (a document room having saved, or found its file
    gone); and each client joining and leaving (the server's own holds included)."""

    def opened(self, room: AwarenessRoom) -> None: ...

    def closed(self, room: AwarenessRoom) -> None: ...

    def joined(self, room: AwarenessRoom, client: Client) -> None: ...

    def left(self, room: AwarenessRoom, client: Client) -> None: ...


class RoomManager:
    """Opens, shares and closes the rooms of one server process.

    ``session_id`` is fresh for every process: a client that presents another one holds
    history from a room this process never had, and is turned away rather than merged.
    """

    def __init__(
        self,
        file_ids: FileIdStore,
        *,
        hash_algorithm: str = "sha256",
        save_delay: float = 1.0,
        grace_period: float = DEFAULT_GRACE_PERIOD,
        settle: float = 0.5,
        settle_max: float = 5.0,
        runtime_dir: Path | None = None,
        kernel_outputs: KernelOutputs | None = None,
        history: HistoryRecorder | None = None,
        max_rooms_mb: float = 0.0,
        pack_idle_after: float = 0.0,
        log: logging.Logger | None = None,
    ) -> None:
        """``kernel_outputs``: what the server's kernels sent (none: no client-written rich
        output is trusted); ``history``: where document rooms record their updates (none: they
        keep no history); ``max_rooms_mb``: what the open document rooms may cost together,
        by their estimates (0: no budget), before clientless ones close ahead of their grace
        period's end; ``pack_idle_after``: seconds a room's document goes unused before it is
        packed away (``DocumentRoom.pack_if_idle``; 0: never)."""
        self.session_id = str(uuid.uuid4())
        self.file_ids = file_ids
        self.hash_algorithm = hash_algorithm
        self.save_delay = save_delay
        self.grace_period = grace_period
        self.runtime_dir = runtime_dir if runtime_dir is not None else Path(jupyter_runtime_dir())
        self.kernel_outputs = kernel_outputs if kernel_outputs is not None else KernelOutputs()
        self.history = history
        self.max_rooms_mb = max_rooms_mb
        self.pack_idle_after = pack_idle_after
        self._packing: asyncio.Task[None] | None = None
        self.log = log if log is not None else logging.getLogger(__name__)
        self._rooms: dict[str, AwarenessRoom] = {}
        self._opening: dict[str, asyncio.Future[AwarenessRoom]] = {}
        self._waiting: dict[str, asyncio.Task[None]] = {}  # grace periods running
        self._closing: dict[str, asyncio.Future[None]] = {}  # rooms saving before they close
        self._watcher = FileWatcher(
            self._on_settled, on_changed=self._on_changed, settle=settle, settle_max=settle_max
        )
        self._watched: dict[DocumentRoom, Path] = {}
        self._keepers: dict[DocumentRoom, LockKeeper] = {}
        self._observers: list[RoomObserver] = []
        self._heap_release: asyncio.TimerHandle | None = None

    def observe(self, observer: RoomObserver) -> None:
        self._observers.append(observer)

    def room(self, name: str) -> AwarenessRoom | None:
        """The room open under ``name``, if any (one waiting out its grace period included:
        a client coming back finds that very room)."""
        return self._rooms.get(name)

    def read_only(self, api_path: str) -> bool:
        """Whether a room of this server has the file open read-only (another server owns it)."""
        if not any(room.read_only for room in self._keepers):
            return False  # the common case answers without a file id lookup
        file_id = self.file_ids.get_id(api_path)
        if file_id is None:
            return False
        return any(
            isinstance(room, DocumentRoom) and room.read_only and room.file.file_id == file_id
            for room in self._rooms.values()
        )

    def owner_pid(self, api_path: str) -> int | None:
        """The process id of the server that owns the file a read-only room here has open."""
        room = self.open_notebook_room(api_path)
        keeper = self._keepers.get(room) if room is not None and room.read_only else None
        return keeper.lock.holder() if keeper is not None else None

    @contextlib.asynccontextmanager
    async def moving(self, api_path: str) -> AsyncIterator[None]:
        """A rename or delete through the contents API of ``api_path`` (a file, or a folder
        and everything in it) runs inside: the rooms on those files neither read nor write
        them until it is done, then follow the file (path, watch, lock) or close as for a
        file gone.

        The move is two steps, the file on disk and then its id: a room reading its file in
        between (its watcher taking in its own last save, an autosave) would find the id's
        path empty and close its clients as if another program had deleted the file.
        """
        held = self.rooms_under(api_path)
        async with contextlib.AsyncExitStack() as stack:
            for room in held:
                await stack.enter_async_context(room.file_held())
            yield
        await self.look_again(held)

    def rooms_under(self, api_path: str) -> list[DocumentRoom]:
        """The open rooms on ``api_path`` or on files under it."""
        top = api_path.strip("/")
        return [
            room
            for room in self._watched
            if self._rooms.get(room.name) is room and _within(room.document.path, top)
        ]

    async def look_again(self, rooms: list[DocumentRoom]) -> None:
        """After a move: each room still open follows its file (path, watch, lock) or closes
        as for a file gone. A synchronous contents manager moves with the event loop held, so
        no room reads in between; it calls this once done."""
        for room in rooms:
            if self._rooms.get(room.name) is room:
                await self._look_again(room)

    def open_notebook_room(self, api_path: str) -> DocumentRoom | None:
        """The room open on the notebook at ``api_path``, if any (by its file id)."""
        if not self._may_be_open(api_path):
            return None  # a search over many files asks the database only for likely ones
        file_id = self.file_ids.get_id(api_path)
        kind = DocumentKind.NOTEBOOK
        room = self._rooms.get(f"{kind.format}:{kind.type}:{file_id}") if file_id else None
        return room if isinstance(room, DocumentRoom) else None

    def _may_be_open(self, api_path: str) -> bool:
        return PurePosixPath(api_path).name in self.open_names()

    def open_names(self) -> set[str]:
        """The file names of the documents rooms have open, by the path each room shows its
        clients and the file the watcher follows (either may lag a rename): a search over many
        files asks for these once and looks for rooms only under such names."""
        names: set[str] = set()
        for room in self._rooms.values():
            if isinstance(room, DocumentRoom):
                names.add(PurePosixPath(room.document.path).name)
                watched = self._watched.get(room)
                if watched is not None:
                    names.add(watched.name)
        return names

    def notebook_rooms(self) -> dict[str, DocumentRoom]:
        """The notebook rooms open now, by file id."""
        prefix = f"{DocumentKind.NOTEBOOK.format}:{DocumentKind.NOTEBOOK.type}:"
        return {
            name.removeprefix(prefix): room
            for name, room in self._rooms.items()
            if name.startswith(prefix) and isinstance(room, DocumentRoom)
        }

    async def join(self, name: str, client: Client) -> AwarenessRoom:
        """Put ``client`` in the room ``name``, opening it if needed.

        Raises NotebookNotFound when the file id names no file, UsageError for a document
        kind rooms do not hold, InvalidNotebook or UnicodeDecodeError for a file they cannot
        read; the client is then in no room.
        """
        room = self._rooms.get(name)
        if room is None:
            opening = self._opening.get(name)
            if opening is None:
                opening = asyncio.ensure_future(self._open(RoomName.parse(name)))
                self._opening[name] = opening
                opening.add_done_callback(lambda _: self._opening.pop(name, None))
            # Shielded: a client that gives up waiting must not abort the open for the others.
            room = await asyncio.shield(opening)
        grace = self._waiting.pop(name, None)
        if grace is not None:
            grace.cancel()
        room.join(client)
        for observer in self._observers:
            observer.joined(room, client)
        return room

    def leave(self, room: AwarenessRoom, client: Client) -> None:
        """Take ``client`` out; the last one out starts the grace period."""
        room.leave(client)
        for observer in self._observers:
            observer.left(room, client)
        if room.clients or self._rooms.get(room.name) is not room or not room.closes_when_idle:
            return  # others remain, the room is already closing (its clients are told so), or
            # it stays until whoever made it removes it
        if room.name not in self._waiting:
            self._waiting[room.name] = detached_task(self._close_after_grace(room))
            self._keep_within_budget()

    def _keep_within_budget(self) -> None:
        """Over ``max_rooms_mb``, close clientless rooms now, the longest clientless first
        (the order their grace periods began), until the rest fit: never a room with a client
        or with edits not yet saved, which are closed by their grace period alone."""
        if self.max_rooms_mb <= 0:
            return
        costs = {
            name: room.estimated_mb
            for name, room in self._rooms.items()
            if isinstance(room, DocumentRoom)
        }
        total = sum(costs.values())
        for name in list(self._waiting):
            if total <= self.max_rooms_mb:
                return
            room = self._rooms.get(name)
            if not isinstance(room, DocumentRoom) or room.has_unsaved_edits:
                continue
            self._waiting[name].cancel()
            total -= costs[name]
            self.log.info("room %s: closed early, the rooms' memory budget is spent", name)
            self._waiting[name] = detached_task(self._close_after_grace(room, wait=0))

    def add_room(self, room: AwarenessRoom) -> None:
        """Serve a room the server made itself (a fork's) under its name; clients join it as
        any other. It closes when idle or when ``remove_room`` says, as it chooses."""
        if room.name in self._rooms or room.name in self._opening:
            raise ValueError(f"a room {room.name!r} is open already")
        self._rooms[room.name] = room
        for observer in self._observers:
            observer.opened(room)
        if room.closes_when_idle:
            self._waiting[room.name] = detached_task(self._close_after_grace(room))

    async def remove_room(self, room: AwarenessRoom) -> None:
        """Close a room ``add_room`` served: its clients are told it closed."""
        if self._rooms.get(room.name) is not room:
            return
        del self._rooms[room.name]
        grace = self._waiting.pop(room.name, None)
        if grace is not None:
            grace.cancel()
        await self._close(room)

    async def stop(self) -> None:
        """Save every room's unsaved edits and close every client (server shutdown)."""
        await self._watcher.stop()
        for waiting in self._waiting.values():
            waiting.cancel()
        self._waiting.clear()
        rooms = list(self._rooms.values())
        self._rooms.clear()
        closing = list(self._closing.values())
        await asyncio.gather(*closing, *(self._close(room) for room in rooms))
        if self._heap_release is not None:
            self._heap_release.cancel()
        if self._packing is not None:
            self._packing.cancel()
        if self.history is not None:
            await self.history.stop()  # the rooms' last saves are in it

    async def _open(self, name: RoomName) -> AwarenessRoom:
        previous = self._closing.get(name.text)
        if previous is not None:
            # The file must hold what the room closing on it saves before it is read again.
            await asyncio.shield(previous)
        room = await self._load(name) if name.is_document else AwarenessRoom(name.text, self.log)
        try:
            await room.start()
        except BaseException:
            await self._release(room)  # a room that never opened must not keep its file locked
            raise
        self._rooms[name.text] = room
        if isinstance(room, DocumentRoom):
            await self._keepers[room].start()
            await self._watch(room)
        for observer in self._observers:
            observer.opened(room)
        self._keep_within_budget()
        if isinstance(room, DocumentRoom):
            self._release_heap_soon()
            if self.pack_idle_after > 0 and self._packing is None:
                self._packing = detached_task(self._pack_idle_documents())
        return room

    async def _load(self, name: RoomName) -> DocumentRoom:
        assert name.file_id is not None
        kind = DocumentKind.of(name.format, name.type)
        file = RoomFile(name.file_id, self.file_ids, self.hash_algorithm)
        snapshot = await asyncio.to_thread(file.read)
        document = RoomDocument(kind)
        # Checked first, so the fill marks trusted cells as it goes.
        signed = await file_signed(document, snapshot.data, snapshot.path)
        cell_ids = document.load(snapshot.data, snapshot.path, snapshot.hash, trusted=signed)
        lock = RoomLock(file.os_path().resolve(), self.runtime_dir)
        read_only = not lock.try_acquire()
        self.log.info(
            "room %s: opened %s%s",
            name.text,
            snapshot.path,
            " read-only: another server has it open" if read_only else "",
        )
        room = DocumentRoom(
            name.text,
            document,
            file,
            snapshot,
            cell_ids=cell_ids,
            signed=signed,
            save_delay=self.save_delay,
            kernel_outputs=self.kernel_outputs,
            log=self.log,
            read_only=read_only,
            begin_history=self._history_of(name.file_id),
        )
        self._keepers[room] = LockKeeper(room, lock, self.log)
        return room

    def _history_of(self, file_id: str) -> Callable[[bytes], RoomHistory] | None:
        """How a room on ``file_id`` starts its epoch of the history (None: none is kept)."""
        history = self.history
        if history is None:
            return None
        return lambda loaded: history.begin(file_id, loaded)

    async def _close_after_grace(self, room: AwarenessRoom, wait: float | None = None) -> None:
        """Close the clientless ``room`` after ``wait`` seconds (the grace period by default)."""
        await asyncio.sleep(self.grace_period if wait is None else wait)
        # From here on a new client gets a new room, which waits for this one to finish.
        del self._waiting[room.name]
        del self._rooms[room.name]
        closing = asyncio.ensure_future(self._close(room))
        self._closing[room.name] = closing
        try:
            await asyncio.shield(closing)
        finally:
            self._closing.pop(room.name, None)

    async def _close(self, room: AwarenessRoom) -> None:
        if isinstance(room, DocumentRoom):
            self._unwatch(room)  # what the room writes on its way out is its own
        try:
            await room.stop()
        except Exception:
            self.log.exception("room %s: failed to close cleanly", room.name)
        else:
            self.log.info("room %s: closed", room.name)
        finally:
            await self._release(room)
            self._closed(room)

    async def _watch(self, room: DocumentRoom) -> None:
        """Watch the room's file where it is now (the watcher starts with the first room)."""
        if not self._watcher.started.is_set():
            await self._watcher.start()
        try:
            path = room.file.os_path()
        except NotebookNotFound:
            return  # gone already: nothing to watch, the room's saves will say so
        self._watched[room] = path
        self._watcher.watch(path)

    def _unwatch(self, room: DocumentRoom) -> None:
        path = self._watched.pop(room, None)
        if path is not None:
            self._watcher.unwatch(path)

    def _on_changed(self, path: Path) -> None:
        for room, watched in self._watched.items():
            if watched == path:
                room.file_changing()

    async def _on_settled(self, path: Path) -> None:
        """A watched file changed: each room open on it takes the change in, or closes."""
        for room, watched in list(self._watched.items()):
            if watched == path and self._rooms.get(room.name) is room:
                await self._look_again(room)

    async def _look_again(self, room: DocumentRoom) -> None:
        """The room's file changed or moved: take the change in where it is now, or close."""
        if await room.take_in_file_change():
            await self._follow(room)
        else:
            await self._drop_gone(room)

    async def _follow(self, room: DocumentRoom) -> None:
        """After a rename through the contents API the room's file may live elsewhere: watch
        there."""
        try:
            path = room.file.os_path()
        except NotebookNotFound:
            return
        if self._watched.get(room) != path:
            self.log.info("room %s: its file is now at %s", room.name, path)
            keeper = self._keepers.get(room)
            if keeper is not None:
                keeper.move(path.resolve(), self.runtime_dir)
            self._unwatch(room)
            await self._watch(room)
            # A write to the new path before it was watched has no event of its own.
            if not await room.take_in_file_change():
                await self._drop_gone(room)

    async def _drop_gone(self, room: DocumentRoom) -> None:
        """Another program deleted or moved the file: close the room without writing it back."""
        self.log.warning("room %s: its file is gone; closing its clients", room.name)
        del self._rooms[room.name]
        grace = self._waiting.pop(room.name, None)
        if grace is not None:
            grace.cancel()
        self._unwatch(room)
        await room.abandon()
        await self._release(room)
        self._closed(room)

    async def _pack_idle_documents(self) -> None:
        """Look over the rooms now and then: those whose documents went unused for
        ``pack_idle_after`` seconds pack them away, and the memory goes back to the system."""
        while True:
            await asyncio.sleep(self.pack_idle_after / PACK_CHECKS_PER_PERIOD)
            now = time.monotonic()
            packed = [
                room.name
                for room in list(self._rooms.values())
                if isinstance(room, DocumentRoom) and room.pack_if_idle(self.pack_idle_after, now)
            ]
            if packed:
                self.log.debug("rooms %s: idle, their documents packed away", ", ".join(packed))
                self._release_heap_soon()

    def _closed(self, room: AwarenessRoom) -> None:
        for observer in self._observers:
            observer.closed(room)
        if isinstance(room, DocumentRoom):
            self._release_heap_soon()

    def _release_heap_soon(self) -> None:
        if self._heap_release is not None:
            self._heap_release.cancel()
        self._heap_release = detached_call_later(HEAP_RELEASE_DELAY, release_freed_memory)

    async def _release(self, room: AwarenessRoom) -> None:
        """Let go of a closed document room's lock: another server's room may take over."""
        keeper = self._keepers.pop(room, None) if isinstance(room, DocumentRoom) else None
        if keeper is not None:
            await keeper.stop()


def _within(api_path: str, top: str) -> bool:
    """``api_path`` is ``top`` or lies in the folder ``top`` ("" is the root)."""
    return not top or api_path == top or api_path.startswith(top + "/")
