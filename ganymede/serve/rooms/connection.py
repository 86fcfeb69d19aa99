"""One room client's connection: a bounded send queue, written a batch at a time, and keepalive.

The room never waits on the network: it puts frames in the client's ``Outbox``, which hands
them to the socket a batch at a time, the next once the last is flushed. A client that stops
reading falls behind; past the limits it is closed 1008 rather than letting its backlog grow
without bound. A close the room itself sends (4404, 1003, 1001) goes straight to the socket,
ahead of whatever is queued. No task is kept per client: a flush runs from the loop's callbacks
and the keepalive from a timer, which is what lets a class of a hundred stay small.

Keepalive is ours rather than tornado's: tornado cannot wait longer for a pong than between two
pings, and a client is only dropped after ``ping_timeout`` seconds without a word from it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
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
        # A list, not a deque: a deque's first block is some 600 bytes, kept by every idle
        # client of a hundred, and its queue is taken whole at each write anyway.
        self._frames: list[bytes] = []
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
        fresh = self._frames[self._taken :]
        self._taken = len(self._frames)
        return fresh

    def written(self, count: int) -> None:
        """The first ``count`` frames reached the network: they no longer count."""
        self.size -= sum(len(frame) for frame in self._frames[:count])
        del self._frames[:count]
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
    """What a room sends one client, written in order without holding the room up.

    Driven by callbacks and timers rather than tasks of its own: a classroom's hundred idle
    readers cost a timer each, not two suspended tasks with their frames and events.
    """

    def __init__(
        self, socket: Socket, limits: ConnectionLimits, *, name: str, log: logging.Logger
    ) -> None:
        self.name = name
        self._socket = socket
        self._limits = limits
        self._log = log
        self._backlog = Backlog(limits.max_messages, limits.max_bytes)
        self._loop = asyncio.get_running_loop()
        self._flush_due: asyncio.Handle | None = None
        self._writing: asyncio.Future[None] | None = None
        self._write_deadline: asyncio.TimerHandle | None = None
        self._last_heard = self._loop.time()
        self._next_ping = self._last_heard + limits.ping_interval
        self._keepalive: asyncio.TimerHandle | None = None
        self._open = True
        if limits.ping_interval > 0:
            self._check_in_later()

    def send(self, frame: bytes) -> None:
        """Queue ``frame``; a client already past the limits is closed 1008 instead.

        The write waits for the loop's next turn, so every frame a room broadcasts in one
        turn goes out in one write.
        """
        if not self._open:
            return
        if self._backlog.push(frame):
            if self._writing is None and self._flush_due is None:
                self._flush_due = self._loop.call_soon(self._flush)
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
        for timer in (self._flush_due, self._write_deadline, self._keepalive):
            if timer is not None:
                timer.cancel()
        self._flush_due = self._write_deadline = self._keepalive = None

    def _flush(self) -> None:
        """Hand the socket every queued frame at once; the next batch waits for its flush.

        One write and one wait per batch rather than per frame: a room broadcasting a burst
        must not outrun a client that reads as fast as the network allows, and a hundred
        clients cost a hundred writes to the network per broadcast, not one per frame each.
        """
        self._flush_due = None
        frames = self._backlog.take()
        if not self._open or not frames:
            return
        try:
            written = asyncio.ensure_future(self._socket.write_frames(frames))
        except WebSocketClosedError:
            self.stop()
            return
        self._writing = written
        deadline = write_deadline(sum(len(frame) for frame in frames))
        self._write_deadline = self._loop.call_later(deadline, self._drop, "a write took too long")
        written.add_done_callback(lambda done: self._flushed(done, len(frames)))

    def _flushed(self, written: asyncio.Future[None], count: int) -> None:
        """A write finished; one that failed means the socket closed under it."""
        # Asked before anything else: asking takes a failed write's error, which asyncio
        # would otherwise report unread, stopped or not.
        failed = written.cancelled() or written.exception() is not None
        if not self._open:
            return  # stopped meanwhile: the backlog was cleared under the write
        self._writing = None
        if self._write_deadline is not None:
            self._write_deadline.cancel()
            self._write_deadline = None
        if failed:
            self.stop()
            return
        self._backlog.written(count)
        if len(self._backlog):
            self._flush()

    def _check_in_later(self) -> None:
        wake = min(self._next_ping, self._last_heard + self._limits.ping_timeout)
        self._keepalive = self._loop.call_at(wake, self._check_in)

    def _check_in(self) -> None:
        """Ping every ``ping_interval``; drop the client once silent for ``ping_timeout``.

        A write still in progress counts as hearing from the client: it is reading, slowly,
        and its pong waits behind the frame it is reading.
        """
        now = self._loop.time()
        if self._writing is not None:
            self._last_heard = now
        if now >= self._last_heard + self._limits.ping_timeout:
            self._drop(f"silent for {now - self._last_heard:.1f} s")
            return
        if now >= self._next_ping:
            with contextlib.suppress(WebSocketClosedError):
                self._socket.ping()
            self._next_ping = now + self._limits.ping_interval
        self._check_in_later()

    def _drop(self, why: str) -> None:
        """Close a client that is gone without waiting for it to answer the close."""
        self._log.warning("room %s: dropping a client: %s", self.name, why)
        self.stop()
        self._socket.abort(GOING_AWAY, why)
