"""Which kernel messages other clients must not see, because they are the server's host traffic.

The host comm is a conversation between the server and the kernel. Every other client of the
kernel (JupyterLab, the apps, activity tracking) would otherwise see its ``comm_open`` and
``comm_msg`` (a call's parameters), and the ``status`` busy/idle the kernel publishes around each
message the server sends, which would flip a running cell's state to idle. This module decides,
from a message's parts alone, whether it is host traffic; it does no I/O, so the websocket
connection and the activity tracker can both apply it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Container, Mapping
from dataclasses import dataclass, field
from typing import Any

from ganymede.host.api import TARGET

COMM_MESSAGES = frozenset({"comm_open", "comm_msg", "comm_close"})
CONTENT_NEEDED = COMM_MESSAGES | {"comm_info_reply"}
"""Message types whose content the predicate reads; every other verdict needs only headers."""

SENT_MEMORY = 4096
"""How many of the server's own message ids are remembered: far more than can be in flight."""


class RecentIds(Container[str]):
    """The last ``limit`` message ids the server sent, so it knows the replies and statuses they
    cause; older ones are forgotten, since a kernel answers a message within moments."""

    def __init__(self, limit: int = SENT_MEMORY) -> None:
        self._limit = limit
        self._ids: OrderedDict[str, None] = OrderedDict()

    def add(self, msg_id: str) -> None:
        self._ids[msg_id] = None
        while len(self._ids) > self._limit:
            self._ids.popitem(last=False)

    def __contains__(self, msg_id: object) -> bool:
        return msg_id in self._ids


@dataclass
class HostTraffic:
    """What marks a kernel's messages as host traffic: the host comm ids ever used on it and the
    ids of messages the server sent it."""

    comm_ids: set[str] = field(default_factory=set)
    sent: RecentIds = field(default_factory=RecentIds)


def is_host_traffic(
    msg_type: str,
    parent_msg_id: str | None,
    content: Mapping[str, Any],
    traffic: HostTraffic,
) -> bool:
    """True for a message no other client may see.

    ``content`` need only be given (else ``{}``) for the types in ``CONTENT_NEEDED``. A message
    the kernel sent because of one the server sent (its ``status``, a "no such comm target"
    stream, a reply) is host traffic whatever its type. Kernel-sent comm messages are recognised
    by comm id only: their parent is the cell that called, which other clients must still see.
    Any ``comm_open`` to the host target counts too, even one the server has not adopted.
    """
    if parent_msg_id is not None and parent_msg_id in traffic.sent:
        return True
    if msg_type not in COMM_MESSAGES:
        return False
    if content.get("comm_id") in traffic.comm_ids:
        return True
    return msg_type == "comm_open" and content.get("target_name") == TARGET


def without_host_comms(content: Mapping[str, Any], traffic: HostTraffic) -> dict[str, Any]:
    """A ``comm_info_reply`` content with the host comm left out of its ``comms``."""
    comms = content.get("comms")
    if not isinstance(comms, Mapping):
        return dict(content)
    kept = {
        comm_id: info
        for comm_id, info in comms.items()
        if comm_id not in traffic.comm_ids
        and not (isinstance(info, Mapping) and info.get("target_name") == TARGET)
    }
    return {**content, "comms": kept}
