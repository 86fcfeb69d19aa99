"""The handshake every line Ganymede opens to a kernel goes through before its first request.

A kernel is asked for ``kernel_info`` again and again, every ``resend`` seconds, until the line
says it is open: the kernel answered, the iopub subscription is proven live (a SUB socket hears
nothing until its subscription reaches the kernel, and an output sent before that is lost), and
whatever else that line waits for (``ganymede.core.stream_flushes``: the stream flush timers the
kernel armed have fired). Requests pile up while a slow kernel starts, and any answer counts.

The lines differ in what carries the messages (zmq channels, a kernel gateway's websocket), in
how they learn a kernel is gone, and in the words of their errors; each says so through
``HandshakeLine``. The loop itself is the same for all of them.
"""

from __future__ import annotations

import asyncio
from typing import Protocol


class HandshakeLine(Protocol):
    """One line to one kernel, as the handshake drives it."""

    async def answering(self) -> bool:
        """Whether the kernel can still answer (asked before each request)."""

    def held_until(self, now: float) -> float | None:
        """A loop time before which a request would come too early to open the line (flush
        timers the kernel armed not yet due), or None to send one at ``now``."""

    def send_kernel_info(self) -> str:
        """Send a ``kernel_info_request``; its msg_id."""

    async def opened(self, request: str | None, until: float) -> bool:
        """Wait until the line is open or loop time ``until``, whichever is first; whether it
        opened. ``request``: the one just sent (None while held): the wait starts before the
        next await, so nothing its answer brings is missed."""

    def unanswered(self, timeout: float) -> Exception:
        """What to raise when ``timeout`` seconds pass without the line opening."""

    def gone(self) -> Exception:
        """What to raise when the kernel stops answering."""


async def handshake(line: HandshakeLine, timeout: float, resend: float) -> None:
    """Return once ``line`` is open; its ``unanswered`` error past ``timeout`` seconds, its
    ``gone`` error as soon as the kernel is seen gone."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        if not await line.answering():
            raise line.gone()
        now = loop.time()
        if now >= deadline:
            raise line.unanswered(timeout)
        held = line.held_until(now)
        if held is not None and now < held:
            request = None
            wake_at = held
        else:
            request = line.send_kernel_info()
            wake_at = now + resend
        if await line.opened(request, min(wake_at, deadline)):
            return
