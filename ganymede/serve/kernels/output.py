"""A kernel websocket that drops output its client cannot take, rather than queueing it forever.

jupyter_server writes every kernel message straight into the websocket's stream. Its iopub rate
limits cap messages and bytes per second, not what is waiting: a client that stops reading (a
frozen tab, a stalled link) lets the stream's write buffer grow without end while the kernel
prints. Here every write is counted until the stream has flushed it; once a client is
``[serve] client_queue_messages`` messages or ``max_body_size`` bytes behind, further iopub
messages to it are dropped, not written. The connection stays open: replies on shell and
control still go through, and output flows again as soon as the client catches up. Rooms get
every output regardless; only this client's live view misses some. Kernels on a gateway get the
same bound on what the server relays to their clients, and their rich outputs are recorded as
local kernels' are (``kernel_websocket``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from jupyter_server.gateway.connections import GatewayWebSocketConnection
from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection
from tornado.websocket import WebSocketClosedError

from ganymede.config import ServeConfig
from ganymede.serve.context import SETTINGS_KEY
from ganymede.trust.outputs import KernelOutputs


class OutputBacklog:
    """What was handed to a client's stream and not yet flushed, and what was dropped."""

    def __init__(self, max_messages: int, max_bytes: int) -> None:
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        self.messages = 0
        self.size = 0
        self.dropped = 0

    def full(self, size: int) -> bool:
        """Whether a message of ``size`` bytes would put the client past a limit."""
        return self.messages >= self.max_messages or self.size + size > self.max_bytes

    def written(self, size: int) -> None:
        self.messages += 1
        self.size += size

    def flushed(self, size: int) -> None:
        self.messages -= 1
        self.size -= size


class CountedWrites:
    """What a kernel websocket connection class adds to count its client's unflushed writes and
    drop iopub output past the bound (mixed into jupyter_server's local and gateway classes)."""

    websocket_handler: Any
    kernel_id: str
    log: Any
    _backlog: OutputBacklog | None = None

    @property
    def backlog(self) -> OutputBacklog:
        if self._backlog is None:
            serve = _serve_config(self.websocket_handler.settings)
            self._backlog = OutputBacklog(serve.client_queue_messages, serve.max_body_size)
        return self._backlog

    def _write_counted(self, message: bytes | str, binary: bool = False) -> Any:
        size = len(message)
        written = self.websocket_handler.write_message(message, binary=binary)
        backlog = self.backlog
        backlog.written(size)

        def flushed(done: asyncio.Future[None]) -> None:
            backlog.flushed(size)
            if not done.cancelled():
                done.exception()  # a closed socket: nothing more to flush, nothing to report

        written.add_done_callback(flushed)
        return written

    def _admits_output(self, size: int) -> bool:
        """Whether an iopub message of ``size`` bytes goes to the client (else it is dropped)."""
        backlog = self.backlog
        if backlog.full(size):
            if backlog.dropped == 0:
                self.log.warning(
                    "kernel %s: a client is %d messages (%d bytes) behind; dropping its "
                    "output until it catches up",
                    self.kernel_id,
                    backlog.messages,
                    backlog.size,
                )
            backlog.dropped += 1
            return False
        if backlog.dropped:
            self.log.warning(
                "kernel %s: a client caught up; %d output messages were dropped for it",
                self.kernel_id,
                backlog.dropped,
            )
            backlog.dropped = 0
        return True


class BoundedOutputConnection(CountedWrites, ZMQChannelsWebsocketConnection):
    """jupyter_server's kernel websocket, with its client's unflushed output bounded."""

    @property
    def write_message(self) -> Any:
        """jupyter_server writes every message through this: each is counted until flushed."""
        return self._write_counted

    def handle_outgoing_message(self, stream: Any, outgoing_msg: list[Any]) -> None:
        channel = stream if isinstance(stream, str) else getattr(stream, "channel", None)
        if channel == "iopub" and not self._admits_output(sum(len(p) for p in outgoing_msg)):
            return
        super().handle_outgoing_message(stream, outgoing_msg)


class BoundedGatewayConnection(CountedWrites, GatewayWebSocketConnection):
    """A gateway kernel's websocket, bounded alike: the gateway relays each message as JSON
    text, whose ``channel`` says whether it is output. Its rich outputs are recorded."""

    def handle_outgoing_message(self, incoming_msg: str, *args: Any) -> None:
        message = _decoded(incoming_msg)
        if message.get("channel") == "iopub":
            if not self._admits_output(len(incoming_msg)):
                return
            seen = kernel_outputs_of(self.websocket_handler.settings)
            header, content = message.get("header"), message.get("content")
            if seen is not None and isinstance(header, dict) and isinstance(content, dict):
                seen.saw(str(header.get("msg_type", "")), content)
        with contextlib.suppress(WebSocketClosedError):  # the client is gone: nothing to bound
            self._write_counted(incoming_msg)


def kernel_outputs_of(settings: dict[str, Any]) -> KernelOutputs | None:
    """Where a kernel websocket records the rich outputs it passes on (None: Ganymede's
    extension is not loaded, and no room reads them)."""
    context = settings.get(SETTINGS_KEY)
    return context.kernel_outputs if context is not None else None


def _decoded(message: str | bytes) -> dict[str, Any]:
    """A relayed message's JSON ({}: not the JSON text a gateway relays, let it through)."""
    if not isinstance(message, str):
        return {}
    try:
        decoded = json.loads(message)
    except json.JSONDecodeError:
        return {}
    return decoded if isinstance(decoded, dict) else {}


def _serve_config(settings: dict[str, Any]) -> ServeConfig:
    """The ``[serve]`` limits, or their defaults when Ganymede's extension is not loaded."""
    context = settings.get(SETTINGS_KEY)
    return context.config.serve if context is not None else ServeConfig()
