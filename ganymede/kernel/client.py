"""The host client: cell code asks the Ganymede server for notebooks over the host comm.

A call is a ``comm_msg`` the kernel publishes on iopub; the server answers on a kernel subshell,
whose own thread runs the comm's handler while the calling cell is still busy on the main shell.
A plain cell blocks on a ``threading.Event`` the handler sets; an async cell awaits a future the
handler resolves through the cell's event loop. An interrupt or a timeout sends ``cancel``.

ipykernel 7.4 sends a comm's incoming messages to the shell that last published on it, ignoring
the subshell the server addressed, which would queue every reply behind the waiting cell; the
comms here opt out of that routing so replies follow the server's ``subshell_id`` again.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from typing import Any

TARGET = "ganymede.host.v1"
PROTOCOL = 1
HELLO_TIMEOUT = 2.0
"""Seconds ``host()`` waits for a server to answer before deciding there is none."""

__all__ = ["Host", "HostError", "host"]


class HostError(Exception):
    """A host call that failed; ``code`` is one of the protocol's error codes."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class _Pending:
    """One call waiting for its reply, from a plain cell (an event) or an async one (a future)."""

    def __init__(self, future: asyncio.Future[Any] | None = None) -> None:
        self.done = threading.Event()
        self.result: Any = None
        self.error: HostError | None = None
        self._future = future

    def settle(self, result: Any = None, error: HostError | None = None) -> None:
        self.result, self.error = result, error
        self.done.set()
        future = self._future
        if future is not None:
            future.get_loop().call_soon_threadsafe(_resolve, future, result, error)


def _resolve(future: asyncio.Future[Any], result: Any, error: HostError | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)


class Host:
    """The server's answers to this kernel, after its ``hello``.

    Built by ``host()``; ``notebook`` is the API path of this kernel's notebook (None for none),
    ``methods`` what the server lets it call.
    """

    def __init__(self, comm: Any) -> None:
        self._comm = comm
        self._lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}
        self._greeted = threading.Event()
        self._closed_with: HostError | None = None
        self.hello: dict[str, Any] = {}
        self.notebooks = _Notebooks(self)
        self.self = _SelfCells(self)
        comm.on_msg(self._on_msg)
        comm.on_close(self._on_close)

    @property
    def notebook(self) -> str | None:
        return self.hello.get("notebook")

    @property
    def server(self) -> str | None:
        return self.hello.get("server")

    @property
    def methods(self) -> list[str]:
        return list(self.hello.get("methods", []))

    @property
    def closed(self) -> bool:
        return self._closed_with is not None

    def has(self, method: str) -> bool:
        """Whether the server lets this kernel call ``method``, answered from ``hello``."""
        return method in self.methods

    def call(self, method: str, /, *, timeout: float | None = None, **params: Any) -> Any:
        """Call ``method`` and wait for its result; HostError if it fails or times out.

        Ctrl-C (an interrupt) cancels the call on the server before it propagates.
        """
        return self.call_with(method, params, timeout=timeout)

    async def acall(self, method: str, /, *, timeout: float | None = None, **params: Any) -> Any:
        """``call`` for async cells: the cell's event loop keeps running while it waits."""
        return await self.acall_with(method, params, timeout=timeout)

    def call_with(self, method: str, params: dict[str, Any], *, timeout: float | None) -> Any:
        call_id, pending = self._register(None)
        try:
            self._send(call_id, method, params)
            if not _wait(pending.done, timeout):
                raise HostError("timeout", f"{method} did not answer within {timeout:g} s")
        except BaseException:  # an interrupt may land anywhere, the send included
            self._cancel(call_id)
            raise
        if pending.error is not None:
            raise pending.error
        return pending.result

    async def acall_with(
        self, method: str, params: dict[str, Any], *, timeout: float | None
    ) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        call_id, _ = self._register(future)
        try:
            self._send(call_id, method, params)
            if not await _await(future, timeout):
                raise HostError("timeout", f"{method} did not answer within {timeout:g} s")
        except BaseException:
            future.cancel()
            self._cancel(call_id)
            raise
        return future.result()

    def _register(self, future: asyncio.Future[Any] | None) -> tuple[str, _Pending]:
        if self._closed_with is not None:
            raise self._closed_with
        call_id = uuid.uuid4().hex
        pending = _Pending(future)
        with self._lock:
            self._pending[call_id] = pending
        return call_id, pending

    def _send(self, call_id: str, method: str, params: dict[str, Any]) -> None:
        clean = {key: value for key, value in params.items() if value is not None}
        self._comm.send({"id": call_id, "method": method, "params": clean})

    def _cancel(self, call_id: str) -> None:
        """Tell the server to drop a call still waiting here (one already answered is left)."""
        with self._lock:
            pending = self._pending.pop(call_id, None)
        if pending is not None and self._closed_with is None:
            self._comm.send({"id": call_id, "cancel": True})

    def _on_msg(self, message: dict[str, Any]) -> None:
        data = message.get("content", {}).get("data") or {}
        if "hello" in data:
            self.hello = dict(data["hello"])
            self._greeted.set()
            return
        with self._lock:
            pending = self._pending.pop(str(data.get("id")), None)
        if pending is None:
            return  # a reply to a call abandoned here (timeout, interrupt)
        error = data.get("error")
        if error is None:
            pending.settle(result=data.get("result"))
        else:
            pending.settle(error=HostError(str(error.get("code")), str(error.get("message"))))

    def _on_close(self, message: dict[str, Any]) -> None:
        data = message.get("content", {}).get("data") or {}
        if data.get("error") == "taken":
            reason = HostError("unavailable", "another client in this kernel holds the host comm")
        else:
            reason = HostError("disconnected", "the server closed the host comm")
        self._closed_with = reason
        self._greeted.set()
        with self._lock:
            pending, self._pending = list(self._pending.values()), {}
        for call in pending:
            call.settle(error=reason)


class _Notebooks:
    """``notebooks.*``: other notebooks under the server's root, as the grant allows."""

    def __init__(self, owner: Host) -> None:
        self._host = owner

    def list(self, dir: str | None = None) -> list[dict[str, Any]]:
        return self._host.call_with("notebooks.list", {"dir": dir}, timeout=None)

    def read(self, path: str) -> dict[str, Any]:
        return self._host.call_with("notebooks.read", {"path": path}, timeout=None)

    def search(
        self,
        query: str,
        dir: str | None = None,
        outputs: bool | None = None,
        cell_type: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        params = {"query": query, "dir": dir, "outputs": outputs, "cell_type": cell_type}
        return self._host.call_with("notebooks.search", {**params, "limit": limit}, timeout=None)

    def results(self, path: str) -> dict[str, Any]:
        return self._host.call_with("notebooks.results", {"path": path}, timeout=None)

    def run(
        self,
        path: str,
        params: dict[str, Any] | None = None,
        save: bool | str | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Run ``path`` in a fresh kernel; ``timeout`` bounds the run (the server enforces it)."""
        call = {"path": path, "params": params, "save": save, "timeout": timeout}
        return self._host.call_with("notebooks.run", call, timeout=None)

    async def alist(self, dir: str | None = None) -> list[dict[str, Any]]:
        return await self._host.acall_with("notebooks.list", {"dir": dir}, timeout=None)

    async def aread(self, path: str) -> dict[str, Any]:
        return await self._host.acall_with("notebooks.read", {"path": path}, timeout=None)

    async def asearch(
        self,
        query: str,
        dir: str | None = None,
        outputs: bool | None = None,
        cell_type: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        params = {"query": query, "dir": dir, "outputs": outputs, "cell_type": cell_type}
        return await self._host.acall_with(
            "notebooks.search", {**params, "limit": limit}, timeout=None
        )

    async def aresults(self, path: str) -> dict[str, Any]:
        return await self._host.acall_with("notebooks.results", {"path": path}, timeout=None)

    async def arun(
        self,
        path: str,
        params: dict[str, Any] | None = None,
        save: bool | str | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        call = {"path": path, "params": params, "save": save, "timeout": timeout}
        return await self._host.acall_with("notebooks.run", call, timeout=None)


class _SelfCells:
    """``self.*``: edits to this kernel's own notebook, through its room."""

    def __init__(self, owner: Host) -> None:
        self._host = owner

    def add(self, source: str, cell_type: str = "code", after: str | None = None) -> dict[str, Any]:
        call = {"source": source, "cell_type": cell_type, "after": after}
        return self._host.call_with("self.add", call, timeout=None)

    def edit(self, id: str, source: str, source_hash: str) -> dict[str, Any]:
        call = {"id": id, "source": source, "source_hash": source_hash}
        return self._host.call_with("self.edit", call, timeout=None)

    def delete(self, id: str, source_hash: str) -> dict[str, Any]:
        call = {"id": id, "source_hash": source_hash}
        return self._host.call_with("self.delete", call, timeout=None)

    async def aadd(
        self, source: str, cell_type: str = "code", after: str | None = None
    ) -> dict[str, Any]:
        call = {"source": source, "cell_type": cell_type, "after": after}
        return await self._host.acall_with("self.add", call, timeout=None)

    async def aedit(self, id: str, source: str, source_hash: str) -> dict[str, Any]:
        call = {"id": id, "source": source, "source_hash": source_hash}
        return await self._host.acall_with("self.edit", call, timeout=None)

    async def adelete(self, id: str, source_hash: str) -> dict[str, Any]:
        call = {"id": id, "source_hash": source_hash}
        return await self._host.acall_with("self.delete", call, timeout=None)


_lock = threading.Lock()
_current: Host | None = None
_offered: Host | None = None
"""A comm the server opened while the target was registered (a client loaded at start-up, or
one waiting for its own open to be answered)."""
_opening: Host | None = None
"""The comm ``host()`` opened and waits on; the server's own offer ends that wait too."""


def host(timeout: float = HELLO_TIMEOUT) -> Host | None:
    """The server's host API for this kernel; None when no server answers within ``timeout``.

    The first call registers the comm target (so a server reopening the comm after this is
    heard) and, unless the server's comm is already held, opens the comm itself and waits for
    the server's ``hello``, or for the server's own offer: right after a restart the server may
    still be connecting, and then misses this open but offers its comm once it is connected.
    """
    global _current
    with _lock:
        if _current is not None and not _current.closed:
            return _current
        _register_target()
        if _offered is not None and not _offered.closed:
            _current = _offered
            return _current
        _current = _open(timeout)
        return _current


def _open(timeout: float) -> Host | None:
    global _opening
    import comm

    opened = comm.create_comm(target_name=TARGET, primary=False)
    _route_replies_by_header(opened)
    client = _opening = Host(opened)
    try:
        opened.open(data={"protocol": PROTOCOL})
        greeted = _wait(client._greeted, timeout)
    finally:
        _opening = None
    if _offered is not None and not _offered.closed:
        # The server's own offer landed while this open was on its way. The server holds one
        # comm, so this open is refused or was never seen; it is left as it is, not closed: a
        # close of a comm the server never saw would reach other clients as a stray comm_close.
        return _offered
    if not greeted:
        opened.close()
        return None
    if client._closed_with is not None:
        raise client._closed_with
    return client


def _register_target() -> None:
    import comm

    comm.get_comm_manager().register_target(TARGET, _on_server_open)


def _on_server_open(opened: Any, message: dict[str, Any]) -> None:
    global _offered
    _route_replies_by_header(opened)
    client = Host(opened)
    client.hello = dict((message.get("content", {}).get("data") or {}).get("hello") or {})
    client._greeted.set()
    _offered = client
    opening = _opening
    if opening is not None:
        opening._greeted.set()


def _route_replies_by_header(opened: Any) -> None:
    """Undo ipykernel 7.4's routing of a comm's incoming messages to the shell that last sent.

    7.4 asks ``comm._reply_subshell_for(data, default)`` where to deliver each message; with the
    attribute set to None it falls back to the message's own ``subshell_id``. Older releases
    have no such routing, and a comm class without the method is left alone.
    """
    if callable(getattr(opened, "_reply_subshell_for", None)):
        opened._reply_subshell_for = None


INTERRUPT_CHECK = 0.2
"""Seconds a call waits at a time before it lets Python look for a signal."""


def _wait(done: threading.Event, timeout: float | None) -> bool:
    """Block until ``done`` or ``timeout``, in slices.

    An interrupt is a SIGINT sent to the kernel's process, and the system hands it to any of
    the kernel's threads. Only one delivered to the main thread wakes its lock wait; one taken
    by the iopub or a subshell thread is only acted on when the main thread next runs Python,
    which a wait without an end would never do.
    """
    deadline = _deadline(timeout)
    while not done.wait(_next_slice(deadline)):
        if _past(deadline):
            return False
    return True


async def _await(future: asyncio.Future[Any], timeout: float | None) -> bool:
    """``_wait`` for async cells: until ``future`` or ``timeout``, in slices.

    ipykernel cancels an async cell from its SIGINT handler, which Python runs on the main
    thread when that thread next runs Python. These kernels often take the signal on another
    thread, and then the handler waits until the cell's event loop wakes; a loop waiting on
    nothing but this reply would not.
    """
    deadline = _deadline(timeout)
    while not future.done():
        if _past(deadline):
            return False
        await asyncio.wait([future], timeout=_next_slice(deadline))
    return True


def _deadline(timeout: float | None) -> float | None:
    return None if timeout is None else time.monotonic() + timeout


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def _next_slice(deadline: float | None) -> float:
    """``INTERRUPT_CHECK``, or less to end at ``deadline``."""
    if deadline is None:
        return INTERRUPT_CHECK
    return max(0.0, min(INTERRUPT_CHECK, deadline - time.monotonic()))
