"""The kernel websocket without the host comm: what every client of a served kernel receives.

jupyter_server forwards each kernel message to each websocket through
``handle_outgoing_message``; this connection class asks the kernel's host driver whether a
message is host traffic first, and drops it, or (for ``comm_info_reply``) re-signs it without the
host comm. Buffered messages replayed to a reconnecting client pass through the same method.
The rich outputs it passes on are recorded (``kernel_outputs_of``), so a room trusts them when
the client writes them into a notebook.
"""

from __future__ import annotations

from typing import Any

from jupyter_client.session import DELIM
from jupyter_server.gateway.connections import GatewayWebSocketConnection
from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection

from ganymede.host.iopub_filter import (
    CONTENT_NEEDED,
    HostTraffic,
    is_host_traffic,
    without_host_comms,
)
from ganymede.serve.kernels.output import (
    BoundedGatewayConnection,
    BoundedOutputConnection,
    kernel_outputs_of,
)
from ganymede.trust.outputs import RICH_MESSAGE_TYPES

HEADER, PARENT, METADATA, CONTENT = 1, 2, 3, 4
"""Where each part sits in a message after its identities (index 0 is the signature)."""


def host_traffic_of(kernel_manager: Any, kernel_id: str) -> HostTraffic | None:
    """The host traffic of a kernel, when the server's kernel manager drives its host comm."""
    drivers = getattr(kernel_manager, "host_drivers", None)
    return None if drivers is None else drivers.traffic(kernel_id)


class HostFilteringConnection(BoundedOutputConnection):
    """A kernel websocket that never shows its client the server's host traffic, and records
    the rich outputs it shows (and, as its base, drops output a client is too far behind to
    take)."""

    def handle_outgoing_message(self, stream: Any, outgoing_msg: list[Any]) -> None:
        traffic = host_traffic_of(self.multi_kernel_manager, self.kernel_id)
        seen = kernel_outputs_of(self.websocket_handler.settings)
        channel = stream if isinstance(stream, str) else getattr(stream, "channel", None)
        if traffic is None and (seen is None or channel != "iopub"):
            super().handle_outgoing_message(stream, outgoing_msg)
            return
        frames = [bytes(frame) if not isinstance(frame, bytes) else frame for frame in outgoing_msg]
        identities, parts = self.session.feed_identities(frames)
        header = self.session.unpack(parts[HEADER])
        msg_type = header.get("msg_type", "")
        if channel == "iopub":
            if traffic is not None:
                parent_id = self.session.unpack(parts[PARENT]).get("msg_id")
                needed = msg_type in CONTENT_NEEDED
                content = self.session.unpack(parts[CONTENT]) if needed else {}
                if is_host_traffic(msg_type, parent_id, content, traffic):
                    return
            if seen is not None and msg_type in RICH_MESSAGE_TYPES:
                seen.saw(msg_type, self.session.unpack(parts[CONTENT]))
        elif channel == "shell" and msg_type == "comm_info_reply" and traffic is not None:
            parts = self._without_host_comms(parts, traffic)
        super().handle_outgoing_message(stream, [*identities, DELIM, *parts])

    def _without_host_comms(self, parts: list[bytes], traffic: HostTraffic) -> list[bytes]:
        content = without_host_comms(self.session.unpack(parts[CONTENT]), traffic)
        signed = [parts[HEADER], parts[PARENT], parts[METADATA], self.session.pack(content)]
        return [self.session.sign(signed), *signed, *parts[CONTENT + 1 :]]


def with_host_filter(configured: type[Any]) -> type[Any]:
    """The kernel websocket class the server should use: ``configured`` behind the host-traffic
    filter and the output bound when it speaks to local kernels over ZMQ, a gateway's with the
    output bound, and any other class as configured."""
    if issubclass(configured, (HostFilteringConnection, BoundedGatewayConnection)):
        return configured
    if configured is ZMQChannelsWebsocketConnection:
        return HostFilteringConnection
    if configured is GatewayWebSocketConnection:
        return BoundedGatewayConnection
    if issubclass(configured, ZMQChannelsWebsocketConnection):
        name = f"HostFiltering{configured.__name__}"
        return type(name, (HostFilteringConnection, configured), {})
    if issubclass(configured, GatewayWebSocketConnection):
        return type(f"Bounded{configured.__name__}", (BoundedGatewayConnection, configured), {})
    return configured
