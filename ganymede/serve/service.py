"""What every long-lived part of the server shares: ``start``/``stop``, or ``async with``."""

from __future__ import annotations

from typing import TypeVar

_Service = TypeVar("_Service", bound="Service")


class Service:
    """A part that runs between ``start()`` and ``stop()``; ``async with`` does both.

    Rooms, the autosave and the file watcher live as long as the server or a room does, so the
    server calls ``start``/``stop`` itself, while tests and short scopes use ``async with``.
    """

    async def start(self) -> None:
        """Begin work; the base has nothing to start."""

    async def stop(self) -> None:
        """End work and release what ``start`` took; the base has nothing to stop."""

    async def __aenter__(self: _Service) -> _Service:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()
