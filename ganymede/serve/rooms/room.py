"""Document rooms: a file's document, shared by the clients connected to its room.

``DocumentRoom`` relays presence as every room does (``presence``) and also holds a file's
document: it syncs every client with it, forwards each client's edits to the others, answers
save requests and autosaves to the file.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from jupyter_ydoc import YNotebook
from jupyter_ydoc.ybasedoc import YBaseDoc
from pycrdt import Subscription, Text, TransactionEvent

from ganymede.agent import ANOTHER_PROGRAM, PERSON, UNKNOWN_AUTHOR, Author, AuthorKind
from ganymede.agent.attribution import NotebookAttribution
from ganymede.errors import FrameError, InvalidNotebook, NotebookNotFound, ReadOnlyRoom, UsageError
from ganymede.history import PointKind
from ganymede.serve import metrics
from ganymede.serve.rooms import protocol
from ganymede.serve.rooms.autosave import Autosave
from ganymede.serve.rooms.client_sync import ClientSync
from ganymede.serve.rooms.document import RoomDocument
from ganymede.serve.rooms.file import RoomFile, Snapshot, WriteOutcome
from ganymede.serve.rooms.history import RoomHistory
from ganymede.serve.rooms.mergein import FileMerge, apply_merge, merge_file_change, restore_roots
from ganymede.serve.rooms.packed import Packed
from ganymede.serve.rooms.patch import patch_notebook, patch_text
from ganymede.serve.rooms.presence import EMPTY_UPDATE, AwarenessRoom, Client, RoomHold
from ganymede.serve.rooms.protocol import SaveStatus
from ganymede.serve.rooms.readahead import ReadAhead
from ganymede.serve.rooms.shape_guard import ShapeGuard
from ganymede.serve.rooms.trust import OutputTrust, Writer
from ganymede.trust.outputs import KernelOutputs

# A save that finds the file changed merges and tries again; a file rewritten faster than that
# is left to the watcher.
SAVE_ATTEMPTS = 3
# What an open room holds in memory per byte of its document's update, as measured on a
# 2,000-cell notebook (bench/memory_breakdown.py): the Y document in Rust, and the rest packed.
MEMORY_PER_UPDATE_BYTE = 5


class DocumentRoom(AwarenessRoom):
    """A file's live document, shared by every client of the room.

    Every change to the document, whoever made it, goes to every client but the one it came
    from. Changes from clients count as edits: they schedule an autosave and make the room
    dirty until a save writes them. The room's own changes (the ``state`` it sets after a
    save, a change taken in from the file) are not edits.

    The room remembers its ``base``, the bytes it last read from or wrote to the file, and
    their hash: a file with another hash was changed by another program, and is merged in
    (base, the room, the file) before anything is written over it.

    A ``read_only`` room (another server owns the file, see ``lock``) still takes in the
    file's changes, but never saves and undoes every edit its clients send. In any room, a
    client let in as a viewer (``view_only``: its user may read the file but not write it, or
    the file's mode forbids writing) is treated so: it sees every change live, its edits are
    undone and its save requests fail.

    With a ``history`` every update is recorded as it commits, with who made it and how: a
    client's or a server-side writer's edit, a change taken in from the file, or the room's
    own bookkeeping (``PointKind``).
    """

    def __init__(
        self,
        name: str,
        document: RoomDocument,
        file: RoomFile,
        snapshot: Snapshot,
        *,
        cell_ids: list[str],
        signed: bool,
        save_delay: float,
        kernel_outputs: KernelOutputs,
        log: logging.Logger,
        read_only: bool = False,
        begin_history: Callable[[bytes], RoomHistory] | None = None,
    ) -> None:
        """``document`` was just filled from ``snapshot`` by ``RoomDocument.load``, which gave
        its cells ``cell_ids``; ``signed``: the snapshot's signature is known (``file_signed``);
        ``kernel_outputs``: what the server's kernels sent (see ``trust``); ``begin_history``
        starts the room's history with the document as loaded."""
        super().__init__(name, log)
        self.document = document
        self.read_only = read_only
        self.file = file
        self._packed_base = Packed(snapshot.data)
        self._file_hash = snapshot.hash
        # What the loaded document serialises to: saving it again would change nothing. Taken
        # now, read and serialised when a save first compares with it, so an open does not
        # wait for it (as after a merge that leaves the room holding what the file holds).
        loaded = document.doc.get_update()
        self._live_mb = len(loaded) * MEMORY_PER_UPDATE_BYTE / 2**20
        self._loaded_content: Callable[[], Any] | None = document.content_later(loaded)
        self.history: RoomHistory | None = (
            begin_history(loaded) if begin_history is not None else None
        )
        # Bytes while a save or a merge still compares with them, packed once it is done.
        self._saved: bytes | Packed | None = None
        self._edits = 0
        self._saved_edits = 0
        self._origin: Client | None = None
        self._own_change = False
        self._own_kind = PointKind.STATE
        self._writing_kind = PointKind.EDIT
        self._sync = ClientSync(name, document, log, self._apply)
        self._viewers: set[Client] = set()
        self._save_lock = asyncio.Lock()
        self._autosave = Autosave(save_delay, self._save_quietly)
        self._subscription: Subscription | None = document.doc.observe(self._on_change)
        self._closed = False
        self._handed_out = False
        self._trust = OutputTrust(document, self._writer, log, kernel_outputs)
        self._trust.take_loaded(document.parse(snapshot.data, snapshot.path), cell_ids, signed)
        self._read_ahead = ReadAhead(
            file, document, self._trust, lambda: (self._base, self._file_hash), log
        )
        self._writing_as: Author | None = None
        self.attribution = (
            NotebookAttribution(document.shared.ycells, self._author_now, cell_ids=cell_ids)
            if isinstance(document.shared, YNotebook)
            else None
        )
        document.forget_parses()
        document.on_unpack = self._unpacked

    @property
    def estimated_mb(self) -> float:
        """What the room costs in memory, as the ``max_rooms_mb`` budget counts it."""
        packed = self.document.packed_away
        return packed.packed_size / 2**20 if packed is not None else self._live_mb

    @property
    def _base(self) -> bytes:
        """The bytes the room last read from or wrote to its file: the next merge's base."""
        return self._packed_base.unpack()

    @_base.setter
    def _base(self, data: bytes) -> None:
        self._packed_base = Packed(data)

    def _let_go(self) -> None:
        """A save or a merge is done: what it worked with waits packed or goes (an open room
        keeps no more than its document and a tenth of its file besides)."""
        if isinstance(self._saved, bytes):
            self._saved = Packed(self._saved)
        self.document.forget_parses()

    @property
    def _saved_data(self) -> bytes:
        """The bytes the file holds as far as the room knows: its last write or its load."""
        if self._saved is None:
            assert self._loaded_content is not None
            self._saved = self.document.serialise(self._loaded_content())
            self._loaded_content = None
        if isinstance(self._saved, Packed):
            return self._saved.unpack()
        return self._saved

    @_saved_data.setter
    def _saved_data(self, data: bytes) -> None:
        self._saved, self._loaded_content = data, None

    @property
    def has_unsaved_edits(self) -> bool:
        return self._edits != self._saved_edits

    async def start(self) -> None:
        for leftover in await asyncio.to_thread(self.file.remove_abandoned_writes):
            self.log.info("%s: removed %s, left by a save that never finished", self.name, leftover)
        await self._autosave.start()

    async def stop(self) -> None:
        """Save edits not yet written, then close every client."""
        await self._read_ahead.stop()
        await self._autosave.stop()
        try:
            if self.has_unsaved_edits:
                await self.save()
        finally:
            await super().stop()
            self._done_with_document()

    def join(self, client: Client) -> None:
        """Admit a client: ask it for what the room lacks (it asks the same of us)."""
        client.send(protocol.sync_step1(self.document.doc.get_state()))
        super().join(client)

    def leave(self, client: Client) -> None:
        self._sync.leave(client)
        self._viewers.discard(client)
        super().leave(client)

    def write_refusal(self) -> str | None:
        """Why nothing may be written into this room (its edits would never reach the file),
        or None: another server owns the file, or the file's mode forbids writing it."""
        if self.read_only:
            return "another server owns its file"
        if not self.file.writable():
            return "its file's mode forbids writing it"
        return None

    def view_only(self, client: Client) -> None:
        """From now on ``client`` only watches: its edits are undone, its saves refused."""
        self._viewers.add(client)

    async def handle(self, client: Client, message: protocol.Message) -> None:
        if isinstance(message, protocol.SyncStep1):
            self._sync.state_vector(client, message.state)
        elif isinstance(message, protocol.SyncStep2 | protocol.SyncUpdate):
            self._sync.update(client, message)
        elif isinstance(message, protocol.SaveRequest):
            status = "failed" if client in self._viewers else await self.save(explicit=True)
            client.send(protocol.save_reply(message.save_id, status))

    async def save(self, *, explicit: bool = False) -> SaveStatus:
        """Write the document if it changed, taking in first what another program wrote.

        ``success`` when the file now holds the document, including when the content is what
        the room last read or wrote (edits to ``state`` alone, or edits undone) and the file is
        left alone. ``failed`` when the file is gone or the write failed (the room stays
        dirty), and when taking in the file's change let the file win a part the room had
        changed: the merge is saved, but that change of the room's is not in the file. A file
        the room cannot read is overwritten only by an ``explicit`` save (a person asked).
        Never ``skipped``: JupyterLab reports that as "saving already in progress", and saves
        here wait their turn.
        """
        if self.read_only:
            return "failed"
        async with self._save_lock:
            started = time.perf_counter()
            status = await self._save_locked(explicit)
            metrics.ROOM_SAVE_SECONDS.observe(time.perf_counter() - started)
            metrics.ROOM_SAVES.labels(status).inc()
            await self._trust.sign_saved(self._saved_data, self.document.shared.path)
            if self._trust.marks_stale:  # outputs a client made up, in a cell marked trusted
                self._mark_trusted_cells()
            self._let_go()
            return status

    def trust_outputs(self, cell_id: str) -> None:
        """A run on this server writes ``cell_id``'s outputs: they, and what it writes next
        into that cell, are trusted (until a client or the file changes them)."""
        self._trust.trust_outputs(cell_id)

    async def trust(self) -> SaveStatus:
        """Trust every output the notebook holds (a person asked), then save and sign it."""
        self._trust.trust_all()
        self._mark_trusted_cells()
        status = await self.save(explicit=True)
        if status == "success":
            await self._trust.sign_unwritten(self._base, self.document.shared.path)
        return status

    def _mark_trusted_cells(self) -> None:
        """Show clients which cells' outputs are trusted (see ``trust``); not an edit."""
        with self._own_changes():
            self._trust.mark_cells()

    @contextlib.contextmanager
    def writing_as(self, author: Author) -> Iterator[None]:
        """One transaction of changes made on ``author``'s behalf (an agent's tool, a kernel's
        ``self.*`` call): attributed to it, and edits saved like a client's."""
        outer = self._writing_as
        self._writing_as = author
        try:
            with self.document.doc.transaction():
                yield
        finally:
            self._writing_as = outer

    def person(self, login: str | None) -> Author:
        """The person logged in as ``login``, by the name their room connection shows others
        (JupyterLab's awareness name), else by the login itself."""
        for client in self.clients:
            if login is not None and getattr(client, "user_name", None) == login:
                name = self._ledger.user_name(client)
                if name:
                    return Author(name, AuthorKind.PERSON)
        return Author(login or PERSON, AuthorKind.PERSON)

    def _author_now(self) -> Author | None:
        """Who makes the transaction committing now: a client (by the name its awareness or
        its login gives), the file, a server-side writer, or nobody answerable."""
        if self._origin is not None:
            name = self._ledger.user_name(self._origin) or getattr(self._origin, "user_name", None)
            return Author(name or PERSON, AuthorKind.PERSON)
        if self._own_change:
            return ANOTHER_PROGRAM
        return self._writing_as

    def _writer(self) -> Writer:
        if self._origin is not None:
            return Writer.CLIENT
        return Writer.FILE if self._own_change else Writer.SERVER

    def file_changing(self) -> None:
        """The watcher saw the file change; it will call ``take_in_file_change`` once the file
        settles, and meanwhile the room reads it ahead (see ``readahead``)."""
        self._read_ahead.file_changed()

    async def take_in_file_change(self) -> bool:
        """Merge what another program wrote to the file into the room; False if it is gone.

        The watcher calls this once the file's changes settle. A file still holding the
        room's own last write is left alone; one that cannot be read is logged and left for
        a later write to fix. When the merge keeps changes of the room's that the file lacks,
        the room saves them at once.
        """
        async with self._save_lock:
            try:
                await self._read_ahead.finished()
                return await self._take_in_locked()
            finally:
                # One begun meanwhile reads a version this take-in read itself, or the room's
                # own save: had it finished after, its parse and bytes would stay till the next.
                await self._read_ahead.stop()
                self._let_go()

    async def _take_in_locked(self) -> bool:
        """``take_in_file_change`` under the save lock."""
        try:
            snapshot = await asyncio.to_thread(self.file.read)
        except NotebookNotFound:
            return False
        self._follow_path(snapshot.path)
        if snapshot.hash == self._file_hash:
            return True
        await self._trust.vet_file(snapshot.data, snapshot.path)
        merge = self._merge_in(snapshot)
        if merge is None:
            return True
        # One turn of the loop first: the clients' writers send the merge before the room
        # reads the whole document again to mark trusted cells and save.
        await asyncio.sleep(0)
        self._mark_trusted_cells()
        if merge.file_changed and not self.read_only:
            await self._save_locked(explicit=False)
            await self._trust.sign_saved(self._saved_data, self.document.shared.path)
        return True

    @contextlib.asynccontextmanager
    async def file_held(self) -> AsyncIterator[None]:
        """Nothing of the room's reads or writes its file inside (a save under way finishes
        first): the contents API is moving or deleting it."""
        async with self._save_lock:
            yield

    def _follow_path(self, path: str) -> None:
        """The file was renamed through the contents API; JupyterLab re-keys on ``state.path``."""
        if self.document.path != path:  # read without unpacking a packed document
            with self._own_changes():
                self.document.shared.path = path

    async def abandon(self) -> None:
        """The file is gone: close every client with 4404 and write nothing back."""
        await self._read_ahead.stop()
        await self._autosave.stop()
        async with self._save_lock:  # a save under way finishes (and finds the file gone)
            for client in list(self.clients):
                client.close(protocol.CloseCode.FILE_NOT_FOUND, "file not found")
            self.clients.clear()
            self._done_with_document()

    def hand_out(self) -> YBaseDoc:
        """The live document, for an extension that keeps it (jupyterlab-chat's router,
        jupyter-ai's personas): from now on it is never packed away, as they would hold on to
        a document the room no longer has."""
        self._handed_out = True
        return self.document.shared

    def _presence_moved(self) -> None:
        if not self._closed:
            self.document.expect_use()

    def pack_if_idle(self, idle_for: float, now: float) -> bool:
        """Pack the document away (``RoomDocument.pack_away``) when nothing has used it for
        ``idle_for`` seconds: clients who only look (or nobody, in the grace period) cost its
        packed update, and the next message that needs it rebuilds it. Never a room with
        unsaved edits, a save under way, a hold of the server's in it (a run, an agent's or a
        kernel's edits, which keep the document's parts), or a document handed out; only
        notebooks and text files (a registered class may keep state of its own)."""
        document = self.document
        if (
            self._closed
            or self._handed_out
            or document.packed_away is not None
            or document.kind.registered
            or now - document.used_at < idle_for
            or self.has_unsaved_edits
            or self._save_lock.locked()
            or any(isinstance(client, RoomHold) for client in self.clients)
        ):
            return False
        self._unwatch_document()
        self._sync.forget_answer()
        document.pack_away()
        metrics.DOCUMENTS_PACKED.inc()
        return True

    def _unpacked(self) -> None:
        """The document is live again: observe it as before it was packed (not once the room
        has closed: a late reader of a closed room's document must not bring it back)."""
        if self._closed:
            return
        metrics.DOCUMENTS_PACKED.dec()
        document = self.document
        self._subscription = document.doc.observe(self._on_change)
        self._trust.watch()
        if self.attribution is not None:
            self.attribution.watch(document.shared.ycells)  # type: ignore[attr-defined]

    def _done_with_document(self) -> None:
        """The room has closed: it observes its document no more."""
        self._unwatch_document()
        self._sync.forget_answer()
        if self.document.packed_away is not None:
            metrics.DOCUMENTS_PACKED.dec()
        self._closed = True

    def _unwatch_document(self) -> None:
        """Stop observing the document, the shape guard's watch included: a subscription holds
        the document alive through a reference Python cannot see (the room's own methods)."""
        if self._subscription is None:
            return
        self.document.doc.unobserve(self._subscription)
        self._subscription = None
        self._trust.close()
        if self.attribution is not None:
            self.attribution.close()
        guard = self.__dict__.pop("_shape_guard", None)
        if guard is not None:
            guard.close()

    async def _save_locked(self, explicit: bool) -> SaveStatus:
        file_won = False
        expected_hash = self._file_hash
        for _ in range(SAVE_ATTEMPTS):
            edits = self._edits
            data = self.document.to_bytes()
            self._trust.capture(data)
            if data == self._saved_data and expected_hash == self._file_hash:
                self._mark_saved(edits, data, self._file_hash)
                return "failed" if file_won else "success"
            try:
                outcome, file_hash = await asyncio.to_thread(
                    self.file.write_if_unchanged, data, expected_hash
                )
                if outcome is WriteOutcome.CHANGED_ON_DISK:
                    snapshot = await asyncio.to_thread(self.file.read)
            except OSError as error:  # NotebookNotFound included: the file went meanwhile
                self.log.error("room %s: cannot write its file: %s", self.name, error)
                return "failed"
            if outcome is WriteOutcome.GONE:
                self.log.warning("room %s: not saved, its file is gone", self.name)
                return "failed"
            if outcome is not WriteOutcome.CHANGED_ON_DISK:
                self._base = data
                self._mark_saved(edits, data, file_hash)
                return "failed" if file_won else "success"
            await self._trust.vet_file(snapshot.data, snapshot.path)
            merge = self._merge_in(snapshot)
            if merge is not None:
                self._mark_trusted_cells()
            if merge is None and not explicit:
                self.log.warning("room %s: not saved over a file it cannot read", self.name)
                return "failed"
            # Merged: write with the file's new hash; unreadable: a person saves over it.
            expected_hash = snapshot.hash
            file_won = file_won or (merge is not None and bool(merge.conflicts))
        self.log.warning("room %s: not saved, its file keeps changing", self.name)
        return "failed"

    def _merge_in(self, snapshot: Snapshot) -> FileMerge | None:
        """Merge the file's new content into the document (None: it cannot be read).

        Runs without awaiting, so no client edit lands between reading the room's document
        and changing it. The snapshot becomes the base; when the merge equals the file the
        room is clean. The caller then marks trusted cells (outputs taken in from the file are
        trusted by its signature): a separate update, which need not hold the merge back.
        """
        try:
            merge = merge_file_change(self.document, self._base, snapshot.data, snapshot.path)
        except (InvalidNotebook, UnicodeDecodeError) as error:
            self.log.warning(
                "room %s: its file changed but cannot be read, the room keeps its content: %s",
                self.name,
                error,
            )
            return None
        self.log.info(
            "room %s: took in a change to its file (%d conflicts)", self.name, len(merge.conflicts)
        )
        metrics.FILE_CHANGES_TAKEN_IN.inc()
        metrics.MERGE_CONFLICTS.inc(len(merge.conflicts))
        for conflict in merge.conflicts:
            self.log.warning(
                "room %s: cell %s, %s: %s",
                self.name,
                conflict.cell_id or "-",
                conflict.part,
                conflict.reason,
            )
        self._base = snapshot.data
        self._file_hash = snapshot.hash
        # One update for the clients: the change and the new state.
        with self._own_changes(PointKind.FILE):
            if merge.room_changed:
                apply_merge(self.document, merge)
            self.document.took_in(snapshot.data, snapshot.path)
            if not merge.file_changed:
                self._mark_saved(self._edits, None, snapshot.hash)
        return merge

    def _mark_saved(self, edits: int, data: bytes | None, file_hash: str) -> None:
        """The file holds ``data``, the document as of ``edits``; later edits keep it dirty.

        ``None``: the file holds the document as it is now, serialised when a save first
        compares with it (not before the clients hear of the change that made it so).
        """
        if data is None:
            self._saved, self._loaded_content = None, self.document.content_later()
        else:
            self._saved_data = data
        self._file_hash = file_hash
        self._saved_edits = edits
        with self._own_changes():
            self.document.mark_saved(file_hash, clean=not self.has_unsaved_edits)

    async def _save_quietly(self) -> None:
        """The autosave: failures are logged by ``save``; anything else must not stop it."""
        if not self.has_unsaved_edits:
            return
        try:
            await self.save()
        except Exception:
            self.log.exception("room %s: autosave failed", self.name)

    def _apply(self, client: Client, update: bytes) -> None:
        """Apply a client's update; FrameError if it is not a Yjs update (nothing applied)."""
        if update == EMPTY_UPDATE:
            return
        if self.read_only or client in self._viewers:
            self._apply_and_undo(update)
            return
        self._origin = client
        try:
            if self._shape_guard is None:
                self.document.doc.apply_update(update)
                return
            problem = self._shape_guard.apply(update)
        except ValueError as error:
            raise FrameError(f"not a Yjs update: {error}") from None
        finally:
            self._origin = None
        if problem is not None:
            # Undone as a change of the server's (the handler logs the refusal): every client
            # gets it, the sender included, and outputs it puts back are trusted no more than
            # a server change's.
            self._shape_guard.undo()
            raise FrameError(problem)

    @functools.cached_property
    def _shape_guard(self) -> ShapeGuard | None:
        """Made at the first client update; it keeps watching the notebook from then on."""
        shared = self.document.shared
        return ShapeGuard(shared) if isinstance(shared, YNotebook) else None

    def _apply_and_undo(self, update: bytes) -> None:
        """The answer to an edit nobody may make here: the edit and its undoing in one update,
        sent to every client, so the sender's view snaps back and the others see no change.

        The unsaved mark goes back to what it was: the sender's edit set it, but the edits of
        others (in a writable room) may still be unsaved.
        """
        before = (
            self.document.copy() if self.document.kind.registered else self.document.shared.get()
        )
        was_dirty = bool(self.document.shared.dirty)
        with self._own_changes():
            try:
                self.document.doc.apply_update(update)
            except ValueError as error:
                raise FrameError(f"not a Yjs update: {error}") from None
            if isinstance(before, RoomDocument):
                restore_roots(self.document, before)
            elif isinstance(before, str):
                patch_text(self.document.doc.get("source", type=Text), before)
            else:
                patch_notebook(self.document.shared, before)  # type: ignore[arg-type]
            self.document.mark_saved(self._file_hash, clean=not was_dirty)

    @contextlib.contextmanager
    def _own_changes(self, kind: PointKind = PointKind.STATE) -> Iterator[None]:
        """One transaction of the room's own (``kind``: how the history records it); nested
        ones join it and leave the flag and the kind as they are."""
        outer, outer_kind = self._own_change, self._own_kind
        if not outer:
            self._own_kind = kind
        self._own_change = True
        try:
            with self.document.doc.transaction():
                yield
        finally:
            self._own_change, self._own_kind = outer, outer_kind

    def apply_edit(self, update: bytes, author: Author, kind: PointKind = PointKind.EDIT) -> None:
        """Apply ``update`` as an edit of ``author``'s made through the server (a fork merged,
        a version restored): attributed, shape-guarded and saved like a client's.

        ReadOnlyRoom in a read-only room, UsageError (nothing applied) for an update that is
        not a Yjs update or would leave a notebook that cannot be saved.
        """
        if self.read_only:
            raise ReadOnlyRoom(str(self.document.shared.path))
        outer, outer_kind = self._writing_as, self._writing_kind
        self._writing_as, self._writing_kind = author, kind
        try:
            if self._shape_guard is None:
                self.document.doc.apply_update(update)
                return
            problem = self._shape_guard.apply(update)
        except ValueError as error:
            raise UsageError(f"not a Yjs update: {error}") from None
        finally:
            self._writing_as, self._writing_kind = outer, outer_kind
        if problem is not None:
            self._shape_guard.undo()
            raise UsageError(f"the edit was refused: {problem}")

    def _point_now(self) -> tuple[str, PointKind]:
        """Who makes the transaction committing now, and how, as the history records it."""
        if self._origin is None and self._own_change:
            return ("file" if self._own_kind is PointKind.FILE else "ganymede"), self._own_kind
        author = self._author_now()
        kind = PointKind.EDIT if self._origin is not None else self._writing_kind
        return (author.name if author is not None else UNKNOWN_AUTHOR), kind

    def _on_change(self, event: TransactionEvent) -> None:
        """Called as each transaction commits; the update goes to everyone but its author."""
        update = event.update
        if update == EMPTY_UPDATE:
            return
        self._sync.forget_answer()
        self.broadcast(protocol.sync_update(update), skip=self._origin)
        if self.history is not None:
            self.history.record(update, *self._point_now())
        if not self._own_change:
            self._edits += 1
            self._autosave.poke()
