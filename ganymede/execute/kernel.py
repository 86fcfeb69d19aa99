"""One kernel process for one run: start it fast, feed it cells, notice its death, kill it.

Start-up dominates short runs, so this skips the fixed waits of ``wait_for_ready``: it asks for
``kernel_info`` every ``HANDSHAKE_RESEND`` seconds until the shell answers and iopub has delivered a
message (which proves the subscription is live, so no output of the first cell is lost), and
hands over the first cell only once the stream flush timers the kernel's start-up armed have
fired (``ganymede.core.stream_flushes``), so that cell's outputs keep the order it wrote them
in. The IPC transport gives each kernel socket files in its own private directory: no TCP port
races between kernels started side by side.

``RunKernel`` holds those rules whatever carries the messages; ``Kernel`` is a process on this
machine over zmq, ``gateway.GatewayKernel`` one on a Jupyter kernel gateway over its websocket;
``kernel_start.start_kernel`` picks between them.
"""

from __future__ import annotations

import abc
import asyncio
import math
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zmq
import zmq.asyncio
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from jupyter_client.kernelspec import NATIVE_KERNEL_NAME
from jupyter_client.manager import AsyncKernelManager

from ganymede.core.kernel_handshake import handshake
from ganymede.core.kernel_wire import execute_request
from ganymede.core.stream_flushes import StreamFlushes, quiet_start
from ganymede.errors import KernelDied, RunTimeout, UsageError
from ganymede.execute.kernelspecs import KernelSpecs
from ganymede.execute.timings import CellTimings

HANDSHAKE_RESEND = 0.1
SUBSCRIBE_RETRY_MS = 10
LIVENESS_INTERVAL = 0.2
EXIT_POLL_INTERVAL = 0.005
EXIT_WAIT_LIMIT = 5.0
IOPUB_GRACE = 4.0
"""Seconds of iopub silence after a cell's reply before its outputs are taken as they are."""

HISTORY_IN_MEMORY = "--HistoryManager.hist_file=:memory:"
"""As nbclient starts IPython kernels: a headless run writes nothing to the user's history."""

IopubHandler = Callable[[Mapping[str, Any]], None]
"""Given each iopub message of the cell's request (header, content, buffers)."""
MessageHandler = Callable[[str, Mapping[str, Any]], None]
Done = Callable[[], bool]


def resolved_kernel_name(name: str) -> str:
    """The kernel jupyter_client starts for ``name``: its KernelManager takes ``python`` for the
    native kernel (``python3``), so notebooks whose kernelspec says ``python`` run under every
    Jupyter tool, and must here too."""
    return NATIVE_KERNEL_NAME if name == "python" else name


@dataclass(frozen=True)
class Executed:
    """A cell's ``execute_reply`` content, and whether all of its outputs are known to be in."""

    reply: dict[str, Any]
    outputs_complete: bool
    timings: dict[str, str] = field(default_factory=dict)
    """nbclient's ``metadata.execution`` stamps of the request (see ``timings``)."""
    interrupted: bool = False
    """The cell outran its timeout and was interrupted (its reply says KeyboardInterrupt)."""


@dataclass(frozen=True)
class KernelLaunch:
    """What a kernel is started with; a run's parameters live in ``env``."""

    kernel_name: str
    cwd: Path
    env: Mapping[str, str] = field(default_factory=dict)
    gateway: Gateway | None = None
    """Start the kernel on this Jupyter kernel gateway instead of on this machine."""


@dataclass(frozen=True)
class Gateway:
    """A Jupyter Kernel Gateway or Enterprise Gateway the kernels of a run live on."""

    url: str
    """Its base URL, as jupyter_server's ``GatewayClient.url`` (``http://host:8888``)."""
    token: str | None = None
    """Sent as ``Authorization: token …``, as jupyter_server's ``GatewayClient`` sends it."""


def gateway_at(url: str | None, token: str | None) -> Gateway | None:
    """The gateway a run's kernels go to, as given (``--gateway-url``, ``[execute] gateway_url``);
    None for none. UsageError for a URL that is not http(s)."""
    if not url:
        return None
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"gateway URL {url}: give an http:// or https:// URL")
    return Gateway(url.rstrip("/"), token or None)


class RunKernel(abc.ABC):
    """A started kernel as the runner drives it, whatever carries its messages.

    The handshake and the execution rules live here; a transport sends requests, hands every
    message it reads (shell and iopub) to a handler, and says whether the kernel lives.
    """

    manager: AsyncKernelManager | None
    """The local kernel manager (a host comm attaches to it); None for a gateway's kernel."""

    def __init__(self) -> None:
        self.info: dict[str, Any] = {}

    @abc.abstractmethod
    def _send(self, msg_type: str, content: dict[str, Any]) -> str:
        """Send a shell request; its msg_id."""

    @abc.abstractmethod
    async def _receive(self, on_message: MessageHandler, *, until: float, done: Done) -> None:
        """Hand arriving messages to ``on_message`` until ``done()`` or ``until`` (loop time).

        Returning at ``until`` even while messages keep coming lets the caller check the
        deadline and the kernel's pulse during a flood of output.
        """

    @abc.abstractmethod
    async def _alive(self) -> bool: ...

    @abc.abstractmethod
    def _death_note(self) -> str:
        """Why the kernel is gone, for an error message (``exit code 1``)."""

    @abc.abstractmethod
    async def interrupt(self) -> None: ...

    @abc.abstractmethod
    async def kill(self) -> None:
        """End the kernel at once and release what it held."""

    async def _handshake(self, kernel_name: str, startup_timeout: float) -> None:
        """Wait until the kernel answers ``kernel_info``, its iopub is live, and the stream
        flush timers it armed have fired (see ``ganymede.core.stream_flushes``).

        The last wait keeps the first cell's outputs in order: a write while the kernel
        started (debugpy's warning about frozen modules, which ``quiet_start`` silences; an
        IPython startup file that prints) leaves a timer that would publish the cell's stderr
        ahead of its stdout. It is paid only when the iopub subscription heard such a write,
        or did not hear the start-up at all (as jupyter_client's ``wait_for_ready`` waits
        0.2 s of iopub quiet every time); iopub retries its connect every
        ``SUBSCRIBE_RETRY_MS`` so that it does hear it.
        """
        line = _StartingKernel(self, kernel_name)
        await handshake(line, startup_timeout, HANDSHAKE_RESEND)
        assert line.reply is not None
        self.info = dict(line.reply)

    async def execute(
        self,
        code: str,
        on_iopub: IopubHandler,
        *,
        timeout: float | None,
        stop_on_error: bool,
        interrupt_on_timeout: bool = False,
    ) -> Executed:
        """Run ``code``; done once its ``execute_reply`` AND its iopub ``idle`` are in.

        Waiting for both is what makes the outputs complete: the reply can overtake the last
        outputs, which travel on another socket. iopub may still drop messages (a kernel
        publishing faster than anyone reads), so after the reply, ``IOPUB_GRACE`` seconds
        without a word on iopub end the wait rather than hang. ``allow_stdin`` is off, so
        ``input()`` raises StdinNotImplementedError in the kernel instead of waiting forever.
        Past ``timeout``, RunTimeout; with ``interrupt_on_timeout`` the kernel is interrupted
        first and the cell gets ``timeout`` more seconds to answer with its KeyboardInterrupt.
        """
        msg_id = self._send("execute_request", execute_request(code, stop_on_error=stop_on_error))
        loop = asyncio.get_running_loop()
        reply: dict[str, Any] | None = None
        idle = False
        last_heard = loop.time()
        timings = CellTimings()
        interrupted = False

        def on_message(channel: str, message: Mapping[str, Any]) -> None:
            nonlocal reply, idle, last_heard
            if message["parent_header"].get("msg_id") != msg_id:
                return
            last_heard = loop.time()
            timings.observe(channel, message)
            msg_type = message["msg_type"]
            if channel == "shell":
                if msg_type == "execute_reply":
                    reply = dict(message["content"])
            elif msg_type == "status":
                idle = idle or message["content"].get("execution_state") == "idle"
            else:
                on_iopub(message)

        def finished() -> bool:
            return reply is not None and idle

        deadline = None if timeout is None else loop.time() + timeout
        while not finished():
            if deadline is not None and timeout is not None and loop.time() >= deadline:
                if not interrupt_on_timeout or interrupted:
                    raise RunTimeout(f"ran longer than {timeout:g} s")
                await self.interrupt()
                interrupted = True
                deadline = loop.time() + timeout
            check_at = loop.time() + LIVENESS_INTERVAL
            if deadline is not None:
                check_at = min(check_at, deadline)
            await self._receive(on_message, until=check_at, done=finished)
            if finished():
                break
            if reply is not None and loop.time() - last_heard >= IOPUB_GRACE:
                return Executed(reply, False, timings.stamps, interrupted)
            if not await self._alive():
                # what it printed before dying is already in the sockets: keep it
                await self._receive(on_message, until=loop.time(), done=finished)
                raise KernelDied(f"the kernel died ({self._death_note()})")
        assert reply is not None
        return Executed(reply, True, timings.stamps, interrupted)

    def send_comm(self, comm_id: str, data: Mapping[str, Any]) -> None:
        """A ``comm_msg`` to the kernel on shell, as a front end sends one to a widget."""
        self._send("comm_msg", {"comm_id": comm_id, "data": dict(data)})


class _StartingKernel:
    """A ``RunKernel`` as its handshake sees it (``HandshakeLine``): it is open once a status
    came back on iopub for a request sent when the flush timers the kernel armed were due."""

    def __init__(self, kernel: RunKernel, kernel_name: str) -> None:
        self.kernel = kernel
        self.kernel_name = kernel_name
        self.reply: Mapping[str, Any] | None = None
        self._session: str | None = None
        self._flushes = StreamFlushes()
        self._sent_at: dict[str, float] = {}
        self._seen_after = -math.inf
        """When the latest request whose status came back on iopub was sent."""

    async def answering(self) -> bool:
        return await self.kernel._alive()

    def held_until(self, now: float) -> float | None:
        due = self._flushes.due(self._session)
        return None if self.reply is None else due

    def send_kernel_info(self) -> str:
        return self.kernel._send("kernel_info_request", {})

    async def opened(self, request: str | None, until: float) -> bool:
        loop = asyncio.get_running_loop()
        if request is not None:
            self._sent_at[request] = loop.time()
        await self.kernel._receive(self._hear, until=until, done=self._settled)
        return self._settled()

    def unanswered(self, timeout: float) -> Exception:
        return KernelDied(
            f"kernel {self.kernel_name} did not answer within {timeout:g} s of starting"
        )

    def gone(self) -> Exception:
        return KernelDied(
            f"kernel {self.kernel_name} exited while starting ({self.kernel._death_note()})"
        )

    def _hear(self, channel: str, message: Mapping[str, Any]) -> None:
        if channel == "iopub":
            self._flushes.hear(message, asyncio.get_running_loop().time())
            request = message["parent_header"].get("msg_id")
            self._seen_after = max(self._seen_after, self._sent_at.get(request, -math.inf))
        elif message["msg_type"] == "kernel_info_reply" and self.reply is None:
            self.reply = message["content"]
            self._session = message["header"].get("session")

    def _settled(self) -> bool:
        due = self._flushes.due(self._session)
        return self.reply is not None and due is not None and self._seen_after >= due


class Kernel(RunKernel):
    """A kernel process on this machine and the shell and iopub channels the runner uses."""

    def __init__(self, manager: AsyncKernelManager, client: AsyncKernelClient, home: Path) -> None:
        super().__init__()
        self.manager: AsyncKernelManager = manager
        self.client = client
        self.home = home
        self._poller = zmq.asyncio.Poller()
        self._channels: dict[zmq.Socket[Any], tuple[str, AsyncZMQSocketChannel]] = {}
        for name, channel in (("shell", client.shell_channel), ("iopub", client.iopub_channel)):
            self._poller.register(channel.socket, zmq.POLLIN)
            self._channels[channel.socket] = (name, channel)

    @classmethod
    async def start(cls, launch: KernelLaunch, startup_timeout: float) -> Kernel:
        """A kernel that has answered ``kernel_info``; KernelDied if it can't get there in time."""
        home = Path(tempfile.mkdtemp(prefix="ganymede-kernel-"))
        manager = AsyncKernelManager(
            kernel_name=launch.kernel_name,
            transport="ipc",
            ip=str(home / "ipc"),
            connection_file=str(home / "kernel.json"),
            kernel_spec_manager=KernelSpecs(),
        )
        env = quiet_start({**os.environ, **launch.env})
        extra = [HISTORY_IN_MEMORY] if _runs_ipykernel(manager) else []
        try:
            await manager.start_kernel(cwd=str(launch.cwd), env=env, extra_arguments=extra)
        except BaseException as error:
            if manager.has_kernel:
                await shut_down(manager)
            shutil.rmtree(home, ignore_errors=True)
            if isinstance(error, OSError):
                raise KernelDied(f"kernel {launch.kernel_name} could not start: {error}") from None
            raise
        client = manager.client()
        # Unbounded receive queue: with zmq's default of 1000, a kernel printing faster than
        # the runner reads would have its iopub messages dropped, its outputs cut short.
        client.context.setsockopt(zmq.RCVHWM, 0)
        # Retried every 10 ms rather than zmq's 100 until the kernel binds, iopub subscribes
        # before the kernel's start-up ends, so the handshake sees the start-up's stream flushes.
        client.context.setsockopt(zmq.RECONNECT_IVL, SUBSCRIBE_RETRY_MS)
        client.start_channels(shell=True, iopub=True, stdin=False, hb=False, control=False)
        kernel = cls(manager, client, home)
        try:
            await kernel._handshake(launch.kernel_name, startup_timeout)
        except BaseException:
            await kernel.kill()
            raise
        return kernel

    def _send(self, msg_type: str, content: dict[str, Any]) -> str:
        message = self.client.session.msg(msg_type, content)
        self.client.shell_channel.send(message)
        return str(message["header"]["msg_id"])

    async def _alive(self) -> bool:
        return await self.manager.is_alive()

    def _death_note(self) -> str:
        return f"exit code {self.exit_code()}"

    async def _receive(self, on_message: MessageHandler, *, until: float, done: Done) -> None:
        loop = asyncio.get_running_loop()
        session = self.client.session
        while not done():
            remaining_ms = max(0, int((until - loop.time()) * 1000))
            ready = await self._poller.poll(remaining_ms)
            if not ready:
                return
            for socket, _ in ready:
                name, channel = self._channels[socket]
                frames = await channel.socket.recv_multipart()
                _, frames = session.feed_identities(frames)
                on_message(name, session.deserialize(frames))
            if loop.time() >= until:
                return

    def exit_code(self) -> int | None:
        process = getattr(self.manager.provisioner, "process", None)
        return None if process is None else process.poll()

    async def interrupt(self) -> None:
        if await self.manager.is_alive():
            await self.manager.interrupt_kernel()

    async def kill(self) -> None:
        """Kill the kernel at once and remove its connection and socket files.

        The SIGKILL goes out first and its exit is polled finely, so ``shutdown_kernel`` finds
        the process gone and skips its own 0.1 s polling; nothing here waits for a graceful exit.
        """
        self.client.stop_channels()
        try:
            if await self.manager.is_alive():
                await self.manager.signal_kernel(signal.SIGKILL)
                await self._wait_for_exit()
            await shut_down(self.manager)
        finally:
            shutil.rmtree(self.home, ignore_errors=True)

    async def _wait_for_exit(self) -> None:
        loop = asyncio.get_running_loop()
        give_up_at = loop.time() + EXIT_WAIT_LIMIT
        while await self.manager.is_alive() and loop.time() < give_up_at:
            await asyncio.sleep(EXIT_POLL_INTERVAL)


async def shut_down(manager: AsyncKernelManager) -> None:
    """``shutdown_kernel(now=True)``, minus its signals to a kernel that has already exited.

    jupyter_client signals the kernel's process group (SIGINT, then SIGKILL) whenever it still
    holds the process, even one that has exited and been reaped. The group's number is then
    free, and on a busy machine a new session leader (another program's server, an MCP
    door) can have it by the time the signals go. Letting the provisioner wait for the exited
    process first makes it forget the process, so only the clean-up is left.
    """
    provisioner = manager.provisioner
    if provisioner is not None and await provisioner.poll() is not None:
        await provisioner.wait()
    await manager.shutdown_kernel(now=True)


def _runs_ipykernel(manager: AsyncKernelManager) -> bool:
    """Whether the kernel is IPython's, which takes IPython options on its command line (others
    may refuse to start on one). nbclient goes by the kernel's name alone; the spec's command
    also finds an IPython kernel installed under another name."""
    if manager.ipykernel:
        return True
    return any("ipykernel" in argument for argument in manager.kernel_spec.argv)
