"""Save once edits pause: one write per burst of typing, ``delay`` seconds after the last key."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from ganymede.serve.service import Service, detached_task, event_within


class Autosave(Service):
    """Calls ``save`` when ``delay`` seconds have passed since the last ``poke``.

    A save in progress is not interrupted; edits made meanwhile start a new wait. Use as
    ``async with`` or with ``start``/``stop``; ``stop`` abandons a pending wait (the room
    decides itself whether to save on close).
    """

    def __init__(self, delay: float, save: Callable[[], Awaitable[object]]) -> None:
        self._delay = delay
        self._save = save
        self._edited = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def poke(self) -> None:
        """An edit happened: (re)start the countdown."""
        self._edited.set()

    async def start(self) -> None:
        if self._task is not None:
            raise RuntimeError("autosave already started")
        self._task = detached_task(self._run())

    async def stop(self) -> None:
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None

    async def _run(self) -> None:
        while True:
            await self._edited.wait()
            while self._edited.is_set():
                self._edited.clear()
                await event_within(self._edited, self._delay)
            await self._save()
