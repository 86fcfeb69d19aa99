"""What a kernel's iopub showed of its stream flush timers, for the server's lines to it.

The server's kernel manager feeds one ``StreamWatch`` per kernel from the subscription that
tracks its activity, made as the kernel is launched: it hears the kernel's start-up and every
stream written since, through restarts. A line the execute endpoint opens later, perhaps hours
later, asks it when the first cell may run (``ganymede.core.stream_flushes``), and hears from it
when the status of the request it sent at that time was published: a watch that heard that
status has heard every stream published before it. A line with no manager's watch (a gateway's
kernel) keeps one of its own, which hears a start-up only if it subscribed before it ended:
otherwise its first cell waits one flush interval after the first status it heard, as
jupyter_client's ``wait_for_ready`` waits 0.2 s of iopub quiet.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from ganymede.core.stream_flushes import StreamFlushes


class StreamWatch:
    """One kernel's ``StreamFlushes``, and the requests whose status someone waits to hear."""

    def __init__(self) -> None:
        self.flushes = StreamFlushes()
        self._awaited: dict[str, asyncio.Event] = {}

    def hear(self, message: Mapping[str, Any], at: float) -> None:
        """Note one iopub message (its ``content`` needed only for a ``status``)."""
        self.flushes.hear(message, at)
        if message.get("msg_type") == "status":
            awaited = self._awaited.get((message.get("parent_header") or {}).get("msg_id", ""))
            if awaited is not None:
                awaited.set()

    def await_status(self, msg_id: str) -> asyncio.Event:
        """Set once a status of request ``msg_id`` is heard; ask before the request can be
        answered (before the next await after sending it), and ``forget`` it after."""
        return self._awaited.setdefault(msg_id, asyncio.Event())

    def forget(self, msg_id: str) -> None:
        self._awaited.pop(msg_id, None)
