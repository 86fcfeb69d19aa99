"""The waits every long-lived loop of the server is built on."""

from __future__ import annotations

import asyncio

import pytest

from ganymede.serve.service import event_within


async def test_a_loop_cancelled_as_its_event_is_set_ends() -> None:
    # The order that kept a server from ever finishing its shutdown: the event is set and the
    # task cancelled in the same turn of the loop.
    event = asyncio.Event()
    rounds = 0

    async def wait_round_and_round() -> None:
        nonlocal rounds
        while True:
            await event_within(event, 10)
            event.clear()
            rounds += 1

    task = asyncio.create_task(wait_round_and_round())
    await asyncio.sleep(0)
    event.set()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert rounds == 0


async def test_the_event_set_in_time_or_not() -> None:
    event = asyncio.Event()
    assert not await event_within(event, 0.01)
    asyncio.get_running_loop().call_later(0.01, event.set)
    assert await event_within(event, 5)
    assert await event_within(event, 0)
    assert await event_within(event, None)


async def test_no_waiter_is_left_behind() -> None:
    event = asyncio.Event()
    before = len(asyncio.all_tasks())
    await event_within(event, 0.01)
    await asyncio.sleep(0)
    assert len(asyncio.all_tasks()) == before
