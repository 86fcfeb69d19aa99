"""The server's kernel manager: every local kernel it starts gets a host comm driver.

A driver starts once the kernel is ready and before ``start_kernel`` returns, so a notebook's
first cell finds it listening. After a restart (the REST restart, or the automatic one after a
kernel died) it reconnects in the background: a restart answers as jupyter_server's does, once
the new kernel is launched, while the driver waits for that kernel to boot (most of a restart);
a cell calling ``host()`` before the driver is connected gets the driver's offer once it is
(``ganymede.kernel.client``). The driver stops before the kernel is shut down. Activity tracking
(``execution_state``, ``last_activity``) skips host traffic, so a cell waiting on a host call
still reads busy. Kernels behind a gateway use the gateway's own manager, not this one.

Each kernel is started with ``QUIET_START`` in its environment, unless the environment or the
kernelspec sets those variables, and its activity subscription also feeds a ``StreamWatch``:
the execute endpoint's first cell on a kernel waits only for the stream flush timers the kernel
armed and has not fired yet (``ganymede.core.stream_flushes``), which a long-running kernel has
none of.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable
from typing import Any

from jupyter_client.session import Session
from jupyter_server._tz import utcnow
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager

from ganymede.core.stream_flushes import quiet_start
from ganymede.grant import Grants
from ganymede.host.api import Caller, Responder
from ganymede.host.driver import HostDrivers
from ganymede.host.iopub_filter import CONTENT_NEEDED, is_host_traffic
from ganymede.serve.kernels.stream_watch import StreamWatch

ATTACH_WAIT = 10.0
"""Seconds ``start_kernel`` waits for the host comm before returning anyway (the driver
carries on in the background)."""

CallerOf = Callable[[str], Awaitable[Caller]]


class HostKernelManager(AsyncMappingKernelManager):
    """jupyter_server's kernel manager, attaching a host driver to each kernel it starts.

    ``host_drivers`` and ``caller_of`` are set by the server extension; until then (or when
    the extension has no responder) kernels run without a host comm.
    """

    host_drivers: HostDrivers | None = None
    caller_of: CallerOf | None = None

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._host_tasks: dict[str, set[asyncio.Future[None]]] = {}
        """Each kernel's driver work still under way (an attach, a reconnection)."""
        self._stream_watches: dict[str, StreamWatch] = {}

    def stream_watch(self, kernel_id: str) -> StreamWatch | None:
        """The kernel's watch, once its activity is watched."""
        return self._stream_watches.get(kernel_id)

    async def start_kernel(  # type: ignore[override]
        self, *, kernel_id: str | None = None, path: str | None = None, **kwargs: Any
    ) -> str:
        is_new = kernel_id is None or kernel_id not in self
        if is_new:
            # Under the environment given (a session's is the server's with its path; without
            # one, the provisioner takes the server's), and under the kernelspec's env, which
            # the provisioner applies last.
            env = kwargs.get("env")
            kwargs["env"] = quiet_start(os.environ if env is None else env)
        started: str = await super().start_kernel(kernel_id=kernel_id, path=path, **kwargs)
        if is_new and self.host_drivers is not None:
            await self._settle(started, self._attach(started))
        return started

    async def restart_kernel(self, kernel_id: str, now: bool = False) -> Any:  # type: ignore[override]
        """Restart, and reconnect the driver in the background: waiting for it here would hold
        the answer until the new kernel has booted (0.35-0.45 s of a 0.6 s restart)."""
        answered = await super().restart_kernel(kernel_id, now=now)
        if self.host_drivers is not None:
            self._in_background(kernel_id, self.host_drivers.restarted(kernel_id))
        return answered

    async def shutdown_kernel(  # type: ignore[override]
        self, kernel_id: str, now: bool = False, restart: bool = False
    ) -> None:
        if self.host_drivers is not None and not restart:
            await self.host_drivers.detach(kernel_id)
        await super().shutdown_kernel(kernel_id, now=now, restart=restart)
        if not restart:
            self._stream_watches.pop(kernel_id, None)

    async def _attach(self, kernel_id: str) -> None:
        drivers, caller_of = self.host_drivers, self.caller_of
        if drivers is None or caller_of is None:
            return
        kernel = self.get_kernel(kernel_id)
        ready = getattr(kernel, "ready", None)
        if ready is not None:
            await (ready if isinstance(ready, asyncio.Future) else asyncio.wrap_future(ready))

        async def caller() -> Caller:
            return await caller_of(kernel_id)

        def restarted_on_its_own() -> None:
            self._in_background(kernel_id, drivers.restarted(kernel_id))

        self.add_restart_callback(kernel_id, restarted_on_its_own, "restart")
        await drivers.attach(kernel_id, kernel, caller)

    async def host_settled(self, kernel_id: str) -> None:
        """Return once the kernel's driver is done (re)connecting, within ``ATTACH_WAIT``.

        Its requests on control (after each, the kernel flushes stdout, then stderr) and its
        offer of the comm (whose refusal writes a line on the kernel's stderr) would otherwise
        come while the first cell after a restart runs, and could publish that cell's stderr
        ahead of its stdout; a stream they write before is waited out by the ``StreamWatch``.
        """
        pending = self._host_tasks.get(kernel_id)
        if pending:
            with contextlib.suppress(TimeoutError):
                done = asyncio.gather(*pending, return_exceptions=True)
                await asyncio.wait_for(asyncio.shield(done), ATTACH_WAIT)

    def _in_background(self, kernel_id: str, work: Awaitable[None]) -> asyncio.Future[None]:
        task = asyncio.ensure_future(work)
        pending = self._host_tasks.setdefault(kernel_id, set())
        pending.add(task)

        def finished(task: asyncio.Future[None]) -> None:
            pending.discard(task)
            if not pending and self._host_tasks.get(kernel_id) is pending:
                del self._host_tasks[kernel_id]

        task.add_done_callback(finished)
        return task

    async def _settle(self, kernel_id: str, work: Awaitable[None]) -> None:
        """Wait for the driver, within reason: a slow kernel must not hold up the REST call."""
        task = self._in_background(kernel_id, work)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), ATTACH_WAIT)

    def start_watching_activity(self, kernel_id: str) -> None:
        """Track activity as jupyter_server does, except for messages that are host traffic,
        and let the kernel's ``StreamWatch`` hear every message, host traffic included.

        The status busy/idle around a host reply would otherwise set ``execution_state`` idle
        while the calling cell still runs.
        """
        kernel = self._kernels[kernel_id]
        kernel.reason = ""
        kernel.last_activity = utcnow()
        kernel._activity_stream = kernel.connect_iopub()
        session = Session(config=kernel.session.config, key=kernel.session.key)
        watch = self._stream_watches.setdefault(kernel_id, StreamWatch())

        def record(frames: list[Any]) -> None:
            _, parts = session.feed_identities(frames)
            message = session.deserialize(parts, content=False)
            msg_type = message["header"]["msg_type"]
            if msg_type == "status":
                message["content"] = session.unpack(message["content"])
            watch.hear(message, asyncio.get_running_loop().time())
            parent = message.get("parent_header") or {}
            drivers = self.host_drivers
            traffic = None if drivers is None else drivers.traffic(kernel_id)
            if traffic is not None:
                content = session.unpack(message["content"]) if msg_type in CONTENT_NEEDED else {}
                if is_host_traffic(msg_type, parent.get("msg_id"), content, traffic):
                    return
            self._note_activity(kernel, msg_type, parent.get("msg_type"), message)

        kernel._activity_stream.on_recv(record)

    def _note_activity(
        self,
        kernel: Any,
        msg_type: str,
        parent_type: str | None,
        message: dict[str, Any],
    ) -> None:
        tracked_parent = self.track_message_type(parent_type)
        if self.track_message_type(msg_type) or tracked_parent or kernel.execution_state == "busy":
            self.last_kernel_activity = kernel.last_activity = utcnow()
        if msg_type != "status":
            return
        state = message["content"]["execution_state"]
        if tracked_parent:
            kernel.execution_state = state
        elif kernel.execution_state == "starting" and state != "starting":
            kernel.execution_state = "idle"  # as jupyter_server: untracked requests end starting


def drive_host_comms(
    kernel_manager: Any, session_manager: Any, responder: Responder, grants: Grants, log: Any
) -> HostDrivers | None:
    """Give the server's kernels host comms answered by ``responder``; None when the kernel
    manager is not ours (a gateway's kernels were launched by the remote server)."""
    if not isinstance(kernel_manager, HostKernelManager):
        return None

    async def caller_of(kernel_id: str) -> Caller:
        """The kernel's notebook is its first session's, if that session is a notebook's."""
        notebook: str | None = None
        for session in await session_manager.list_sessions():
            if (session.get("kernel") or {}).get("id") == kernel_id:
                if session.get("type") == "notebook":
                    notebook = session.get("path")
                break
        return Caller(kernel_id, notebook, grants.for_notebook(notebook))

    kernel_manager.host_drivers = HostDrivers(responder, log)
    kernel_manager.caller_of = caller_of
    return kernel_manager.host_drivers


def with_host_comms(configured: type[Any]) -> type[Any]:
    """The kernel manager class the server should use: ``configured`` with host comms attached
    to the kernels it starts, when it starts local kernels (jupyter_server's
    ``AsyncMappingKernelManager`` or a subclass); anything else (a gateway's manager, whose
    kernels the remote server launched, or a synchronous one) is kept as configured."""
    from jupyter_server.gateway.managers import GatewayMappingKernelManager

    local = issubclass(configured, AsyncMappingKernelManager)
    if not local or issubclass(configured, (HostKernelManager, GatewayMappingKernelManager)):
        return configured
    if configured is AsyncMappingKernelManager:
        return HostKernelManager
    return type(f"Host{configured.__name__}", (HostKernelManager, configured), {})
