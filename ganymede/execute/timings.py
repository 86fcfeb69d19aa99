"""A cell's ``metadata.execution``: when the kernel took it up, started it, answered, went idle.

nbclient's ``record_timing`` writes these four keys, from the headers of the cell's own
messages (the kernel's clock, not the runner's), and tools that chart a notebook's run read
them. Pure bookkeeping: the kernel wrapper hands over each message of the cell.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

BUSY = "iopub.status.busy"
EXECUTE_INPUT = "iopub.execute_input"
EXECUTE_REPLY = "shell.execute_reply"
IDLE = "iopub.status.idle"
KEYS = (BUSY, EXECUTE_INPUT, EXECUTE_REPLY, IDLE)


def timing_key(channel: str, msg_type: str, content: Mapping[str, Any]) -> str | None:
    """The ``metadata.execution`` key a message of the cell stamps, if any."""
    if channel == "shell":
        return EXECUTE_REPLY if msg_type == "execute_reply" else None
    if msg_type == "execute_input":
        return EXECUTE_INPUT
    if msg_type == "status":
        state = content.get("execution_state")
        return BUSY if state == "busy" else IDLE if state == "idle" else None
    return None


def timestamp(date: datetime | str | None) -> str:
    """A header's date as nbclient writes it (UTC, microseconds, ``Z``); now, if it has none."""
    if isinstance(date, str):
        return date
    moment = date or datetime.now(UTC)
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class CellTimings:
    """The stamps of one cell's execution, in the order its messages came."""

    def __init__(self) -> None:
        self.stamps: dict[str, str] = {}

    def observe(self, channel: str, message: Mapping[str, Any]) -> None:
        key = timing_key(channel, message["msg_type"], message.get("content", {}))
        if key is not None:
            self.stamps[key] = timestamp(message.get("header", {}).get("date"))
