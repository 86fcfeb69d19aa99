"""A kernel websocket that drops output its client cannot take, rather than queueing it forever.

jupyter_server writes every kernel message straight into the websocket's stream. Its iopub rate
limits cap messages and bytes per second, not what is waiting: a client that stops reading (a
frozen tab, a stalled link) lets the stream's write buffer grow without end while the kernel
prints. Here every write is counted until the stream has flushed it; once a client is
``[serve] client_queue_messages`` messages or ``max_body_size`` bytes behind, further iopub
messages to it are dropped, not written. The connection stays open: replies on shell and
control still go through, and output flows again as soon as the client catches up. Rooms get
every output regardless; only this client's live view misses some.
"""

from __future__ import annotations

import asyncio
from typing import Any

from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection

from ganymede.config import ServeConfig
from ganymede.serve.context import SETTINGS_KEY


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


class BoundedOutputConnection(ZMQChannelsWebsocketConnection):
    """jupyter_server's kernel websocket, with its client's unflushed output bounded."""

    _backlog: OutputBacklog | None = None

    @property
    def backlog(self) -> OutputBacklog:
        if self._backlog is None:
            serve = _serve_config(self.websocket_handler.settings)
            self._backlog = OutputBacklog(serve.client_queue_messages, serve.max_body_size)
        return self._backlog

    @property
    def write_message(self) -> Any:
        """jupyter_server writes every message through this: each is counted until flushed."""
        return self._write_counted

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

    def handle_outgoing_message(self, stream: Any, outgoing_msg: list[Any]) -> None:
        channel = stream if isinstance(stream, str) else getattr(stream, "channel", None)
        if channel == "iopub":
            size = sum(len(part) for part in outgoing_msg)
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
                return
            if backlog.dropped:
                self.log.warning(
                    "kernel %s: a client caught up; %d output messages were dropped for it",
                    self.kernel_id,
                    backlog.dropped,
                )
                backlog.dropped = 0
        super().handle_outgoing_message(stream, outgoing_msg)


def _serve_config(settings: dict[str, Any]) -> ServeConfig:
    """The ``[serve]`` limits, or their defaults when Ganymede's extension is not loaded."""
    context = settings.get(SETTINGS_KEY)
    return context.config.serve if context is not None else ServeConfig()
