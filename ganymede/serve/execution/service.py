"""Runs of cells into rooms: every check made before anything changes, then one batch queued.

``Executions.submit`` finds the kernel and the room, waits (up to 10 s) for the request this one
must follow, checks that every cell exists and still has the source the caller hashed, and only
then clears the cells, marks them running and queues them on the kernel. A refused request
changes nothing in the room.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from jupyter_server.gateway.managers import GatewayKernelManager
from jupyter_ydoc import YNotebook

from ganymede.agent import Author
from ganymede.errors import (
    CellNotFound,
    KernelDied,
    KernelNotFound,
    RequestNotQueued,
    SourceMismatch,
    UsageError,
)
from ganymede.notebook.hashing import source_hash
from ganymede.serve.execution.batches import Batch, CellRun, KernelQueue
from ganymede.serve.execution.gateway_client import GatewayKernelConnection
from ganymede.serve.execution.kernel_client import KernelConnection, KernelLine, KernelProcess
from ganymede.serve.execution.requests import CellRequest, ExecuteRequest
from ganymede.serve.execution.ydoc_outputs import find_cell, start_running
from ganymede.serve.kernels.manager import HostKernelManager
from ganymede.serve.rooms import RoomManager
from ganymede.serve.rooms.presence import RoomHold
from ganymede.serve.rooms.room import DocumentRoom

PREVIOUS_REQUEST_TIMEOUT = 10.0

RanBy = Callable[[DocumentRoom], Author]
CONNECT_TIMEOUT = 60.0
KERNEL_ACTIONS_EVENT = "https://events.jupyter.org/jupyter_server/kernel_actions/v1"
"""What jupyter_server emits after it starts, restarts, interrupts or shuts down a kernel."""


class Executions:
    """The execute endpoint's work: one ordered queue of batches per kernel."""

    def __init__(self, kernel_manager: Any, rooms: RoomManager, log: logging.Logger) -> None:
        self.kernel_manager = kernel_manager
        self.rooms = rooms
        self.log = log
        self._queues: dict[str, KernelQueue] = {}

    async def submit(
        self, kernel_id: str, request: ExecuteRequest, ran_by: RanBy | None = None
    ) -> Batch:
        """Queue the request's cells as one batch on the kernel, or raise and change nothing.

        ``ran_by`` names who runs the cells, for the room's attribution (an agent, or the
        person behind the request), once the room is known.

        KernelNotFound, NotebookNotFound or CellNotFound for what does not exist; KernelDied
        for a kernel that is not running; UsageError for a document that is not a notebook,
        a read-only room (another server owns the file) or a cell that is not code;
        RequestNotQueued when the previous request named never came; SourceMismatch for the
        first cell whose source changed.
        """
        await self._forget_gone_kernels()
        kernel = self._kernel(kernel_id)
        if not await kernel.is_alive():
            raise KernelDied(f"kernel {kernel_id} is not running")
        hold = RoomHold()
        room = await self.rooms.join(request.document_id, hold)
        try:
            if not isinstance(room, DocumentRoom) or not isinstance(
                room.document.shared, YNotebook
            ):
                raise UsageError(f"{request.document_id} is not a notebook")
            refusal = room.write_refusal()
            if refusal is not None:
                raise UsageError(f"{request.document_id} is read-only here: {refusal}")
            queue = self._queue(kernel_id, kernel)
            previous = request.previous_request_id
            if previous is not None and not await queue.wait_until_queued(
                previous, PREVIOUS_REQUEST_TIMEOUT
            ):
                raise RequestNotQueued(previous)
            notebook = room.document.shared
            runs = checked_cells(notebook, request.cells)
            with notebook.ydoc.transaction():
                for run in runs:
                    ycell = find_cell(notebook, run.cell_id)
                    assert ycell is not None  # just checked, with no await since
                    start_running(ycell)
                    room.trust_outputs(run.cell_id)  # outputs of runs on this server are trusted
                    queue.displays.forget_cell(room.document, run.cell_id)
            if ran_by is not None and room.attribution is not None:
                author = ran_by(room)
                for run in runs:
                    room.attribution.record_run(run.cell_id, author)
        except BaseException:
            self.rooms.leave(room, hold)
            raise
        batch = Batch(
            room.document,
            runs,
            request.request_id,
            from_lab=request.until_ran,
            release=lambda: self.rooms.leave(room, hold),
        )
        await queue.put(batch)
        return batch

    async def on_kernel_action(self, logger: Any, schema_id: str, data: Mapping[str, Any]) -> None:
        """jupyter_server's ``kernel_actions`` event listener (called with these keywords): a
        restart it made, of a local kernel or a gateway's, outdates that kernel's connection."""
        if data.get("action") != "restart" or data.get("status") != "success":
            return
        queue = self._queues.get(str(data.get("kernel_id")))
        if queue is not None:
            self.log.info(
                "execute: kernel %s restarted: its next batch connects anew", data["kernel_id"]
            )
            queue.kernel_restarted()

    async def stop(self) -> None:
        """Abandon every batch (the server is stopping); rooms then save what ran."""
        queues = list(self._queues.values())
        self._queues.clear()
        for queue in queues:
            await queue.stop()

    def _kernel(self, kernel_id: str) -> KernelProcess:
        try:
            kernel: KernelProcess = self.kernel_manager.get_kernel(kernel_id)
        except KeyError:
            raise KernelNotFound(kernel_id) from None
        return kernel

    def _queue(self, kernel_id: str, kernel: KernelProcess) -> KernelQueue:
        queue = self._queues.get(kernel_id)
        if queue is None:

            async def connect() -> KernelLine:
                if isinstance(kernel, GatewayKernelManager):
                    return await GatewayKernelConnection.open(kernel, self.log, CONNECT_TIMEOUT)
                watch = None
                if isinstance(self.kernel_manager, HostKernelManager):
                    await self.kernel_manager.host_settled(kernel_id)
                    watch = self.kernel_manager.stream_watch(kernel_id)
                return await KernelConnection.open(kernel, self.log, CONNECT_TIMEOUT, watch)

            queue = self._queues[kernel_id] = KernelQueue(
                connect, self.rooms.kernel_outputs, self.log
            )
        return queue

    async def _forget_gone_kernels(self) -> None:
        """Close the connections to kernels that were shut down since the last request."""
        for kernel_id in [k for k in self._queues if k not in self.kernel_manager]:
            await self._queues.pop(kernel_id).stop()


def checked_cells(notebook: YNotebook, cells: list[CellRequest]) -> list[CellRun]:
    """The cells to run with their sources, once every cell is found and every hash matches.

    All cells are looked up before any hash is compared, and nothing is changed: a refusal
    leaves the room exactly as it was.
    """
    found = []
    for cell in cells:
        ycell = find_cell(notebook, cell.cell_id)
        if ycell is None:
            raise CellNotFound(cell.cell_id)
        if ycell.get("cell_type") != "code":
            raise UsageError(f"cell {cell.cell_id} is not a code cell")
        found.append((cell, str(ycell.get("source", ""))))
    for cell, source in found:
        if cell.source_hash is not None and source_hash(source) != cell.source_hash:
            raise SourceMismatch(cell.cell_id)
    return [CellRun(cell.cell_id, source) for cell, source in found]
