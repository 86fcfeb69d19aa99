"""Batches of cells run on one kernel, one batch after another, in the order they were queued.

A batch is what one execute request asked for: cells of one room, checked and cleared when it
was queued. Its cells run in order; the first that raises (or meets a dead kernel) stops the
rest, whose state goes back to idle. The room is held open by the batch until it ends, so
outputs keep arriving and autosave keeps writing them even when no client is connected.

JupyterLab's executor sends one request per cell, all of a selection at once ("Run All" is a
``Promise.all``), each on its own connection, so nothing says in which order they arrive. Its
batches waiting together for one notebook therefore run in the notebook's order, and one that
fails aborts every one of them still waiting on the kernel, as a kernel asked with
``stop_on_error`` aborts the requests queued behind an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from jupyter_ydoc import YNotebook

from ganymede.errors import KernelDied
from ganymede.serve.execution.kernel_client import KernelLine
from ganymede.serve.execution.ydoc_outputs import (
    IDLE,
    IopubMessage,
    RoomCellOutputs,
    RoomDisplays,
    find_cell,
)
from ganymede.serve.rooms.document import RoomDocument
from ganymede.serve.service import detached_task
from ganymede.trust.outputs import KernelOutputs

REMEMBERED_REQUESTS = 10_000
"""Request ids a kernel remembers having queued, for requests naming one as their previous."""


@dataclass(frozen=True)
class CellRun:
    """A cell to run, with the source that was checked when its batch was queued."""

    cell_id: str
    source: str


@dataclass
class Batch:
    """Cells of one room run as one unit; ``done`` is set once it ended, however it ended."""

    document: RoomDocument
    """The room's, held open (and its notebook live) until ``release``."""
    cells: list[CellRun]
    request_id: str | None = None
    release: Callable[[], None] = lambda: None
    """Lets go of the room the batch held open."""
    from_lab: bool = False
    """One cell sent by JupyterLab's executor: ordered by position, aborted by a failure."""
    failure: dict[str, Any] | None = None
    """The error of the cell that stopped the batch (``ename``, ``evalue``, ``traceback``)."""
    done: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def notebook(self) -> YNotebook:
        return self.document.notebook


ConnectionOpener = Callable[[], Awaitable[KernelLine]]


async def run_batch(
    batch: Batch, connection: KernelLine, displays: RoomDisplays, seen: KernelOutputs
) -> None:
    """Run the batch's cells in order until one fails; every cell ends idle. The outputs are
    recorded in ``seen`` too, so a client moving or copying them keeps them trusted."""
    remaining = list(batch.cells)
    while remaining and batch.failure is None:
        cell = remaining.pop(0)
        outputs = RoomCellOutputs(batch.document, cell.cell_id, displays)
        if not cell.source.strip():
            outputs.finish(None)  # JupyterLab sends no empty cell to the kernel
            continue

        def on_iopub(messages: Sequence[IopubMessage], outputs: RoomCellOutputs = outputs) -> None:
            for msg_type, content in messages:
                seen.saw(msg_type, content)
            outputs.handle(messages)

        try:
            reply = await connection.execute(cell.source, on_iopub)
        except KernelDied as error:
            batch.failure = {"ename": "KernelDied", "evalue": str(error), "traceback": []}
            outputs.finish(None)
            break
        outputs.finish(reply.get("execution_count"))
        if reply.get("status") != "ok":
            batch.failure = {
                "ename": reply.get("ename", "CellNotRun"),
                "evalue": reply.get("evalue", f"the kernel answered {reply.get('status')}"),
                "traceback": list(reply.get("traceback", [])),
            }
    settle_idle(batch.notebook, remaining)


def next_batch(waiting: deque[Batch]) -> Batch:
    """Take the batch to run next: the oldest, unless it is one of JupyterLab's, then the one
    earliest in the notebook among JupyterLab's batches for that notebook waiting right behind.
    """
    head = waiting[0]
    together = []
    for batch in waiting:
        if not (head.from_lab and batch.from_lab and batch.document is head.document):
            break
        together.append(batch)
    chosen = head
    if len(together) > 1:
        positions = {ycell.get("id"): index for index, ycell in enumerate(head.notebook.ycells)}
        chosen = min(together, key=lambda batch: positions.get(batch.cells[0].cell_id, -1))
    waiting.remove(chosen)
    return chosen


def settle_idle(notebook: YNotebook, cells: list[CellRun]) -> None:
    """Cells that will not run after all go back to idle (their outputs stay cleared)."""
    with notebook.ydoc.transaction():
        for cell in cells:
            ycell = find_cell(notebook, cell.cell_id)
            if ycell is not None:
                ycell["execution_state"] = IDLE


class KernelQueue:
    """The batches queued on one kernel and the worker that runs them, one at a time.

    The worker opens the server's connection to the kernel for the first batch and keeps it
    (and the displays shown on this kernel) for the next ones, until the kernel restarts.
    """

    def __init__(
        self, open_connection: ConnectionOpener, seen: KernelOutputs, log: logging.Logger
    ) -> None:
        """``seen``: where the rich outputs the kernel sends are recorded."""
        self._open_connection = open_connection
        self._seen = seen
        self.log = log
        self.displays = RoomDisplays()
        self._waiting: deque[Batch] = deque()
        self._arrived = asyncio.Event()
        self._queued: OrderedDict[str, None] = OrderedDict()
        self._queued_changed = asyncio.Condition()
        self._connection: KernelLine | None = None
        self._worker = detached_task(self._work())

    async def wait_until_queued(self, request_id: str, timeout: float) -> bool:
        """Whether the request ``request_id`` is (or within ``timeout`` s becomes) queued here."""
        async with self._queued_changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._queued_changed.wait_for(lambda: request_id in self._queued), timeout
                )
            return request_id in self._queued

    async def put(self, batch: Batch) -> None:
        """Queue ``batch`` (before this first awaits, so batches keep the callers' order)."""
        self._waiting.append(batch)
        self._arrived.set()
        if batch.request_id is None:
            return
        self._queued[batch.request_id] = None
        while len(self._queued) > REMEMBERED_REQUESTS:
            self._queued.popitem(last=False)
        async with self._queued_changed:
            self._queued_changed.notify_all()

    def kernel_restarted(self) -> None:
        """The batch running ends KernelDied; the next one connects to the new kernel."""
        if self._connection is not None:
            self._connection.outdate()

    async def stop(self) -> None:
        """Abandon the batch running and those queued (the server is stopping)."""
        self._worker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._worker
        while self._waiting:
            self._end(self._waiting.popleft())
        if self._connection is not None:
            await self._connection.close()
            self._connection = None

    async def _work(self) -> None:
        while True:
            while not self._waiting:
                self._arrived.clear()
                await self._arrived.wait()
            batch = next_batch(self._waiting)
            try:
                if self._connection is not None and not self._connection.is_current:
                    await self._connection.close()
                    self._connection = None
                if self._connection is None:
                    started = time.monotonic()
                    self._connection = await self._open_connection()
                    waited = time.monotonic() - started
                    self.log.info("execute: connected to the kernel in %.2f s", waited)
                await run_batch(batch, self._connection, self.displays, self._seen)
            except KernelDied as error:  # the connection could not be opened
                batch.failure = {"ename": "KernelDied", "evalue": str(error), "traceback": []}
                settle_idle(batch.notebook, batch.cells)
            except Exception:
                self.log.exception("execute: a batch failed")
                batch.failure = {"ename": "ServerError", "evalue": "see the log", "traceback": []}
                settle_idle(batch.notebook, batch.cells)
            finally:
                self._end(batch)
            if batch.failure is not None and batch.from_lab:
                self._abort_waiting_lab_batches()

    def _abort_waiting_lab_batches(self) -> None:
        """JupyterLab's cells still waiting will not run: a cell sent with them raised."""
        aborted = [batch for batch in self._waiting if batch.from_lab]
        for batch in aborted:
            self._waiting.remove(batch)
            batch.failure = {
                "ename": "CellNotRun",
                "evalue": "not run: a cell run before it on this kernel failed",
                "traceback": [],
            }
            settle_idle(batch.notebook, batch.cells)
            self._end(batch)

    @staticmethod
    def _end(batch: Batch) -> None:
        batch.done.set()
        batch.release()
