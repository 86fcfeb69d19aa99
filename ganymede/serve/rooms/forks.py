"""Forks of a document room: a copy of its document in a room of its own, merged back or not.

jupyter-collaboration's fork endpoints (and the timeline slider, and suggestions) build on
this. A fork room lives in memory only: no file, no autosave, no lock. Its document starts as a
copy of the root's with the root's history (the same Yjs items), so a client that held the
root's document can sync with the fork without duplicating anything, and merging the fork back
is one Yjs update the root takes like a client's edit: attributed to whoever merged, checked by
the shape guard, saved by the autosave. A ``synchronize`` fork also follows every change of the
root as it happens.

While a fork exists it holds its root room open. ``Forks`` is the core the HTTP handlers and the
server's own writers (agent suggestions) call.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any

from pycrdt import Subscription, TransactionEvent

from ganymede.agent import Author
from ganymede.errors import FrameError, GanymedeError, UsageError
from ganymede.history import PointKind
from ganymede.serve.rooms import protocol
from ganymede.serve.rooms.document import RoomDocument
from ganymede.serve.rooms.manager import RoomManager
from ganymede.serve.rooms.presence import EMPTY_UPDATE, AwarenessRoom, Client, RoomHold
from ganymede.serve.rooms.protocol import RoomName
from ganymede.serve.rooms.room import DocumentRoom

ForkEvent = Callable[[dict[str, Any]], None]
ForkDecider = Callable[[bool, Author], Awaitable[object]]
"""Decides a fork a person deletes: merged (True) or dropped, as ``Author``."""


class UnknownFork(GanymedeError, LookupError):
    """No fork of that id on this server (deleted, or the server restarted)."""

    def __init__(self, fork_roomid: str) -> None:
        super().__init__(f"no fork room {fork_roomid!r}")
        self.fork_roomid = fork_roomid


class ForkRoom(AwarenessRoom):
    """A document shared by its clients and kept in memory only.

    ``closes_when_idle``: the room goes a grace period after its last client leaves (a
    timeline's view), else it stays until its fork is deleted.
    """

    def __init__(
        self, name: str, document: RoomDocument, log: logging.Logger, *, closes_when_idle: bool
    ) -> None:
        super().__init__(name, log)
        self.document = document
        self.closes_when_idle = closes_when_idle
        self._origin: Client | None = None
        self._subscription = document.doc.observe(self._on_change)

    async def stop(self) -> None:
        await super().stop()
        self.document.doc.unobserve(self._subscription)

    def join(self, client: Client) -> None:
        client.send(protocol.sync_step1(self.document.doc.get_state()))
        super().join(client)

    async def handle(self, client: Client, message: protocol.Message) -> None:
        if isinstance(message, protocol.SyncStep1):
            try:
                missing = self.document.doc.get_update(message.state)
            except ValueError as error:
                raise FrameError(f"not a Yjs state vector: {error}") from None
            client.send(protocol.sync_step2(missing))
        elif isinstance(message, protocol.SyncStep2 | protocol.SyncUpdate):
            if message.update == EMPTY_UPDATE:
                return
            self._origin = client
            try:
                self.document.doc.apply_update(message.update)
            except ValueError as error:
                raise FrameError(f"not a Yjs update: {error}") from None
            finally:
                self._origin = None
        elif isinstance(message, protocol.SaveRequest):
            # A fork has no file: merging it is how its content reaches one.
            client.send(protocol.save_reply(message.save_id, "failed"))

    def _on_change(self, event: TransactionEvent) -> None:
        if event.update != EMPTY_UPDATE:
            self.broadcast(protocol.sync_update(event.update), skip=self._origin)


@dataclass(frozen=True)
class ForkInfo:
    """What jupyter-collaboration answers about a fork (its ``fork_info``)."""

    root_roomid: str
    synchronize: bool
    title: str
    description: str

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Fork:
    roomid: str
    info: ForkInfo
    room: ForkRoom
    root: DocumentRoom
    hold: RoomHold
    following: Subscription | None = None
    decider: ForkDecider | None = None
    """Set by whoever made the fork for a person to decide on (an agent's suggestion)."""


class Forks:
    """Every fork on this server, by fork room id."""

    def __init__(
        self, rooms: RoomManager, log: logging.Logger, on_event: ForkEvent | None = None
    ) -> None:
        self._rooms = rooms
        self._log = log
        self._on_event = on_event
        self._forks: dict[str, Fork] = {}

    async def open_root(self, root_roomid: str, hold: RoomHold) -> DocumentRoom:
        """The document room ``root_roomid``, opened for ``hold`` if need be (UsageError for a
        name that is no document room; the manager's errors for a file it cannot open)."""
        if not RoomName.parse(root_roomid).is_document:
            raise UsageError(f"{root_roomid!r} names no document room")
        room = await self._rooms.join(root_roomid, hold)
        if not isinstance(room, DocumentRoom):  # pragma: no cover - a document name opens one
            self._rooms.leave(room, hold)
            raise UsageError(f"{root_roomid!r} names no document room")
        return room

    async def create(
        self,
        root_roomid: str,
        *,
        synchronize: bool = False,
        title: str = "",
        description: str = "",
        username: str = "",
    ) -> Fork:
        """A new fork of the room ``root_roomid``, reachable as a room under its id."""
        hold = RoomHold()
        root = await self.open_root(root_roomid, hold)
        roomid = uuid.uuid4().hex
        room = ForkRoom(roomid, root.document.copy(), self._log, closes_when_idle=False)
        info = ForkInfo(root_roomid, synchronize, title, description)
        fork = Fork(roomid, info, room, root, hold)
        if synchronize:
            follower = room.document.doc
            fork.following = root.document.doc.observe(
                lambda event: follower.apply_update(event.update)
            )
        self._rooms.add_room(room)
        self._forks[roomid] = fork
        self._log.info("fork %s of room %s created", roomid, root_roomid)
        self._emit(username, fork, "create")
        return fork

    def of(self, root_roomid: str) -> dict[str, ForkInfo]:
        """The forks of ``root_roomid``, by fork room id."""
        return {
            roomid: fork.info
            for roomid, fork in self._forks.items()
            if fork.info.root_roomid == root_roomid
        }

    def get(self, fork_roomid: str) -> Fork:
        fork = self._forks.get(fork_roomid)
        if fork is None:
            raise UnknownFork(fork_roomid)
        return fork

    def decided_by(self, fork_roomid: str, decider: ForkDecider) -> None:
        """A person's ``decide`` on this fork is ``decider``'s to carry out: what the fork is
        for (an agent's suggestion) learns of the decision, not only the fork."""
        self.get(fork_roomid).decider = decider

    async def decide(
        self, fork_roomid: str, *, merge: bool, author: Author, username: str = ""
    ) -> None:
        """A person deletes the fork, merging it when ``merge`` (JupyterLab's fork manager,
        jupyter-suggestions' panel): its decider carries that out if it has one, else
        ``delete``. UnknownFork, and ``delete``'s errors."""
        fork = self.get(fork_roomid)
        if fork.decider is not None:
            await fork.decider(merge, author)
        else:
            await self.delete(fork_roomid, merge=merge, author=author, username=username)

    async def delete(
        self, fork_roomid: str, *, merge: bool = False, author: Author, username: str = ""
    ) -> None:
        """Drop a fork, merging it into its root first when ``merge`` (as ``author``'s edit).

        A merge the root refuses (ReadOnlyRoom, a shape the notebook cannot be saved in:
        UsageError) leaves the fork as it was.
        """
        fork = self.get(fork_roomid)
        if merge:
            fork.root.apply_edit(fork.room.document.doc.get_update(), author, PointKind.MERGE)
        del self._forks[fork_roomid]
        if fork.following is not None:
            fork.root.document.doc.unobserve(fork.following)
        await self._rooms.remove_room(fork.room)
        self._rooms.leave(fork.root, fork.hold)
        self._log.info(
            "fork %s of room %s deleted%s", fork_roomid, fork.info.root_roomid,
            " after merging it" if merge else "",
        )  # fmt: skip
        self._emit(username, fork, "delete")

    async def stop(self) -> None:
        """The server stops: forks end with it (they live in memory only)."""
        for roomid in list(self._forks):
            fork = self._forks.pop(roomid)
            if fork.following is not None:
                fork.root.document.doc.unobserve(fork.following)

    def _emit(self, username: str, fork: Fork, action: str) -> None:
        if self._on_event is None:
            return
        data = {
            "username": username,
            "fork_roomid": fork.roomid,
            "fork_info": fork.info.as_json(),
            "action": action,
        }
        try:
            self._on_event(data)
        except Exception:
            self._log.exception("fork %s: could not emit its %s event", fork.roomid, action)
