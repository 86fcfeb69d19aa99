"""The in-kernel host client on ipykernel 7.4 (this environment) and 7.3 (a venv of its own).

7.4 routes a comm's incoming messages to the shell that last published on it; 7.0 to 7.3 follow
the message's ``subshell_id``. Blocking calls, async calls and interrupts must work on both.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from jupyter_client.manager import AsyncKernelManager

from ganymede.host.driver import attached
from tests.host.responders import EchoResponder
from tests.host.test_driver import CALLER, Cells

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
OLD_KERNEL = "ipykernel73"
"""Its venv is built once and kept under ``.venv/`` (git-ignored); CI builds it from PyPI."""
NO_SUBSHELLS_KERNEL = "ipykernel6"
LOG = logging.getLogger("test.host.client")


def kernel_venv(name: str, release: str) -> Path:
    """A venv under ``.venv/`` with ipykernel ``release`` (``7.3``), built on first use."""
    python = REPO / ".venv" / name / "bin" / "python"
    check = f"import ipykernel; assert ipykernel.__version__.startswith('{release}.')"
    if python.exists() and subprocess.run([str(python), "-c", check]).returncode == 0:
        return python
    subprocess.run([sys.executable, "-m", "venv", str(python.parent.parent)], check=True)
    install = [str(python), "-m", "pip", "install", "-q", f"ipykernel=={release}.*"]
    subprocess.run(install, check=True, timeout=600)
    return python


def register_kernel(name: str, python: Path) -> None:
    """A kernelspec for ``python`` in this test's Jupyter data dir, importing this checkout."""
    spec_dir = Path(os.environ["JUPYTER_DATA_DIR"]) / "kernels" / name
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": name,
        "language": "python",
        "env": {"PYTHONPATH": str(REPO)},
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))


@pytest.fixture(scope="session")
def old_kernel_python() -> Path:
    return kernel_venv(OLD_KERNEL, "7.3")


@pytest.fixture(scope="session")
def subshell_less_python() -> Path:
    return kernel_venv(NO_SUBSHELLS_KERNEL, "6.29")


@pytest.fixture(params=["python3", OLD_KERNEL])
def kernel_name(request: pytest.FixtureRequest) -> str:
    """This environment's ipykernel, then 7.3 from a venv of its own."""
    name: str = request.param
    if name == OLD_KERNEL:
        register_kernel(name, request.getfixturevalue("old_kernel_python"))
    return name


@pytest.fixture
async def kernel(kernel_name: str) -> AsyncIterator[AsyncKernelManager]:
    manager = AsyncKernelManager(kernel_name=kernel_name)
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
async def hosted(
    kernel: AsyncKernelManager, cells: Cells, responder: EchoResponder
) -> AsyncIterator[Cells]:
    async with attached(kernel, responder, CALLER, LOG):
        yield cells


async def test_blocking_and_async_calls(hosted: Cells, kernel_name: str) -> None:
    ran = await hosted.run(
        "import ipykernel\n"
        "from ganymede.kernel import host\n"
        "h = host()\n"
        "print(ipykernel.__version__[:3])\n"
        "print(h.call('echo', n=1)['params'], h.notebook)\n"
        "print((await h.acall('echo', n=2))['params'])\n"
    )
    version = "7.3" if kernel_name == OLD_KERNEL else "7.4"
    assert ran.stdout.splitlines() == [version, "{'n': 1} journal/today.ipynb", "{'n': 2}"]


WAITING_CALLS = [
    pytest.param("h.call('wait')", "KeyboardInterrupt", id="blocking"),
    # ipykernel cancels an async cell from its SIGINT handler, which runs when the cell's event
    # loop next wakes: a loop waiting on nothing but the call's reply must still wake.
    pytest.param("await h.acall('wait')", "CancelledError", id="async"),
]


@pytest.mark.parametrize(("call", "ename"), WAITING_CALLS)
async def test_interrupt_cancels_a_call(
    hosted: Cells, kernel: AsyncKernelManager, responder: EchoResponder, call: str, ename: str
) -> None:
    running = asyncio.ensure_future(
        hosted.run(f"from ganymede.kernel import host\nh = host()\n{call}", timeout=20)
    )
    await asyncio.wait_for(responder.waiting.wait(), 30)
    await kernel.interrupt_kernel()
    ran = await running
    assert ran.reply["ename"] == ename
    await asyncio.wait_for(responder.cancelled.wait(), 30)


@pytest.mark.parametrize(("call", "ename"), WAITING_CALLS)
async def test_an_interrupt_another_thread_takes_still_cancels_a_call(
    hosted: Cells, responder: EchoResponder, call: str, ename: str
) -> None:
    """The system may hand the kernel's SIGINT to any of its threads; here a thread of the
    cell's own takes it once the call waits, which wakes neither the main thread's lock wait
    nor the cell's event loop."""
    running = asyncio.ensure_future(
        hosted.run(
            "import signal, threading\n"
            "from ganymede.kernel import host\n"
            "h = host()\n"
            "def interrupt():\n"
            "    while not h._pending:\n"
            "        threading.Event().wait(0.01)\n"
            "    signal.pthread_kill(threading.get_ident(), signal.SIGINT)\n"
            "threading.Thread(target=interrupt).start()\n"
            f"{call}",
            timeout=20,
        )
    )
    await asyncio.wait_for(responder.waiting.wait(), 30)
    ran = await running
    assert ran.reply["ename"] == ename
    await asyncio.wait_for(responder.cancelled.wait(), 30)


async def test_an_async_call_that_times_out_is_cancelled(
    hosted: Cells, responder: EchoResponder
) -> None:
    ran = await hosted.run(
        "from ganymede.kernel import host, HostError\n"
        "try:\n"
        "    await host().acall('wait', timeout=0.5)\n"
        "except HostError as error:\n"
        "    print(error)\n"
    )
    assert ran.stdout == "timeout: wait did not answer within 0.5 s\n"
    await asyncio.wait_for(responder.cancelled.wait(), 30)


async def test_no_server_means_none(cells: Cells) -> None:
    ran = await cells.run("from ganymede.kernel import host\nprint(host(timeout=0.5))")
    assert ran.stdout == "None\n"


async def test_a_kernel_without_subshells_gets_no_comm(
    subshell_less_python: Path, responder: EchoResponder
) -> None:
    register_kernel(NO_SUBSHELLS_KERNEL, subshell_less_python)
    manager = AsyncKernelManager(kernel_name=NO_SUBSHELLS_KERNEL)
    await manager.start_kernel()
    client = manager.client()
    try:
        client.start_channels()
        await client.wait_for_ready(timeout=60)
        async with attached(manager, responder, CALLER, LOG) as driver:
            assert (driver.has_subshells, driver.subshell_id, driver.comm_id) == (False, None, None)
            ran = await Cells(client).run(
                "from ganymede.kernel import host\nprint(host(timeout=1))"
            )
        assert ran.stdout == "None\n"
        assert responder.calls == []
    finally:
        client.stop_channels()
        await manager.shutdown_kernel(now=True)
