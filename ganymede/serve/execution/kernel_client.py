"""The server's own line to a kernel that jupyter_server started.

``KernelLine`` holds what every transport shares (matching messages to runs, waiting, liveness);
``KernelConnection`` is the zmq transport for kernels on this machine (a gateway's kernels go
through ``gateway_client``).

A kernel's shell replies go back to the socket that asked, so the server talks to the kernel on
its own client, built from the kernel manager's connection info with a session of its own:
browsers connected to the same kernel never see these replies. iopub is a broadcast; messages
are matched to the execution that caused them by ``parent_header.msg_id``, and everything else
(other clients' runs) is read and dropped, so nothing piles up between runs. Messages already
waiting on a socket are read together and handed over together (up to ``READ_TOGETHER``): a
kernel printing faster than the room takes its output in costs one room transaction per read,
not one per message.

The line is open once the kernel answered on both channels and the stream flush timers it armed
have fired (``ganymede.core.stream_flushes``), as its ``StreamWatch`` heard them: otherwise a
first cell run just after the kernel started or wrote to a stream could have its stderr
published ahead of its stdout.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Self

import zmq
import zmq.asyncio
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel

from ganymede.core.kernel_handshake import handshake
from ganymede.core.kernel_wire import execute_request
from ganymede.errors import KernelDied
from ganymede.execute.kernel import HANDSHAKE_RESEND, IOPUB_GRACE, LIVENESS_INTERVAL
from ganymede.serve.kernels.stream_watch import StreamWatch
from ganymede.serve.service import detached_task, event_within

IopubHandler = Callable[[Sequence[tuple[str, Mapping[str, Any]]]], None]
READ_TOGETHER = 1000
"""At most this many waiting messages read at once: the room's clients still see progress."""
WATCH_GRACE = 1.0
"""Seconds after the kernel's first answer in which the kernel manager's watch must hear one of
the handshake's requests."""


class KernelProcess(Protocol):
    """What is needed of jupyter_server's kernel manager for one kernel."""

    provisioner: Any

    def get_connection_info(self, session: bool = False) -> Mapping[str, Any]: ...

    async def is_alive(self) -> bool: ...


def process_of(kernel: KernelProcess) -> object:
    """The kernel's process handle, which a restart replaces (its provisioner stays)."""
    return getattr(kernel.provisioner, "process", None)


@dataclass
class _Execution:
    """One ``execute_request`` in flight: done once its reply and its iopub ``idle`` are in."""

    on_iopub: IopubHandler
    last_heard: float
    reply: dict[str, Any] | None = None
    idle: bool = False
    settled: asyncio.Event = field(default_factory=asyncio.Event)

    def check(self) -> None:
        if self.reply is not None and self.idle:
            self.settled.set()


class KernelLine(abc.ABC):
    """The executions waiting on one kernel, whatever carries its messages.

    A transport sends ``execute_request`` in ``_send_execute`` and hands every message it reads
    to ``_dispatch``; the waiting, matching and liveness rules are the same for all of them.
    """

    def __init__(
        self, kernel: KernelProcess, log: logging.Logger, watch: StreamWatch | None = None
    ) -> None:
        self.kernel = kernel
        self.log = log
        self._executions: dict[str, _Execution] = {}
        self._iopub_live = asyncio.Event()
        self._info_reply = asyncio.Event()
        self._kernel_session: str | None = None
        """The kernel process's session, from its ``kernel_info_reply``."""
        self._own_watch = StreamWatch()
        """Fed by the line's own iopub, which subscribed late: used without a manager's."""
        self._watch = self._own_watch if watch is None else watch
        self._handshaken = False
        """Set once the line is open: the watches are asked nothing after that."""
        self._outdated = False

    @property
    def is_current(self) -> bool:
        """False once the kernel was restarted: a new connection must be made and proven."""
        return not self._outdated and self._transport_is_current()

    def outdate(self) -> None:
        """The server restarted the kernel. Its own word counts: what the transport notices
        (a new process, a restart status) can come after the next batch was sent."""
        self._outdated = True

    @abc.abstractmethod
    def _transport_is_current(self) -> bool:
        """Whether the transport has seen no sign of a restart."""

    @abc.abstractmethod
    async def close(self) -> None: ...

    @classmethod
    async def open(
        cls, kernel: Any, log: logging.Logger, timeout: float, watch: StreamWatch | None = None
    ) -> Self:
        """A line the kernel is known to answer on, whose iopub is live (no output of the first
        cell is lost) and whose stream flush timers have fired; KernelDied if it does not
        answer within ``timeout``. ``watch``: the kernel manager's, if it keeps one."""
        line = cls(kernel, log, watch)
        try:
            await line._start(timeout)
        except BaseException:
            await line.close()
            raise
        return line

    @abc.abstractmethod
    async def _start(self, timeout: float) -> None:
        """Connect, and return once the kernel answered on every channel the line reads."""

    @abc.abstractmethod
    def _send_execute(self, code: str) -> str:
        """Send the ``execute_request``; its message id."""

    @abc.abstractmethod
    def _send_kernel_info(self) -> str:
        """Send a ``kernel_info_request``; its message id."""

    @abc.abstractmethod
    async def _answering(self) -> bool:
        """Whether the kernel can still answer the handshake."""

    async def _handshake(self, timeout: float, resend: float) -> None:
        """Ask for ``kernel_info`` (every ``resend`` seconds while unanswered) until the kernel
        answered on shell, iopub delivers, and the watch heard the status of a request sent
        once the flush timers the kernel armed were due (at once for a kernel that armed none
        lately). KernelDied if that takes ``timeout`` seconds or the kernel goes.

        A manager's watch that hears none of the requests within ``WATCH_GRACE`` of the first
        answer (its subscription lost to a restart on new ports) is left for the line's own.
        """
        await handshake(_OpeningLine(self), timeout, resend)
        self._handshaken = True

    async def _alive(self) -> bool:
        return self.is_current and await self.kernel.is_alive()

    async def execute(self, code: str, on_iopub: IopubHandler) -> dict[str, Any]:
        """Run ``code``, handing its iopub messages to ``on_iopub``; the reply's content.

        Done once the reply AND the iopub ``idle`` are in (the reply can overtake the last
        outputs); after the reply, ``IOPUB_GRACE`` seconds of iopub silence end the wait
        rather than hang on a dropped message. KernelDied if the kernel exits or is restarted
        (a restarted kernel never answers what its predecessor was asked).
        """
        loop = asyncio.get_running_loop()
        msg_id = self._send_execute(code)
        execution = _Execution(on_iopub, last_heard=loop.time())
        self._executions[msg_id] = execution
        try:
            while not execution.settled.is_set():
                if await event_within(execution.settled, LIVENESS_INTERVAL):
                    break
                silent_for = loop.time() - execution.last_heard
                if execution.reply is not None and silent_for >= IOPUB_GRACE:
                    break
                if not await self._alive():
                    raise KernelDied("the kernel died or restarted while running the cell")
        finally:
            del self._executions[msg_id]
        assert execution.reply is not None
        return execution.reply

    def _dispatch(self, messages: list[Mapping[str, Any]], *, shell: bool) -> None:
        """Each message to its execution; outputs in runs, one call per run of one execution."""
        outputs: list[tuple[str, Mapping[str, Any]]] = []
        outputs_of: _Execution | None = None
        for message in messages:
            execution = self._executions.get(message["parent_header"].get("msg_id", ""))
            if outputs_of is not None and execution is not outputs_of:
                self._hand_over(outputs_of, outputs)
                outputs, outputs_of = [], None
            msg_type = message["msg_type"]
            if shell:
                if msg_type == "kernel_info_reply" and not self._info_reply.is_set():
                    self._kernel_session = message["header"].get("session")
                    self._info_reply.set()
            else:
                self._iopub_live.set()
                if not self._handshaken:  # no per-message work once the line is open
                    self._own_watch.hear(message, asyncio.get_running_loop().time())
            if execution is None:
                continue
            execution.last_heard = asyncio.get_running_loop().time()
            if shell:
                if msg_type == "execute_reply":
                    execution.reply = dict(message["content"])
            elif msg_type == "status":
                state = message["content"].get("execution_state")
                execution.idle = execution.idle or state == "idle"
            else:
                outputs.append((msg_type, message["content"]))
                outputs_of = execution
        if outputs_of is not None:
            self._hand_over(outputs_of, outputs)
        for execution in list(self._executions.values()):
            execution.check()

    def _hand_over(
        self, execution: _Execution, outputs: list[tuple[str, Mapping[str, Any]]]
    ) -> None:
        """Outputs that cannot be applied are lost, not the replies read with them."""
        try:
            execution.on_iopub(outputs)
        except Exception:
            self.log.exception("execute: kernel output could not be applied")


class _OpeningLine:
    """A ``KernelLine`` as its handshake sees it (``HandshakeLine``): open once a request
    sent when the flush timers were due is answered on shell and its status heard by the
    watch."""

    def __init__(self, line: KernelLine) -> None:
        self.line = line
        self._answered_at: float | None = None

    async def answering(self) -> bool:
        return await self.line._answering()

    def held_until(self, now: float) -> float | None:
        line = self.line
        if line._info_reply.is_set():
            self._answered_at = now if self._answered_at is None else self._answered_at
            if line._watch is not line._own_watch and now - self._answered_at >= WATCH_GRACE:
                line.log.warning("execute: the kernel manager's watch heard nothing")
                line._watch = line._own_watch
        return line._watch.flushes.due(line._kernel_session)

    def send_kernel_info(self) -> str:
        return self.line._send_kernel_info()

    async def opened(self, request: str | None, until: float) -> bool:
        loop = asyncio.get_running_loop()
        if request is None:
            await asyncio.sleep(until - loop.time())
            return False
        sent_at = loop.time()
        line = self.line
        heard = line._watch.await_status(request)
        try:
            await asyncio.wait_for(self._answered(heard), max(until - sent_at, 0.0))
        except TimeoutError:
            return False
        finally:
            line._watch.forget(request)
        due = line._watch.flushes.due(line._kernel_session)
        return due is not None and sent_at >= due

    async def _answered(self, heard: asyncio.Event) -> None:
        await self.line._info_reply.wait()
        await self.line._iopub_live.wait()
        await heard.wait()

    def unanswered(self, timeout: float) -> Exception:
        return KernelDied(f"the kernel did not answer within {timeout:g} s")

    def gone(self) -> Exception:
        return KernelDied("the kernel is not running")


class KernelConnection(KernelLine):
    """Shell and iopub channels of the server's own zmq client to a kernel on this machine.

    Use ``open`` (it returns once iopub is known to deliver, so no output of the first cell is
    lost) and ``close``.
    """

    def __init__(
        self, kernel: KernelProcess, log: logging.Logger, watch: StreamWatch | None = None
    ) -> None:
        super().__init__(kernel, log, watch)
        self._process = process_of(kernel)
        self.client = AsyncKernelClient(context=zmq.asyncio.Context())
        self.client.load_connection_info(dict(kernel.get_connection_info()))
        # Unbounded receive queues: a kernel printing faster than the room takes its output in
        # must not have its messages dropped.
        self.client.context.setsockopt(zmq.RCVHWM, 0)
        self._readers: list[asyncio.Task[None]] = []
        self._reading = True

    async def _start(self, timeout: float) -> None:
        self.client.start_channels(shell=True, iopub=True, stdin=False, hb=False, control=False)
        for channel in (self.client.shell_channel, self.client.iopub_channel):
            self._readers.append(detached_task(self._read(channel)))
        # A SUB socket receives nothing until its subscription reaches the kernel.
        await self._handshake(timeout, HANDSHAKE_RESEND)

    def _send_kernel_info(self) -> str:
        return str(self.client.kernel_info())

    async def _answering(self) -> bool:
        return bool(await self.kernel.is_alive())

    def _transport_is_current(self) -> bool:
        """A restart starts a new process: a new subscription must be made and proven."""
        return process_of(self.kernel) is self._process

    def _send_execute(self, code: str) -> str:
        message = self.client.session.msg(
            "execute_request", execute_request(code, stop_on_error=True)
        )
        self.client.shell_channel.send(message)
        return str(message["header"]["msg_id"])

    async def close(self) -> None:
        self._reading = False
        for reader in self._readers:
            reader.cancel()
        for reader in self._readers:
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        self._readers.clear()
        self.client.stop_channels()
        self.client.context.destroy(linger=0)

    async def _read(self, channel: AsyncZMQSocketChannel) -> None:
        """Read one channel for as long as the connection lives.

        Each receive gives up after ``LIVENESS_INTERVAL`` and starts again: zmq wakes a waiting
        reader on an edge, and one consumed by a send on the same socket (the shell channel
        sends while its reader waits) would leave a reply unread, and its run waiting forever.
        A new receive looks at the socket first.

        The loop ends on ``_reading`` turning False, not only on cancellation: ``wait_for`` on
        Python 3.11 returns a receive that completed as it was cancelled and swallows the
        cancellation, and a reader that went on would wait on sockets ``close`` then destroys.
        """
        shell = channel is self.client.shell_channel
        session = self.client.session
        assert channel.socket is not None
        while self._reading:
            try:
                first = await asyncio.wait_for(channel.socket.recv_multipart(), LIVENESS_INTERVAL)
            except TimeoutError:
                continue
            received = [first]
            with contextlib.suppress(zmq.Again):
                while len(received) < READ_TOGETHER:
                    received.append(await channel.socket.recv_multipart(flags=zmq.NOBLOCK))
            messages = []
            for frames in received:
                try:
                    _, frames = session.feed_identities(frames)
                    messages.append(session.deserialize(frames))
                except Exception:  # one bad message must not stop the reading: runs would hang
                    self.log.exception("execute: a kernel message could not be read")
            self._dispatch(messages, shell=shell)
