"""The server's kernel manager restarting a real kernel whose host comm driver reconnects.

The kernel here starts through a gate: a restarted kernel's process waits on a FIFO before it
becomes ipykernel, so the test decides when the new kernel boots. A restart must answer while
the new kernel cannot yet answer anything, as jupyter_server's own restart does, and the first
cell after it must still find the host comm.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.kernelspec import KernelSpecManager

from ganymede.grant import Grant
from ganymede.host.api import Caller
from ganymede.host.driver import HostDrivers
from ganymede.serve.kernels import manager as kernel_manager
from ganymede.serve.kernels.manager import HostKernelManager
from tests.host.responders import EchoResponder

pytestmark = pytest.mark.slow

LOG = logging.getLogger("test.host_kernels")
NOTEBOOK = "journal/today.ipynb"
GATE = (
    "import os, sys\n"
    "gate, connection_file = sys.argv[1:]\n"
    "if os.path.exists(gate):\n"
    "    open(gate).read()\n"
    "os.execv(sys.executable, [sys.executable, '-m', 'ipykernel_launcher', '-f', connection_file])"
)
"""The kernel's command: while the gate (a FIFO) exists, wait until the test closes it."""


def gated_kernelspec(kernels: Path, gate: Path) -> None:
    spec = kernels / "gated"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-c", GATE, str(gate), "{connection_file}"]
    kernel = {"argv": argv, "display_name": "Python 3 (gated)", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel))


def open_gate(gate: Path) -> None:
    """Blocks until the kernel's process waits at the gate, then lets it through."""
    with gate.open("w"):
        pass
    gate.unlink()


@pytest.fixture
async def manager(tmp_path: Path) -> AsyncIterator[HostKernelManager]:
    gated_kernelspec(tmp_path / "kernels", tmp_path / "gate")
    specs = KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")])
    manager = HostKernelManager(kernel_spec_manager=specs, connection_dir=str(tmp_path))

    async def caller_of(kernel_id: str) -> Caller:
        return Caller(kernel_id, NOTEBOOK, Grant())

    manager.host_drivers = HostDrivers(EchoResponder(), LOG)
    manager.caller_of = caller_of
    try:
        yield manager
    finally:
        await manager.shutdown_all(now=True)


async def run(client: AsyncKernelClient, code: str) -> tuple[dict[str, Any], str]:
    """The reply's content and the cell's ``said``, as the reply carries it: a client's iopub
    may still be reconnecting to a kernel that just started, its shell requests wait for it."""
    expressions = {"said": "said"}
    reply = await client.execute(code, reply=True, user_expressions=expressions, timeout=60)
    content = reply["content"]
    said = content.get("user_expressions", {}).get("said", {})
    return content, said.get("data", {}).get("text/plain", "")


async def test_a_restart_answers_before_the_new_kernel_boots_and_its_first_cell_finds_the_host(
    manager: HostKernelManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Were the restart to wait for the host comm, it would wait here until the test timed out.
    monkeypatch.setattr(kernel_manager, "ATTACH_WAIT", 3600.0)
    kernel_id = await manager.start_kernel(kernel_name="gated")
    client = manager.get_kernel(kernel_id).client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=60)
        gate = tmp_path / "gate"
        os.mkfifo(gate)
        answered = await manager.restart_kernel(kernel_id)  # the new kernel waits at the gate
        await asyncio.to_thread(open_gate, gate)
        reply, said = await run(
            client,
            "from ganymede.kernel import host\n"
            "h = host()\n"
            "said = (h.notebook, h.call('echo', first=True)['params'])",
        )
        assert reply["status"] == "ok", reply
        assert said == repr((NOTEBOOK, {"first": True}))
        await answered  # jupyter_server's own wait: the new kernel's kernel_info_reply
    finally:
        client.stop_channels()
