"""What every long-lived part of the server shares: ``start``/``stop``, or ``async with``, and
tasks and timers that outlive the request which starts them."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

_Service = TypeVar("_Service", bound="Service")
_Result = TypeVar("_Result")


def detached_task(
    work: Coroutine[Any, Any, _Result], *, name: str | None = None
) -> asyncio.Task[_Result]:
    """A task for work that outlives whichever request starts it (a room's autosave, the
    server's sweepers, a kernel's readers), run in a context of its own.

    A task keeps a copy of the context it is made in, and jupyter_server's ``CallContext`` puts
    the request's handler there: a plain ``create_task`` would keep that handler alive, with
    whatever its connection last sent, for as long as the task runs.
    """
    return contextvars.Context().run(asyncio.create_task, work, name=name)


def detached_call_later(
    delay: float, callback: Callable[..., object], *args: object
) -> asyncio.TimerHandle:
    """``call_later`` in a context of its own, for the same reason as ``detached_task``: the
    handle keeps its context as long as anyone keeps the handle, after it ran too."""
    loop = asyncio.get_running_loop()
    return loop.call_later(delay, callback, *args, context=contextvars.Context())


async def event_within(event: asyncio.Event, timeout: float | None) -> bool:
    """Whether ``event`` is set within ``timeout`` seconds (None: however long it takes).

    ``asyncio.wait_for(event.wait(), timeout)`` does this too, but before Python 3.12 it
    returns normally when the task is cancelled just as the event is set: a loop built on it
    then goes round again, and the ``stop()`` awaiting the cancelled task waits for ever (a
    server that never finished shutting down). ``asyncio.wait`` lets every cancellation through.
    """
    if event.is_set():
        return True
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({waiter}, timeout=timeout)
    finally:
        waiter.cancel()
    return event.is_set()


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
