"""The comm driver against real ipykernel kernels, with a responder defined in the tests."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager

from ganymede.grant import Grant
from ganymede.host.api import Caller
from ganymede.host.driver import HostDriver, attached
from tests.host.responders import EchoResponder

pytestmark = pytest.mark.slow

LOG = logging.getLogger("test.host")
CALLER = Caller(kernel_id="k1", notebook="journal/today.ipynb", grant=Grant(), self_calls=False)


@dataclass
class Ran:
    """What a cell did: its reply content and what it printed or raised."""

    reply: dict[str, Any]
    stdout: str = ""
    errors: list[str] = field(default_factory=list)


class Cells:
    """Runs cells on a kernel the way any other client would, on its own connection."""

    def __init__(self, client: AsyncKernelClient) -> None:
        self.client = client

    async def run(self, code: str, timeout: float = 60) -> Ran:
        ran = Ran(reply={})

        def hook(message: dict[str, Any]) -> None:
            content = message["content"]
            if message["msg_type"] == "stream":
                ran.stdout += content["text"]
            elif message["msg_type"] == "error":
                ran.errors.append(f"{content['ename']}: {content['evalue']}")

        reply = await self.client.execute_interactive(code, output_hook=hook, timeout=timeout)
        ran.reply = reply["content"]
        return ran


@pytest.fixture
async def kernel() -> AsyncIterator[AsyncKernelManager]:
    manager = AsyncKernelManager(kernel_name="python3")
    await manager.start_kernel()
    try:
        yield manager
    finally:
        await manager.shutdown_kernel(now=True)


@pytest.fixture
async def cells(kernel: AsyncKernelManager) -> AsyncIterator[Cells]:
    client = kernel.client()
    client.start_channels()
    await client.wait_for_ready(timeout=60)
    try:
        yield Cells(client)
    finally:
        client.stop_channels()


@pytest.fixture
def responder() -> EchoResponder:
    return EchoResponder()


@pytest.fixture
async def driver(kernel: AsyncKernelManager, responder: EchoResponder) -> AsyncIterator[HostDriver]:
    async with attached(kernel, responder, CALLER, LOG) as started:
        yield started


async def test_a_plain_cell_calls_and_gets_hello_results_and_errors(
    driver: HostDriver, cells: Cells
) -> None:
    assert driver.has_subshells and driver.subshell_id
    ran = await cells.run(
        "from ganymede.kernel import host, HostError\n"
        "h = host()\n"
        "print(h.notebook, h.has('echo'), h.has('notebooks.run'))\n"
        "print(h.call('echo', word='hi', none=None))\n"
        "try:\n"
        "    h.call('fail')\n"
        "except HostError as e:\n"
        "    print(e.code, '|', e)\n"
    )
    assert ran.reply["status"] == "ok", ran.errors
    assert ran.stdout.splitlines() == [
        "journal/today.ipynb True False",
        "{'params': {'word': 'hi'}, 'kernel': 'k1'}",
        "denied | denied: notebooks.run needs a run grant covering journal/x.ipynb",
    ]
    assert driver.comm_id is not None


async def test_an_async_cell_awaits_calls(driver: HostDriver, cells: Cells) -> None:
    ran = await cells.run(
        "from ganymede.kernel import host\n"
        "h = host()\n"
        "import asyncio\n"
        "both = await asyncio.gather(h.acall('echo', n=1), h.acall('echo', n=2))\n"
        "print([r['params']['n'] for r in both])\n"
    )
    assert ran.reply["status"] == "ok", ran.errors
    assert ran.stdout == "[1, 2]\n"


async def test_interrupting_a_blocking_call_cancels_it(
    kernel: AsyncKernelManager, driver: HostDriver, cells: Cells, responder: EchoResponder
) -> None:
    await cells.run("from ganymede.kernel import host\nh = host()")
    running = asyncio.ensure_future(cells.run("h.call('wait')"))
    await asyncio.wait_for(responder.waiting.wait(), 30)
    await kernel.interrupt_kernel()
    ran = await running
    await asyncio.wait_for(responder.cancelled.wait(), 30)
    assert ran.reply["status"] == "error"
    assert ran.reply["ename"] == "KeyboardInterrupt"
    after = await cells.run("print(h.call('echo', after=True)['params'])")
    assert after.stdout == "{'after': True}\n"


async def test_a_call_timeout_cancels_it_on_the_server(
    driver: HostDriver, cells: Cells, responder: EchoResponder
) -> None:
    ran = await cells.run(
        "from ganymede.kernel import host, HostError\n"
        "try:\n"
        "    host().call('wait', timeout=0.5)\n"
        "except HostError as e:\n"
        "    print(e.code)\n"
    )
    assert ran.stdout == "timeout\n", ran.errors
    await asyncio.wait_for(responder.cancelled.wait(), 30)


async def test_a_second_open_is_told_taken(driver: HostDriver, cells: Cells) -> None:
    ran = await cells.run(
        "import threading, comm\n"
        "from ganymede.kernel import host\n"
        "h = host()\n"
        "closed = threading.Event()\n"
        "said = {}\n"
        "def on_close(msg):\n"
        "    said.update(msg['content']['data'])\n"
        "    closed.set()\n"
        "other = comm.create_comm(target_name='ganymede.host.v1', primary=False)\n"
        "other._reply_subshell_for = None\n"
        "other.on_close(on_close)\n"
        "other.open(data={})\n"
        "print(closed.wait(30), said)\n"
        "print(h.call('echo', still=1)['params'])\n"
    )
    assert ran.stdout.splitlines() == ["True {'error': 'taken'}", "{'still': 1}"], ran.errors


async def test_a_cell_asking_before_the_driver_connected_gets_the_drivers_offer(
    kernel: AsyncKernelManager, cells: Cells, responder: EchoResponder
) -> None:
    """As right after a restart: the cell's own open goes unheard, the main shell is busy with
    the waiting cell, and the driver connecting meanwhile answers it with its offer."""
    client = cells.client
    msg_id = client.execute(
        "from ganymede.kernel import host\n"
        "h = host(timeout=30)\n"
        "print(h.notebook, h.call('echo', late=True)['params'])"
    )
    while True:  # the cell's own comm_open is out: it waits in host()
        message = await client.get_iopub_msg(timeout=30)
        if message["msg_type"] == "comm_open" and message["parent_header"]["msg_id"] == msg_id:
            break

    # A server's driver, as a kernel that may already run a cell gets (a run's is ``fresh``).
    driver = HostDriver(CALLER.kernel_id, kernel, responder, _fixed(CALLER), LOG)
    await driver.start()
    try:
        printed = ""
        while True:
            message = await client.get_iopub_msg(timeout=60)
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            content = message["content"]
            if message["msg_type"] == "stream":
                printed += content["text"]
            elif message["msg_type"] == "status" and content["execution_state"] == "idle":
                break
        reply = await client.get_shell_msg(timeout=60)
    finally:
        await driver.stop()
    assert reply["content"]["status"] == "ok", reply["content"]
    assert printed == "journal/today.ipynb {'late': True}\n"


async def test_stopping_the_driver_fails_calls_in_flight_disconnected(
    kernel: AsyncKernelManager, cells: Cells, responder: EchoResponder
) -> None:
    driver = HostDriver("k1", kernel, responder, _fixed(CALLER), LOG)
    await driver.start()
    await cells.run("from ganymede.kernel import host, HostError\nh = host()")
    running = asyncio.ensure_future(
        cells.run("try:\n    h.call('wait')\nexcept HostError as e:\n    print(e)\n")
    )
    await asyncio.wait_for(responder.waiting.wait(), 30)
    await driver.stop()
    ran = await running
    assert ran.stdout == "disconnected: wait was disconnected\n", ran.errors
    assert responder.released == ["k1"]
    gone = await cells.run("from ganymede.kernel import host\nprint(host(timeout=0.5))")
    assert gone.stdout == "None\n"


def _fixed(caller: Caller) -> Any:
    async def source() -> Caller:
        return caller

    return source
