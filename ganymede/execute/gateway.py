"""A run's kernel on a Jupyter Kernel Gateway or Enterprise Gateway: CI that outgrows one machine.

The gateway starts the kernel (``POST /api/kernels``), carries its messages over the kernel
websocket (``/api/kernels/{id}/channels``), interrupts it (``POST …/interrupt``) and ends it
(``DELETE``). The runner drives it as it drives a local kernel (``RunKernel``): the same
handshake, the same waits for a cell's reply and idle. The run's environment goes in the start
request; a Kernel Gateway passes on only ``KERNEL_*`` names and those it allows
(``--JupyterWebsocketPersonality.env_whitelist``), so ``GANYMEDE_PARAMS`` reaches the kernel only
where the gateway lets it (the injected parameters cell does not need it).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import httpx
from jupyter_client.session import Session
from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

from ganymede.core.kernel_wire import channels_url, decode_frame, encode_message, websocket_base
from ganymede.errors import KernelDied
from ganymede.execute.kernel import Done, Gateway, KernelLaunch, MessageHandler, RunKernel

KERNELS_ENDPOINT = "/api/kernels"
ALIVE_CHECK_INTERVAL = 1.0
"""At most one liveness request to the gateway per this many seconds of a long cell."""
MAX_MESSAGE_BYTES = 1 << 30
"""A kernel's output is not cut by the websocket."""
DELETE_RETRY_SECONDS = 30.0
"""How long a kernel's delete is asked again while the gateway fails it (a restart under way)."""
DELETE_RETRY_INTERVAL = 0.2
KERNEL_GONE = frozenset({"restarting", "dead"})
"""Statuses after which the gateway's kernel is not the one the run started."""


class GatewayKernel(RunKernel):
    """A kernel the gateway runs, and the websocket the run talks to it on."""

    manager = None

    def __init__(
        self, gateway: Gateway, kernel_id: str, http: httpx.AsyncClient, session: Session
    ) -> None:
        super().__init__()
        self.gateway = gateway
        self.kernel_id = kernel_id
        self.http = http
        self.session = session
        self.socket: WebSocketClientConnection | None = None
        self._inbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._gone: str | None = None
        self._alive_checked_at = 0.0

    @classmethod
    async def start(cls, launch: KernelLaunch, startup_timeout: float) -> GatewayKernel:
        """A kernel on the launch's gateway that has answered ``kernel_info``; KernelDied with
        the gateway's reason if it can't be started or reached."""
        gateway = launch.gateway
        assert gateway is not None
        headers = {"Authorization": f"token {gateway.token}"} if gateway.token else {}
        http = httpx.AsyncClient(
            base_url=gateway.url.rstrip("/"), headers=headers, timeout=startup_timeout
        )
        creating = asyncio.ensure_future(_create(http, gateway, launch))
        try:
            kernel_id = await asyncio.shield(creating)
        except BaseException:
            # Cancelled (a warmed kernel no longer wanted) while the gateway was starting it:
            # wait for its id so that it is deleted, not left running there.
            with contextlib.suppress(Exception):
                await _delete(http, _kernel_path(await creating))
            await http.aclose()
            raise
        kernel = cls(gateway, kernel_id, http, Session(username="ganymede"))
        try:
            await kernel._connect(startup_timeout)
            await kernel._handshake(launch.kernel_name, startup_timeout)
        except BaseException:
            await asyncio.shield(kernel.kill())
            raise
        return kernel

    async def _connect(self, timeout: float) -> None:
        url = channels_url(
            websocket_base(self.gateway.url), KERNELS_ENDPOINT, self.kernel_id, self.session.session
        )
        request = HTTPRequest(url, headers=dict(self.http.headers))
        try:
            self.socket = await asyncio.wait_for(
                websocket_connect(
                    request, on_message_callback=self._on_frame, max_message_size=MAX_MESSAGE_BYTES
                ),
                timeout,
            )
        except (OSError, TimeoutError, ValueError) as error:
            raise KernelDied(
                f"gateway {self.gateway.url}: the kernel's channels could not be opened: {error}"
            ) from None

    def _on_frame(self, frame: str | bytes | None) -> None:
        if frame is None:
            self._inbox.put_nowait(None)
            return
        with contextlib.suppress(ValueError):  # not a message: nothing waits for it
            self._inbox.put_nowait(decode_frame(frame))

    def _send(self, msg_type: str, content: dict[str, Any]) -> str:
        if self.socket is None or self._gone is not None:
            raise KernelDied(f"the gateway's kernel is gone ({self._death_note()})")
        msg_id, frame = encode_message(self.session, "shell", msg_type, content)
        self.socket.write_message(frame)
        return msg_id

    async def _receive(self, on_message: MessageHandler, *, until: float, done: Done) -> None:
        loop = asyncio.get_running_loop()
        while not done():
            try:
                message = self._inbox.get_nowait()
            except asyncio.QueueEmpty:
                remaining = until - loop.time()
                if remaining <= 0:
                    return
                try:
                    message = await asyncio.wait_for(self._inbox.get(), remaining)
                except TimeoutError:
                    return
            if message is None:
                self._gone = self._gone or "the gateway closed the kernel's channels"
                return
            channel = message.get("channel")
            if channel in ("shell", "iopub"):
                self._note_status(message)
                on_message(channel, message)
            if loop.time() >= until:
                return

    def _note_status(self, message: Mapping[str, Any]) -> None:
        if message.get("msg_type") == "status":
            state = message.get("content", {}).get("execution_state")
            if state in KERNEL_GONE:
                self._gone = f"the gateway reports the kernel {state}"

    async def _alive(self) -> bool:
        """A closed websocket or a dead status already says so; the gateway is asked only now
        and then."""
        if self._gone is not None:
            return False
        now = asyncio.get_running_loop().time()
        if now - self._alive_checked_at < ALIVE_CHECK_INTERVAL:
            return True
        self._alive_checked_at = now
        try:
            response = await self.http.get(self._kernel_path())
        except httpx.HTTPError as error:
            self._gone = f"gateway {self.gateway.url} unreachable: {error}"
            return False
        if response.status_code == httpx.codes.NOT_FOUND:
            self._gone = "the gateway no longer has the kernel"
            return False
        return True

    def _death_note(self) -> str:
        return self._gone or "the gateway's kernel is gone"

    async def interrupt(self) -> None:
        if self._gone is not None:
            return
        with contextlib.suppress(httpx.HTTPError):
            await self.http.post(f"{self._kernel_path()}/interrupt")

    async def kill(self) -> None:
        """Close the channels and have the gateway delete the kernel (it may be gone already)."""
        if self.socket is not None:
            self.socket.close()
            self.socket = None
        try:
            with contextlib.suppress(httpx.HTTPError):
                await _delete(self.http, self._kernel_path())
        finally:
            await self.http.aclose()

    def _kernel_path(self) -> str:
        return _kernel_path(self.kernel_id)


async def _delete(http: httpx.AsyncClient, kernel_path: str) -> None:
    """Delete a kernel, asking again while the gateway fails the request.

    A kernel that died is restarted by the gateway's own restarter, and a delete that lands
    while that restart is under way fails there (jupyter_server answers 500); once the restart
    is done the kernel would run on, idle and forgotten, unless it is asked for again.
    """
    deadline = asyncio.get_running_loop().time() + DELETE_RETRY_SECONDS
    while True:
        response = await http.delete(kernel_path)
        if response.status_code < httpx.codes.INTERNAL_SERVER_ERROR:
            return  # deleted, or already gone (404)
        if asyncio.get_running_loop().time() >= deadline:
            return
        await asyncio.sleep(DELETE_RETRY_INTERVAL)


def _kernel_path(kernel_id: str) -> str:
    return f"{KERNELS_ENDPOINT}/{quote(kernel_id, safe='')}"


async def _create(http: httpx.AsyncClient, gateway: Gateway, launch: KernelLaunch) -> str:
    """Ask the gateway for a kernel; its id."""
    body = {"name": launch.kernel_name, "env": dict(launch.env)}
    try:
        response = await http.post(KERNELS_ENDPOINT, json=body)
    except httpx.HTTPError as error:
        raise KernelDied(f"gateway {gateway.url} cannot be reached: {error}") from None
    if response.status_code != httpx.codes.CREATED and not response.is_success:
        raise KernelDied(
            f"gateway {gateway.url} could not start kernel {launch.kernel_name}: "
            f"{response.status_code} {_reason(response)}"
        )
    try:
        return str(response.json()["id"])
    except (ValueError, KeyError, TypeError):
        raise KernelDied(f"gateway {gateway.url} answered without a kernel id") from None


def _reason(response: httpx.Response) -> str:
    """The gateway's own words for a refusal (jupyter_server's JSON ``message``)."""
    try:
        body = response.json()
    except ValueError:
        return response.reason_phrase
    if isinstance(body, dict):
        return str(body.get("message") or body.get("reason") or response.reason_phrase)
    return response.reason_phrase
