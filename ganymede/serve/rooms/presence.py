"""Presence-only rooms: the clients connected to one name and the awareness relayed among them.

``AwarenessRoom`` relays JupyterLab's ``JupyterLab:globalAwareness``, and is what every
``DocumentRoom`` does besides holding its document.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable
from typing import Protocol

from ganymede.serve.rooms import protocol
from ganymede.serve.rooms.awareness import AwarenessLedger
from ganymede.serve.rooms.protocol import AwarenessEntry
from ganymede.serve.service import Service, detached_call_later

GLOBAL_AWARENESS_ROOM = "JupyterLab:globalAwareness"
"""The presence room every JupyterLab joins; its Collaboration panel lists who is in it."""
# An empty update: two zero counts (no structs, no deletions).
EMPTY_UPDATE = b"\x00\x00"
AWARENESS_TICK = 0.1
"""Seconds in which a room relays at most one awareness frame to each client: a class of a
hundred, each moving a cursor every two seconds, would otherwise send every client fifty frames
a second; what arrives within a tick goes out as one frame at its end."""


class Client(Protocol):
    """One connection to a room; ``send`` queues a frame without waiting for the network."""

    def send(self, frame: bytes) -> None: ...

    def close(self, code: int, reason: str) -> None: ...


class RoomHold:
    """A client of a room on the server's side (a run, an agent's or a kernel's edits, an
    extension's view) that listens to nothing: while it is in, the room stays open, and its
    document stays live (it is not packed away while the holder may be using it)."""

    def send(self, frame: bytes) -> None:
        """Frames for the clients are of no use to a holder."""

    def close(self, code: int, reason: str) -> None:
        """The room closing (server stop) ends the hold by itself."""


class AwarenessRoom(Service):
    """Relays awareness frames to every client, the sender included.

    The echo is on purpose: a y-websocket client that hears nothing for 30 s reconnects, and
    its own awareness coming back is what it hears when nobody else is around.

    A frame after a quiet tick (``AWARENESS_TICK``) goes out at once, as it came; those that
    follow within the tick wait for its end and go out together, one frame holding each user's
    latest entry, so a busy room costs its clients a frame a tick rather than one per message.

    ``closes_when_idle``: the manager closes the room a grace period after its last client
    leaves (a fork's room stays until its fork is deleted).
    """

    closes_when_idle = True

    def __init__(self, name: str, log: logging.Logger) -> None:
        self.name = name
        self.log = log
        self.clients: set[Client] = set()
        self._ledger = AwarenessLedger()
        self._presence_listeners: list[Callable[[bytes], None]] = []
        self._tick: asyncio.TimerHandle | None = None
        self._held: dict[int, AwarenessEntry] = {}  # by awareness client id, latest last
        self._held_frames: list[bytes] = []

    async def start(self) -> None:
        """Nothing to start for presence alone; document rooms start their autosave."""

    async def stop(self) -> None:
        """Close every client: the server is going away or nobody is left."""
        if self._tick is not None:
            self._tick.cancel()
            self._tick = None
        for client in list(self.clients):
            client.close(protocol.CloseCode.GOING_AWAY, "room closed")
        self.clients.clear()

    def join(self, client: Client) -> None:
        """Admit a client and show it who is already here."""
        self.clients.add(client)
        present = self._ledger.present()
        if present is not None:
            client.send(protocol.awareness_frame(present))

    def leave(self, client: Client) -> None:
        """Drop a client and tell the others its users are gone."""
        self.clients.discard(client)
        departures = self._ledger.forget(client)
        if departures is not None:
            entries = protocol.decode_awareness(departures)
            self._relay_awareness(protocol.awareness_frame(departures), entries)
            self._tell_listeners(departures)

    def presence(self) -> bytes | None:
        """An awareness payload with everyone present, or None when nobody is."""
        return self._ledger.present()

    def listen_to_presence(self, listener: Callable[[bytes], None]) -> None:
        """``listener`` hears every awareness payload the room relays from now on (a view of
        the room on the server keeps everyone's presence from them)."""
        self._presence_listeners.append(listener)

    def announce(self, payload: bytes, *, owner: Hashable | None = None) -> None:
        """Presence of the server's own (an extension or an agent writing in the room): kept for
        newcomers as a client's is, and relayed to every client. ``owner``: the server-side
        client it belongs to, whose leaving then announces it gone. FrameError if malformed."""
        entries = protocol.decode_awareness(payload)
        self._ledger.record(self if owner is None else owner, entries, pin=owner is not None)
        self._relay_awareness(protocol.awareness_frame(payload), entries)

    def _presence_moved(self) -> None:
        """A client's presence changed, not just renewed: a document room takes it as the sign
        of a use to come."""

    def present_client(self, client_id: int) -> bool:
        """Whether awareness client ``client_id`` is present here now."""
        return self._ledger.has(client_id)

    def broadcast(self, frame: bytes, *, skip: Client | None = None) -> None:
        for client in list(self.clients):
            if client is not skip:
                client.send(frame)

    def _relay_awareness(self, frame: bytes, entries: tuple[AwarenessEntry, ...]) -> None:
        """Send ``frame`` to every client now, or with the rest of this tick's at its end."""
        if self._tick is None:
            self.broadcast(frame)
            self._tick = detached_call_later(AWARENESS_TICK, self._end_tick)
            return
        self._held_frames.append(frame)
        for entry in entries:
            self._held.pop(entry.client_id, None)
            self._held[entry.client_id] = entry

    def _end_tick(self) -> None:
        """Relay what the tick held: a lone frame as it came, several as one."""
        self._tick = None
        if not self._held_frames:
            return
        if len(self._held_frames) == 1:
            frame = self._held_frames[0]
        else:
            frame = protocol.awareness_frame(protocol.encode_awareness(list(self._held.values())))
        entries = tuple(self._held.values())
        self._held_frames.clear()
        self._held.clear()
        self._relay_awareness(frame, entries)

    async def receive(self, client: Client, frame: bytes) -> None:
        """Act on one frame from ``client``; FrameError (nothing acted on) if it is malformed."""
        message = protocol.decode_frame(frame)
        if isinstance(message, protocol.AwarenessUpdate):
            if self._ledger.record(client, message.entries):
                self._presence_moved()
            self._relay_awareness(frame, message.entries)
            self._tell_listeners(message.payload)
        elif isinstance(message, protocol.AwarenessQuery):
            present = self._ledger.present()
            if present is not None:
                client.send(protocol.awareness_frame(present))
        else:
            await self.handle(client, message)

    async def handle(self, client: Client, message: protocol.Message) -> None:
        """Sync and save messages: a presence-only room has no document to sync or save.

        A y-websocket client still asks to sync; an empty answer marks it synced. Its updates
        go nowhere.
        """
        if isinstance(message, protocol.SyncStep1):
            client.send(protocol.sync_step2(EMPTY_UPDATE))
        elif isinstance(message, protocol.SaveRequest):
            client.send(protocol.save_reply(message.save_id, "skipped"))

    def _tell_listeners(self, payload: bytes) -> None:
        for listener in self._presence_listeners:
            listener(payload)
