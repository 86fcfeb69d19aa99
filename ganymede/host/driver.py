"""The host comm driver: the server's side of the ``ganymede.host.v1`` comm, one per kernel.

It talks to the kernel on a client of its own, with a Session of its own: ipykernel hands a
shared zmq identity's replies to whichever client spoke last, so sharing the kernel manager's
session would steal other clients' replies. The handshake asks for ``kernel_info`` on control as
well as on shell (JEP 80), so a cell already running on the main shell, as one can be right
after a restart, does not hold it up. After the first ``kernel_info_reply`` it asks for a
kernel subshell on control (only when the kernel lists ``"kernel subshells"``: without one a
cell waiting for a reply would block the only shell the reply could arrive on), offers the comm
on that subshell, and from then on reads iopub for calls, answers each in a task of its own and
sends every reply on the subshell. A restarted kernel loses its subshells and comms, so the
driver connects again from scratch. What it sends and the comm ids it uses go into ``traffic``,
which the kernel websocket and the activity tracker consult to keep host traffic to themselves.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import zmq
import zmq.asyncio
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel

from ganymede.core.kernel_handshake import handshake
from ganymede.errors import HostCallError
from ganymede.host.api import TARGET, Caller, Responder
from ganymede.host.iopub_filter import HostTraffic

SUBSHELLS_FEATURE = "kernel subshells"
HANDSHAKE_RESEND = 0.1
"""Seconds between ``kernel_info`` requests until the kernel and our iopub subscription answer."""
HANDSHAKE_TIMEOUT = 60.0
SUBSHELL_TIMEOUT = 10.0
READ_REARM = 0.2
"""A receive gives up after this long and starts again: a send on the same socket can consume
the wake-up of a waiting receive, which would leave a message unread."""
LINGER_MS = 1000
"""How long closing sockets still tries to deliver the last replies (``disconnected``)."""

CallerSource = Callable[[], Awaitable[Caller]]


class KernelProcess(Protocol):
    """What the driver needs of a kernel manager (jupyter_client's or jupyter_server's)."""

    def get_connection_info(self, session: bool = False) -> Mapping[str, Any]: ...

    async def is_alive(self) -> bool: ...


_context: zmq.asyncio.Context | None = None


def _zmq_context() -> zmq.asyncio.Context:
    """One context for every driver: closing a socket then flushes in zmq's own thread, where
    terminating a context per driver would block the event loop until its replies were out."""
    global _context
    if _context is None:
        _context = zmq.asyncio.Context()
        # iopub carries every output of the kernel: never let zmq drop a call in a flood.
        _context.setsockopt(zmq.RCVHWM, 0)
    return _context


@dataclass
class _Comm:
    """The host comm the driver holds on one connection, and the calls in flight on it."""

    comm_id: str
    calls: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    endings: dict[str, str] = field(default_factory=dict)
    """Why a call's task was cancelled: ``cancelled`` (the kernel asked) or ``disconnected``."""


class _DriverLine:
    """The driver's client as its handshake sees it (``HandshakeLine``): open once any of the
    requests was answered and iopub delivers."""

    def __init__(self, driver: HostDriver, info: asyncio.Future[dict[str, Any]]) -> None:
        assert driver._client is not None
        self.driver = driver
        self.info = info
        client = driver._client
        self._resend_on = client.shell_channel if driver.fresh else client.control_channel
        self._first_on_shell = not driver.fresh

    async def answering(self) -> bool:
        return bool(await self.driver.kernel.is_alive())

    def held_until(self, now: float) -> float | None:
        return None

    def send_kernel_info(self) -> str:
        driver = self.driver
        assert driver._client is not None
        if self._first_on_shell:
            self._first_on_shell = False
            driver._send(driver._client.shell_channel, "kernel_info_request", {})
        return driver._send(self._resend_on, "kernel_info_request", {})

    async def opened(self, request: str | None, until: float) -> bool:
        wait = max(until - asyncio.get_running_loop().time(), 0.0)
        try:
            await asyncio.wait_for(self._info_and_iopub(), wait)
        except TimeoutError:
            return False
        return True

    async def _info_and_iopub(self) -> None:
        await asyncio.shield(self.info)
        await self.driver._iopub_live.wait()

    def unanswered(self, timeout: float) -> Exception:
        return TimeoutError(f"no kernel_info_reply within {timeout:g} s")

    def gone(self) -> Exception:
        return TimeoutError("the kernel is not running")


class HostDriver:
    """The host comm to one kernel, from the first handshake until ``stop``.

    ``start`` returns once the comm is offered (for a ``fresh`` kernel, once the subshell is
    ready; or once the kernel turned out to have no subshells), so a cell run after it finds the
    driver listening; ``restart`` connects again after a kernel restart. ``traffic`` outlives
    connections: late messages of an old one stay hidden.
    """

    def __init__(
        self,
        kernel_id: str,
        kernel: KernelProcess,
        responder: Responder,
        caller: CallerSource,
        log: logging.Logger,
        *,
        fresh: bool = False,
    ) -> None:
        self.kernel_id = kernel_id
        self.fresh = fresh
        """No cell has run on the kernel yet (a headless run's): none waits in ``host()`` for
        the driver, so the comm is not offered and the handshake goes on shell alone. Either
        would print out of order a first cell that prints to both streams: the refusal of an
        offer writes a line on the kernel's stderr, arming ipykernel's 0.2 s stderr flush
        timer, and the control thread flushes both streams after each request it answers.
        A server's kernel may already run a cell (right after a restart), so it gets both."""
        self.kernel = kernel
        self.responder = responder
        self.caller_source = caller
        self.log = log
        self.traffic = HostTraffic()
        self.subshell_id: str | None = None
        self.has_subshells = False
        self._caller: Caller | None = None
        self._client: AsyncKernelClient | None = None
        self._readers: list[asyncio.Task[None]] = []
        self._reading = asyncio.Event()
        self._replies: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._idle_waits: dict[str, asyncio.Future[None]] = {}
        self._offer_handled: asyncio.Future[None] | None = None
        self._iopub_live = asyncio.Event()
        self._info: asyncio.Future[dict[str, Any]] | None = None
        self._comm: _Comm | None = None
        self._connecting: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self._stopped = False

    @property
    def comm_id(self) -> str | None:
        """The host comm held now; None before the kernel or the server opened one."""
        return None if self._comm is None else self._comm.comm_id

    async def start(self) -> None:
        await self.restart()

    async def restart(self) -> None:
        """Connect again: a restarted kernel has neither the subshell nor the comm.

        Concurrent requests (a restart callback and the ``starting`` status both noticing the
        same restart) share one reconnection.
        """
        if self._stopped:
            return
        if self._connecting is None or self._connecting.done():
            self._connecting = asyncio.create_task(self._reconnect())
        await asyncio.shield(self._connecting)

    async def stop(self) -> None:
        """Answer calls in flight ``disconnected``, close the comm, let the kernel be."""
        self._stopped = True
        if self._connecting is not None:
            self._connecting.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._connecting
        await self._disconnect(close_comm=True)
        await self._release()
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)

    async def _reconnect(self) -> None:
        if self._client is not None:
            await self._disconnect(close_comm=False)
            await self._release()  # a restarted kernel: what its calls held is gone
        try:
            await self._connect()
        except (HostCallError, TimeoutError) as error:
            self.log.warning("host: kernel %s gets no host comm: %s", self.kernel_id, error)

    async def _release(self) -> None:
        try:
            await self.responder.release(self.kernel_id)
        except Exception:
            self.log.exception("host: releasing kernel %s failed", self.kernel_id)

    async def _connect(self) -> None:
        client = AsyncKernelClient(context=_zmq_context())
        client.load_connection_info(dict(self.kernel.get_connection_info()))
        client.start_channels(shell=True, iopub=True, stdin=False, hb=False, control=True)
        self._client = client
        self._iopub_live = asyncio.Event()
        self._reading = asyncio.Event()
        self._reading.set()
        for channel in (client.shell_channel, client.iopub_channel, client.control_channel):
            self._readers.append(asyncio.create_task(self._read(channel)))
        info = await self._handshake()
        self.has_subshells = SUBSHELLS_FEATURE in info.get("supported_features", [])
        if not self.has_subshells:
            self.log.info("host: kernel %s has no subshells: no host comm", self.kernel_id)
            await self._disconnect(close_comm=False)
            return
        # Until idle: the control thread flushes stdout, then stderr, after its reply, and a
        # first cell printing to both in between would have its stderr sent ahead of its stdout.
        reply = await self._request(
            client.control_channel,
            "create_subshell_request",
            {},
            SUBSHELL_TIMEOUT,
            until_idle=True,
        )
        if reply.get("status") != "ok":
            raise HostCallError("unavailable", f"the kernel refused a subshell: {reply}")
        self.subshell_id = reply["subshell_id"]
        if self.fresh:
            return
        hello = await self._hello()
        if self._comm is not None:
            return  # a cell opened the comm itself meanwhile, and has its hello
        comm_id = uuid.uuid4().hex
        self.traffic.comm_ids.add(comm_id)
        self._comm = _Comm(comm_id)
        # Ready only once the kernel has handled the offer: a kernel with no client loaded
        # refuses it with a comm_close, which must be seen before a cell's own open is.
        handled = asyncio.get_running_loop().create_future()
        open_id = self._send_on_subshell(
            "comm_open", {"comm_id": comm_id, "target_name": TARGET, "data": {"hello": hello}}
        )
        self._idle_waits[open_id] = handled
        self._offer_handled = handled
        try:
            await asyncio.wait_for(handled, SUBSHELL_TIMEOUT)
        finally:
            self._idle_waits.pop(open_id, None)

    async def _handshake(self) -> dict[str, Any]:
        """The kernel's info, once iopub is proven live (a SUB socket hears nothing until its
        subscription reaches the kernel, and a call sent before that would be lost).

        Any reply to any of the requests counts: a kernel slow to start answers late, and the
        requests pile up until it does. They go on control, which answers while a cell runs
        on the main shell; the first also goes on shell, for a kernel that answers only there
        (one, not one per resend: those would keep the main shell busy after the cell). A
        ``fresh`` kernel runs no cell yet: every request goes on shell.
        """
        assert self._client is not None
        info: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._info = info
        await handshake(_DriverLine(self, info), HANDSHAKE_TIMEOUT, HANDSHAKE_RESEND)
        return info.result()

    async def _hello(self) -> Any:
        self._caller = await self.caller_source()
        return await self.responder.call(self._caller, "hello", {})

    async def _request(
        self,
        channel: AsyncZMQSocketChannel,
        msg_type: str,
        content: dict[str, Any],
        wait: float,
        *,
        until_idle: bool = False,
    ) -> dict[str, Any]:
        """Send a request and wait for its reply's content; replies are routed by parent id,
        so requests on different channels may wait side by side. ``until_idle`` waits for the
        kernel's idle status too: ipykernel flushes stdout and stderr after answering."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        handled: asyncio.Future[None] = loop.create_future()
        msg_id = self._send(channel, msg_type, content)
        self._replies[msg_id] = future
        if until_idle:
            self._idle_waits[msg_id] = handled
        else:
            handled.set_result(None)

        async def answered() -> dict[str, Any]:
            reply = await future
            await handled
            return reply

        try:
            return await asyncio.wait_for(answered(), wait)
        finally:
            self._replies.pop(msg_id, None)
            self._idle_waits.pop(msg_id, None)

    def _send(
        self,
        channel: AsyncZMQSocketChannel,
        msg_type: str,
        content: dict[str, Any],
        subshell_id: str | None = None,
    ) -> str:
        assert self._client is not None
        message = self._client.session.msg(msg_type, content)
        if subshell_id is not None:
            message["header"]["subshell_id"] = subshell_id
        msg_id: str = message["header"]["msg_id"]
        self.traffic.sent.add(msg_id)
        channel.send(message)
        return msg_id

    def _send_on_subshell(self, msg_type: str, content: dict[str, Any]) -> str:
        assert self._client is not None
        return self._send(self._client.shell_channel, msg_type, content, self.subshell_id)

    async def _disconnect(self, *, close_comm: bool) -> None:
        """Drop the connection; with ``close_comm`` (the kernel lives on) first answer calls in
        flight ``disconnected`` and close the comm, so no cell waits on a reply that won't come."""
        comm = self._comm
        if comm is not None:
            await self._end_calls(comm, "disconnected" if close_comm else None)
            if close_comm and self._client is not None:
                self._send_on_subshell("comm_close", {"comm_id": comm.comm_id, "data": {}})
        self._comm = None
        self._reading.clear()
        for reader in self._readers:
            reader.cancel()
        await asyncio.gather(*self._readers, return_exceptions=True)
        self._readers.clear()
        for future in self._replies.values():
            future.cancel()
        if self._client is not None:
            for channel in (
                self._client.shell_channel,
                self._client.iopub_channel,
                self._client.control_channel,
            ):
                if channel.socket is not None:
                    channel.socket.close(linger=LINGER_MS)
                    channel.socket = None
            self._client = None
        self.subshell_id = None

    async def _end_calls(self, comm: _Comm, ending: str | None) -> None:
        """Cancel the calls on ``comm``; ``ending`` is the code their replies carry (None: the
        kernel is gone or restarted, nobody is left to tell)."""
        for call_id, task in list(comm.calls.items()):
            if ending is None:
                comm.endings[call_id] = "gone"
            else:
                comm.endings.setdefault(call_id, ending)
            task.cancel()
        await asyncio.gather(*comm.calls.values(), return_exceptions=True)

    async def _read(self, channel: AsyncZMQSocketChannel) -> None:
        """Read one channel until the connection is dropped.

        The loop ends on ``_reading`` being cleared, not only on cancellation: ``wait_for`` on
        Python 3.11 returns a receive that completed as it was cancelled and swallows the
        cancellation, which would keep a reader of a closed connection alive.
        """
        assert self._client is not None and channel.socket is not None
        session = self._client.session
        socket = channel.socket
        is_iopub = channel is self._client.iopub_channel
        reading = self._reading
        while reading.is_set():
            try:
                frames = await asyncio.wait_for(socket.recv_multipart(), READ_REARM)
            except TimeoutError:
                continue
            try:
                _, frames = session.feed_identities(frames)
                message = session.deserialize(frames)
                if is_iopub:
                    self._on_iopub(message)
                else:
                    self._on_reply(message)
            except Exception:  # one bad message must not stop the reading: calls would hang
                self.log.exception("host: a message from kernel %s was not handled", self.kernel_id)

    def _on_reply(self, message: Mapping[str, Any]) -> None:
        info = self._info
        if message["msg_type"] == "kernel_info_reply" and info is not None and not info.done():
            info.set_result(dict(message["content"]))
        future = self._replies.get(message["parent_header"].get("msg_id", ""))
        if future is not None and not future.done():
            future.set_result(dict(message["content"]))

    def _on_iopub(self, message: Mapping[str, Any]) -> None:
        self._iopub_live.set()
        msg_type = message["msg_type"]
        content = message["content"]
        if msg_type == "status":
            state = content.get("execution_state")
            handled = self._idle_waits.get(message["parent_header"].get("msg_id", ""))
            if state == "idle" and handled is not None and not handled.done():
                handled.set_result(None)
            elif state == "starting" and self.subshell_id is not None:
                self._spawn(self.restart())
            return
        if msg_type not in ("comm_open", "comm_msg", "comm_close"):
            return
        comm_id = content.get("comm_id")
        if msg_type == "comm_open" and content.get("target_name") == TARGET:
            self.traffic.comm_ids.add(comm_id)
            self._spawn(self._on_kernel_open(comm_id))
        elif self._comm is None or comm_id != self._comm.comm_id:
            return
        elif msg_type == "comm_close":
            comm, self._comm = self._comm, None
            self._spawn(self._end_calls(comm, None))
        else:
            self._on_comm_msg(self._comm, content.get("data"))

    async def _on_kernel_open(self, comm_id: str) -> None:
        """A client in the kernel opened the comm itself (it loaded after the server's offer
        was refused): it gets hello, unless a comm is held already, or the offer is taken."""
        if self.subshell_id is None:
            return
        offer = self._offer_handled
        if offer is not None and not offer.done():
            # The kernel may yet refuse the offer: its target was registered only after the
            # offer arrived (a cell calling host() right after a restart). Its answer decides.
            await asyncio.wait([offer])
            if self.subshell_id is None:
                return  # the connection was dropped meanwhile
        if self._comm is not None:
            self._send_on_subshell("comm_close", {"comm_id": comm_id, "data": {"error": "taken"}})
            return
        self._comm = _Comm(comm_id)
        try:
            hello = await self._hello()
        except HostCallError as error:
            self._comm = None
            self._send_on_subshell(
                "comm_close", {"comm_id": comm_id, "data": {"error": error.code}}
            )
            return
        self._send_on_subshell("comm_msg", {"comm_id": comm_id, "data": {"hello": hello}})

    def _on_comm_msg(self, comm: _Comm, data: Any) -> None:
        if not isinstance(data, dict) or not isinstance(data.get("id"), str):
            self.log.warning("host: kernel %s sent a call with no id: %r", self.kernel_id, data)
            return
        call_id: str = data["id"]
        if data.get("cancel") is True:
            task = comm.calls.get(call_id)
            if task is not None:
                comm.endings[call_id] = "cancelled"
                task.cancel()
            return
        method, params = data.get("method"), data.get("params", {})
        if not isinstance(method, str) or not isinstance(params, dict):
            self._reply(comm, call_id, error=("failed", "a call needs a method and params object"))
            return
        if call_id in comm.calls:
            self._reply(comm, call_id, error=("failed", f"call id {call_id} is already in use"))
            return
        comm.calls[call_id] = asyncio.create_task(self._answer(comm, call_id, method, params))

    async def _answer(self, comm: _Comm, call_id: str, method: str, params: dict[str, Any]) -> None:
        try:
            if self._caller is None or self._caller.notebook is None:
                # resolved again until the kernel's session is known (it is saved after the
                # kernel starts, so the first hello may come before it)
                self._caller = await self.caller_source()
            result = await self.responder.call(self._caller, method, params)
        except HostCallError as error:
            self._reply(comm, call_id, error=(error.code, error.message))
        except asyncio.CancelledError:
            ending = comm.endings.pop(call_id, "disconnected")
            if ending != "gone":
                self._reply(comm, call_id, error=(ending, f"{method} was {ending}"))
            raise
        except Exception as error:
            self.log.exception("host: %s from kernel %s failed", method, self.kernel_id)
            self._reply(comm, call_id, error=("failed", f"{method}: {error}"))
        else:
            self._reply(comm, call_id, result=result)
        finally:
            comm.calls.pop(call_id, None)

    def _reply(
        self,
        comm: _Comm,
        call_id: str,
        *,
        result: Any = None,
        error: tuple[str, str] | None = None,
    ) -> None:
        if self._client is None or self.subshell_id is None:
            return
        if error is None:
            data: dict[str, Any] = {"id": call_id, "result": result}
        else:
            data = {"id": call_id, "error": {"code": error[0], "message": error[1]}}
        try:
            self._send_on_subshell("comm_msg", {"comm_id": comm.comm_id, "data": data})
        except (TypeError, ValueError) as unsendable:
            failure = {"code": "failed", "message": f"the result is not JSON: {unsendable}"}
            self._send_on_subshell(
                "comm_msg", {"comm_id": comm.comm_id, "data": {"id": call_id, "error": failure}}
            )

    def _spawn(self, work: Awaitable[Any]) -> None:
        task: asyncio.Task[Any] = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)


class HostDrivers:
    """The drivers of every kernel a server (or a runner) started, by kernel id."""

    def __init__(self, responder: Responder, log: logging.Logger) -> None:
        self.responder = responder
        self.log = log
        self._drivers: dict[str, HostDriver] = {}

    def traffic(self, kernel_id: str) -> HostTraffic | None:
        driver = self._drivers.get(kernel_id)
        return None if driver is None else driver.traffic

    async def attach(self, kernel_id: str, kernel: KernelProcess, caller: CallerSource) -> None:
        """Start a driver on a kernel that is up; a kernel already attached is left as it is."""
        if kernel_id in self._drivers:
            return
        driver = HostDriver(kernel_id, kernel, self.responder, caller, self.log)
        self._drivers[kernel_id] = driver
        await driver.start()

    async def restarted(self, kernel_id: str) -> None:
        driver = self._drivers.get(kernel_id)
        if driver is not None:
            await driver.restart()

    async def detach(self, kernel_id: str) -> None:
        driver = self._drivers.pop(kernel_id, None)
        if driver is not None:
            await driver.stop()

    async def stop(self) -> None:
        drivers, self._drivers = list(self._drivers.values()), {}
        await asyncio.gather(*(driver.stop() for driver in drivers), return_exceptions=True)


@contextlib.asynccontextmanager
async def attached(
    kernel: KernelProcess, responder: Responder, caller: Caller, log: logging.Logger
) -> AsyncIterator[HostDriver]:
    """A driver on ``kernel`` for the span of a ``with``: how a headless run answers its kernel.

    A run's kernel is ``fresh``: the client in it opens the comm at its first ``host()`` call.
    """

    async def fixed_caller() -> Caller:
        return caller

    driver = HostDriver(caller.kernel_id, kernel, responder, fixed_caller, log, fresh=True)
    await driver.start()
    try:
        yield driver
    finally:
        await driver.stop()
