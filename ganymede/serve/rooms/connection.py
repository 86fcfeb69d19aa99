"""One room client's connection: a bounded send queue, one writer draining it, and keepalive.

The room never waits on the network: it puts frames in the client's ``Outbox``, whose writer
hands them to the socket one at a time. A client that stops reading falls behind; past the
limits it is closed 1008 rather than letting its backlog grow without bound. A close the room
itself sends (4404, 1003, 1001) goes straight to the socket, ahead of whatever is queued.

Keepalive is ours rather than tornado's: tornado cannot wait longer for a pong than between two
pings, and a client is only dropped after ``ping_timeout`` seconds without a word from it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections import deque
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Protocol

from tornado.websocket import WebSocketClosedError

from ganymede.config import ServeConfig
from ganymede.serve import metrics

POLICY_VIOLATION = 1008
GOING_AWAY = 1001
# A write may take this long, plus a second per 64 KiB, before the client counts as gone.
WRITE_GRACE = 30.0
WRITE_BYTES_PER_SECOND = 64 * 1024


def write_deadline(size: int) -> float:
    """Seconds a write of ``size`` bytes may take: a slow link still gets its big frames."""
    return WRITE_GRACE + size / WRITE_BYTES_PER_SECOND


@dataclass(frozen=True)
class ConnectionLimits:
    """How far behind a client may fall, and how long it may stay silent (0: no pings)."""

    max_messages: int
    max_bytes: int
    ping_interval: float
    ping_timeout: float

    @classmethod
    def of(cls, serve: ServeConfig) -> ConnectionLimits:
        return cls(
            max_messages=serve.client_queue_messages,
            max_bytes=serve.max_body_size,
            ping_interval=serve.ping_interval,
            ping_timeout=serve.ping_timeout,
        )


class Backlog:
    """Frames queued for a client and frames handed to its socket but not yet flushed.

    Both count against the limits: a frame sitting in the socket's buffer is no closer to the
    client than one still queued here.
    """

    def __init__(self, max_messages: int, max_bytes: int) -> None:
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        self.size = 0
        self._frames: deque[bytes] = deque()
        self._taken = 0

    def __len__(self) -> int:
        return len(self._frames)

    def push(self, frame: bytes) -> bool:
        """Queue ``frame``; False (nothing queued) if it would put the client past a limit."""
        if len(self._frames) >= self.max_messages or self.size + len(frame) > self.max_bytes:
            return False
        self._frames.append(frame)
        self.size += len(frame)
        return True

    def take(self) -> list[bytes]:
        """The frames not yet handed to the socket, in order; they count until ``written``."""
        fresh = list(itertools.islice(self._frames, self._taken, None))
        self._taken = len(self._frames)
        return fresh

    def written(self, count: int) -> None:
        """The first ``count`` frames reached the network: they no longer count."""
        for _ in range(count):
            self.size -= len(self._frames.popleft())
        self._taken -= count

    def clear(self) -> None:
        self._frames.clear()
        self.size = 0
        self._taken = 0


class Socket(Protocol):
    """The websocket under an ``Outbox``; writes raise WebSocketClosedError once it closed."""

    def write_frames(self, frames: list[bytes]) -> Awaitable[None]:
        """Send each of ``frames`` as a binary message, in order; done once all are flushed."""

    def ping(self) -> None: ...

    def close(self, code: int | None = None, reason: str | None = None) -> None: ...

    def abort(self, code: int, reason: str) -> None:
        """Send a close frame and tear the connection down without waiting for an answer."""


class Outbox:
    """What a room sends one client, written in order without holding the room up."""

    def __init__(
        self, socket: Socket, limits: ConnectionLimits, *, name: str, log: logging.Logger
    ) -> None:
        self.name = name
        self._socket = socket
        self._limits = limits
        self._log = log
        self._backlog = Backlog(limits.max_messages, limits.max_bytes)
        self._loop = asyncio.get_running_loop()
        self._queued = asyncio.Event()
        self._writing = False
        self._last_heard = self._loop.time()
        self._open = True
        self._tasks = [asyncio.create_task(self._write_backlog())]
        if limits.ping_interval > 0:
            self._tasks.append(asyncio.create_task(self._keep_alive()))

    def send(self, frame: bytes) -> None:
        """Queue ``frame``; a client already past the limits is closed 1008 instead."""
        if not self._open:
            return
        if self._backlog.push(frame):
            self._queued.set()
            return
        self._log.warning(
            "room %s: closing a client %d messages (%d bytes) behind",
            self.name,
            len(self._backlog),
            self._backlog.size,
        )
        self.stop()
        self._socket.close(POLICY_VIOLATION, "too far behind")
        metrics.CLIENTS_TOO_FAR_BEHIND.inc()

    def heard(self) -> None:
        """The client said something (a frame, a pong): it is still there."""
        self._last_heard = self._loop.time()

    def stop(self) -> None:
        """Drop what is queued and stop writing and pinging; the socket is closing."""
        self._open = False
        self._backlog.clear()
        current = asyncio.current_task()
        for task in self._tasks:
            if task is not current:
                task.cancel()

    async def _write_backlog(self) -> None:
        """Hand the socket every queued frame at once, then wait for them to be flushed.

        One write and one wait per batch rather than per frame: a room broadcasting a burst
        must not outrun a client that reads as fast as the network allows, and a hundred
        clients cost a hundred writes to the network per broadcast, not one per frame each.
        """
        while True:
            await self._queued.wait()
            self._queued.clear()
            frames = self._backlog.take()
            if not frames:
                continue
            self._writing = True
            try:
                # Shielded: a write cancelled halfway would leave tornado's stream confused;
                # one that can no longer finish fails once the socket closes, and is collected.
                written = asyncio.ensure_future(self._socket.write_frames(frames))
                written.add_done_callback(_collect)
                deadline = write_deadline(sum(len(frame) for frame in frames))
                await asyncio.wait_for(asyncio.shield(written), deadline)
            except WebSocketClosedError:
                return
            except TimeoutError:
                self._drop("a write took too long")
                return
            finally:
                self._writing = False
            if not self._open:
                # Stopped while the write finished: the backlog was cleared under it, and this
                # task's cancel lands only at its next wait.
                return
            self._backlog.written(len(frames))

    async def _keep_alive(self) -> None:
        """Ping every ``ping_interval``; drop the client once silent for ``ping_timeout``.

        A write still in progress counts as hearing from the client: it is reading, slowly,
        and its pong waits behind the frame it is reading.
        """
        interval, timeout = self._limits.ping_interval, self._limits.ping_timeout
        next_ping = self._loop.time() + interval
        while True:
            wake = min(next_ping, self._last_heard + timeout)
            await asyncio.sleep(max(0.0, wake - self._loop.time()))
            now = self._loop.time()
            if self._writing:
                self._last_heard = now
            if now >= self._last_heard + timeout:
                self._drop(f"silent for {now - self._last_heard:.1f} s")
                return
            if now >= next_ping:
                with contextlib.suppress(WebSocketClosedError):
                    self._socket.ping()
                next_ping = now + interval

    def _drop(self, why: str) -> None:
        """Close a client that is gone without waiting for it to answer the close."""
        self._log.warning("room %s: dropping a client: %s", self.name, why)
        self.stop()
        self._socket.abort(GOING_AWAY, why)


def _collect(written: asyncio.Future[None]) -> None:
    """Take a failed write's error (the socket closed under it) so nothing reports it unread."""
    if not written.cancelled():
        written.exception()
