"""A clean-up that hangs names what it waits on, so a stop a spawner had to kill can be fixed."""

from __future__ import annotations

import asyncio
import logging

import pytest

from ganymede.serve.extension import log_waiting_tasks


async def test_a_slow_clean_up_logs_each_waiting_task_with_its_stack(
    caplog: pytest.LogCaptureFixture,
) -> None:
    never = asyncio.Event()

    async def wait_for_a_save_that_never_ends() -> None:
        await never.wait()

    stuck = asyncio.create_task(wait_for_a_save_that_never_ends(), name="stuck-save")
    await asyncio.sleep(0)
    with caplog.at_level(logging.WARNING):
        log_waiting_tasks(logging.getLogger("test-server"))
    stuck.cancel()
    (record,) = caplog.records
    assert "the clean-up is still running" in record.getMessage()
    assert "stuck-save" in record.getMessage()
    assert "in wait_for_a_save_that_never_ends" in record.getMessage()
