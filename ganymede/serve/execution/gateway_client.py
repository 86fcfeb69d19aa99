"""The server's own line to a kernel that lives behind a Jupyter kernel gateway.

Such a kernel has no zmq ports on this machine: the gateway speaks for it over its kernel
websocket (``/api/kernels/{id}/channels``, the JSON form of the kernel protocol). The server opens
a websocket of its own with a session of its own, so the gateway routes the shell replies of its
runs to it alone, as a local kernel's would. Messages that arrive within one turn of the event loop
are handed over together, as the zmq line does with waiting messages. A ``starting``,
``restarting`` or ``dead`` status after the handshake means the kernel behind the gateway is not
the one that was asked: runs in flight end as for a restarted local kernel, and the next batch opens
a new line. The gateway's kernel's start-up is heard here only by a line opened while it starts:
otherwise the line's first cell waits one stream flush interval after the first status the line
heard (``ganymede.serve.kernels.stream_watch``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from jupyter_client.session import Session
from jupyter_server.gateway.gateway_client import GatewayClient
from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

from ganymede.core.kernel_wire import (
    channels_url,
    decode_frame,
    encode_message,
    execute_request,
)
from ganymede.errors import KernelDied
from ganymede.serve.execution.kernel_client import KernelLine, KernelProcess
from ganymede.serve.kernels.stream_watch import StreamWatch

HANDSHAKE_RESEND = 1.0
"""Seconds between ``kernel_info`` requests until the gateway's kernel answers on both channels."""
ALIVE_CHECK_INTERVAL = 5.0
"""At most one liveness request to the gateway per this many seconds of a long run."""
MAX_MESSAGE_BYTES = 1 << 30
"""A kernel's output is not cut by the websocket: the room applies its own limits."""
KERNEL_REPLACED = frozenset({"starting", "restarting", "dead"})


class GatewayKernel(KernelProcess, Protocol):
    """What is needed of jupyter_server's ``GatewayKernelManager`` for one kernel."""

    kernel_id: str | None


class GatewayKernelConnection(KernelLine):
    """A websocket to the gateway's kernel, and the executions waiting on it.

    Use ``open`` (it returns once the kernel answered on shell and iopub) and ``close``.
    """

    def __init__(
        self, kernel: GatewayKernel, log: logging.Logger, watch: StreamWatch | None = None
    ) -> None:
        super().__init__(kernel, log, watch)
        self.kernel_id = str(kernel.kernel_id)
        self.session = Session(username="ganymede")
        self._socket: WebSocketClientConnection | None = None
        self._arrived: list[Mapping[str, Any]] = []
        self._closed = False
        self._replaced = False
        self._alive_checked_at = 0.0

    async def _start(self, timeout: float) -> None:
        gateway = GatewayClient.instance()
        url = channels_url(
            gateway.ws_url or "", gateway.kernels_endpoint, self.kernel_id, self.session.session
        )
        request = HTTPRequest(url, **gateway.load_connection_args())
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            self._socket = await asyncio.wait_for(
                websocket_connect(
                    request,
                    on_message_callback=self._on_frame,
                    max_message_size=MAX_MESSAGE_BYTES,
                ),
                timeout,
            )
        except Exception as error:
            raise KernelDied(f"the gateway's kernel could not be reached: {error}") from error
        await self._handshake(max(deadline - loop.time(), 0.0), HANDSHAKE_RESEND)

    def _send_kernel_info(self) -> str:
        return self._send("shell", "kernel_info_request", {})

    async def _answering(self) -> bool:
        """The websocket is open: asking the gateway itself would cost a request per resend."""
        return not self._closed

    def _transport_is_current(self) -> bool:
        return not (self._closed or self._replaced)

    async def _alive(self) -> bool:
        """Asks the gateway itself only now and then: a closed websocket or a restart status
        already says the kernel is gone."""
        if not self.is_current:
            return False
        now = asyncio.get_running_loop().time()
        if now - self._alive_checked_at < ALIVE_CHECK_INTERVAL:
            return True
        self._alive_checked_at = now
        return await self.kernel.is_alive()

    async def close(self) -> None:
        self._closed = True
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def _send_execute(self, code: str) -> str:
        return self._send("shell", "execute_request", execute_request(code, stop_on_error=True))

    def _send(self, channel: str, msg_type: str, content: dict[str, Any]) -> str:
        if self._socket is None or self._closed:
            raise KernelDied("the connection to the gateway's kernel is closed")
        msg_id, frame = encode_message(self.session, channel, msg_type, content)
        self._socket.write_message(frame)
        return msg_id

    def _on_frame(self, frame: str | bytes | None) -> None:
        """Queue one message; the first of a turn schedules the hand-over of them all."""
        if frame is None:
            self._closed = True
            return
        try:
            message = decode_frame(frame)
        except Exception:  # one bad message must not stop the reading: runs would hang
            self.log.exception("execute: a message from the gateway could not be read")
            return
        if not self._arrived:
            asyncio.get_running_loop().call_soon(self._hand_over_arrived)
        self._arrived.append(message)

    def _hand_over_arrived(self) -> None:
        arrived, self._arrived = self._arrived, []
        shell: list[Mapping[str, Any]] = []
        iopub: list[Mapping[str, Any]] = []
        for message in arrived:
            channel = message.get("channel")
            if channel == "shell":
                shell.append(message)
            elif channel == "iopub":
                iopub.append(message)
                self._note_replacement(message)
        if shell:
            self._dispatch(shell, shell=True)
        if iopub:
            self._dispatch(iopub, shell=False)

    def _note_replacement(self, message: Mapping[str, Any]) -> None:
        status = message.get("msg_type") == "status"
        if (
            self._handshaken
            and status
            and message["content"].get("execution_state") in KERNEL_REPLACED
        ):
            self._replaced = True
