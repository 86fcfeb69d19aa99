"""Recording what rooms apply into the history store, off the hot path.

A room hands each update to its ``RoomHistory`` as the transaction commits: that is a list
append, nothing more. Every ``FLUSH_INTERVAL`` seconds the recorder merges what piled up into
points (one per run of updates by the same author, of the same kind) and writes them from a
worker thread, so an edit never waits on SQLite. ``flush`` writes at once, for readers that must
see the latest point (the timeline).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from pycrdt import merge_updates

from ganymede.history import HistoryStore, NewPoint, PointKind
from ganymede.serve.service import Service, detached_task

FLUSH_INTERVAL = 1.0


@dataclass
class _Pending:
    file_id: str
    epoch: str
    who: str
    kind: PointKind
    at: float
    updates: list[bytes] = field(default_factory=list)

    def point(self) -> NewPoint:
        data = self.updates[0] if len(self.updates) == 1 else merge_updates(*self.updates)
        return NewPoint(self.file_id, self.epoch, self.at, self.who, self.kind, data)


class RoomHistory:
    """One room instance's line in the history: an epoch of the document's points."""

    def __init__(self, recorder: HistoryRecorder, file_id: str, epoch: str) -> None:
        self.file_id = file_id
        self.epoch = epoch
        self._recorder = recorder

    def record(self, update: bytes, who: str, kind: PointKind) -> None:
        self._recorder.record(self, update, who, kind)


class HistoryRecorder(Service):
    """Batches every room's updates into points and writes them to ``store``."""

    def __init__(
        self,
        store: HistoryStore,
        *,
        flush_interval: float = FLUSH_INTERVAL,
        log: logging.Logger | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self._flush_interval = flush_interval
        self._log = log if log is not None else logging.getLogger(__name__)
        self._clock = clock
        self._pending: list[_Pending] = []
        self._last: dict[str, _Pending] = {}  # by epoch: where the next update may join
        self._queued = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._writing = asyncio.Lock()

    def begin(self, file_id: str, state: bytes, who: str = "file") -> RoomHistory:
        """A room opened on ``file_id`` with the document ``state`` (its load): a new epoch."""
        history = RoomHistory(self, file_id, uuid.uuid4().hex)
        self.record(history, state, who, PointKind.LOAD)
        return history

    def record(self, history: RoomHistory, update: bytes, who: str, kind: PointKind) -> None:
        now = self._clock()
        last = self._last.get(history.epoch)
        if last is not None and (kind is PointKind.STATE or (last.who, last.kind) == (who, kind)):
            last.updates.append(update)
            if kind is not PointKind.STATE:
                last.at = now
        else:
            pending = _Pending(history.file_id, history.epoch, who, kind, now, [update])
            self._pending.append(pending)
            # A load takes no later edits: it is the document as its file said.
            if kind is not PointKind.LOAD:
                self._last[history.epoch] = pending
            else:
                self._last.pop(history.epoch, None)
        if self._task is None:
            self._task = detached_task(self._run())
        self._queued.set()

    async def flush(self) -> None:
        """Write every point recorded so far (in order, whoever else is flushing)."""
        async with self._writing:
            pending, self._pending, self._last = self._pending, [], {}
            if not pending:
                return
            try:
                await asyncio.to_thread(self._write, pending)
            except (sqlite3.Error, OSError, ValueError) as error:
                self._log.error("history: %d points not recorded: %s", len(pending), error)

    def _write(self, pending: list[_Pending]) -> None:
        """In a worker thread: merging each point's updates is work the loop need not do."""
        self.store.append([p.point() for p in pending])

    async def stop(self) -> None:
        """Write what is left; the store stays open for readers."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.flush()

    async def _run(self) -> None:
        while True:
            await self._queued.wait()
            await asyncio.sleep(self._flush_interval)
            self._queued.clear()
            await self.flush()
