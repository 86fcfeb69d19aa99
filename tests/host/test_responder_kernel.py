"""The responder end to end from cells: a real kernel, the comm driver, real grants and rooms.

The calling kernel is attached as a served notebook's would be; cells call through
``ganymede.kernel.host()`` and see what a notebook author sees.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager

from ganymede.core import Notebooks
from ganymede.execute.host_runs import run_for_host
from ganymede.execute.model import RunOutcome
from ganymede.fileid import FileIdStore
from ganymede.grant import Grant, Grants, GrantStore, NotebookGrant
from ganymede.host.api import Caller
from ganymede.host.driver import attached
from ganymede.host.responder import HostResponder
from ganymede.host.runs import RunOrder
from ganymede.notebook.hashing import source_hash
from ganymede.serve.kernels.host_rooms import HostRooms, room_notebook_reader
from ganymede.serve.rooms import RoomManager, protocol
from ganymede.serve.rooms.room import DocumentRoom
from tests.core.disk import code, display, markdown, write_notebook
from tests.serve.test_host_rooms import Mirror

pytestmark = pytest.mark.slow

LOG = logging.getLogger("test.host")
INDEX = "journal/index.ipynb"
FREMONT = "journal/2026-11-09-fremont.ipynb"
RESULT_MIME = "application/vnd.ganymede.result+json"
COUNTER = (
    "from ganymede.kernel import params, result\n"
    "result('counter', params().get('counter', 'Fremont'))"
)
GATED = (
    "import os, pathlib, time\n"
    "from ganymede.kernel import params\n"
    "p = params()\n"
    "pathlib.Path(p['pid']).write_text(str(os.getpid()))\n"
    "while not os.path.exists(p['gate']):\n"
    "    time.sleep(0.02)"
)


class Runner:
    """The real headless runner, noting each order and each run's end for the test."""

    def __init__(self) -> None:
        self.orders: list[RunOrder] = []
        self.ended = asyncio.Event()

    async def __call__(self, order: RunOrder) -> RunOutcome:
        self.orders.append(order)
        try:
            return await run_for_host(order)
        finally:
            self.ended.set()


class Cells:
    """Runs cells on the kernel as JupyterLab would, on a connection of its own."""

    def __init__(self, client: AsyncKernelClient) -> None:
        self.client = client

    async def run(self, source: str) -> str:
        """What the cell printed; a cell that raises fails the test with its error."""
        printed: list[str] = []
        errors: list[str] = []

        def hook(message: dict[str, Any]) -> None:
            content = message["content"]
            if message["msg_type"] == "stream":
                printed.append(content["text"])
            elif message["msg_type"] == "error":
                errors.append(f"{content['ename']}: {content['evalue']}")

        reply = await self.client.execute_interactive(source, output_hook=hook, timeout=90)
        assert reply["content"]["status"] == "ok", errors
        return "".join(printed)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    served = tmp_path / "root"
    write_notebook(
        served / INDEX,
        markdown("# Journal", cell_id="title"),
        code("print('old index')", cell_id="toc"),
    )
    write_notebook(
        served / FREMONT,
        markdown("# Fremont bridge: weekday drop"),
        code(COUNTER, display({RESULT_MIME: {"name": "weekday_drop", "value": -0.19}})),
    )
    write_notebook(served / "journal" / "gated.ipynb", code(GATED))
    return served


@pytest.fixture
def runner() -> Runner:
    return Runner()


@pytest.fixture
def responder(
    root: Path, grants: Grants, rooms: RoomManager, file_ids: FileIdStore, runner: Runner
) -> HostResponder:
    return HostResponder(
        Notebooks(root, room_notebook_reader(rooms)),
        grants,
        editor=HostRooms(rooms, file_ids),
        run_notebook=runner,
        log=LOG,
    )


@pytest.fixture
async def kernel(root: Path) -> AsyncIterator[AsyncKernelManager]:
    manager = AsyncKernelManager(kernel_name="python3")
    await manager.start_kernel(cwd=str(root / "journal"))
    try:
        yield manager
    finally:
        await manager.shutdown_kernel(now=True)


async def attach(
    kernel: AsyncKernelManager, responder: HostResponder, caller: Caller
) -> AsyncIterator[Cells]:
    client = kernel.client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=60)
        async with attached(kernel, responder, caller, LOG):
            cells = Cells(client)
            await cells.run("from ganymede.kernel import host, HostError\nh = host()")
            yield cells
    finally:
        client.stop_channels()
        await responder.release(caller.kernel_id)


@pytest.fixture
async def cells(
    kernel: AsyncKernelManager, responder: HostResponder, grants: Grants
) -> AsyncIterator[Cells]:
    caller = Caller("k1", INDEX, grants.for_notebook(INDEX))
    async for attached_cells in attach(kernel, responder, caller):
        yield attached_cells


async def test_a_cell_searches_reads_and_reads_results(cells: Cells) -> None:
    printed = await cells.run(
        "hits = h.notebooks.search('weekday drop', dir='journal')['hits']\n"
        "print([(hit['path'], hit['index']) for hit in hits])\n"
        "print(h.notebooks.results(hits[0]['path']))\n"
        "print(sorted(h.notebooks.read(hits[0]['path'])))\n"
        "print(h.notebook, h.has('self.edit'), h.has('notebooks.run'))"
    )
    assert printed.splitlines() == [
        f"[('{FREMONT}', 0)]",
        "{'weekday_drop': -0.19}",
        "['hashes', 'notebook']",
        f"{INDEX} True False",
    ]


async def test_a_read_of_an_open_room_has_its_unsaved_edits(
    cells: Cells, rooms: RoomManager, file_ids: FileIdStore
) -> None:
    person = Mirror()
    room = await rooms.join(f"json:notebook:{file_ids.index(FREMONT)}", person)
    assert isinstance(room, DocumentRoom)
    await room.handle(person, protocol.SyncStep1(person.shared.ydoc.get_state()))
    title = person.shared.ycells[0]["source"]
    title += " (unsaved)"
    await room.handle(person, protocol.SyncUpdate(person.shared.ydoc.get_update()))
    printed = await cells.run(
        f"print(h.notebooks.read({FREMONT!r})['notebook']['cells'][0]['source'])"
    )
    assert printed == "# Fremont bridge: weekday drop (unsaved)\n"
    rooms.leave(room, person)


async def test_a_run_is_denied_until_granted(
    cells: Cells, grant_store: GrantStore, file_ids: FileIdStore
) -> None:
    run = f"h.notebooks.run({FREMONT!r}, params={{'counter': '2nd Ave'}})"
    denied = await cells.run(f"try:\n    {run}\nexcept HostError as e:\n    print(e)")
    assert denied == f"denied: notebooks.run needs a run grant covering {FREMONT}\n"
    grant_store.set(file_ids.index(INDEX), NotebookGrant(run=("journal",)), INDEX)
    ran = await cells.run(f"r = {run}\nprint(r['status'], r['results'], h.has('notebooks.run'))")
    # has() answers from the hello the kernel got when the comm opened
    assert ran == "ok {'counter': '2nd Ave'} False\n"


async def test_depth_four_is_denied(
    kernel: AsyncKernelManager, responder: HostResponder, runner: Runner
) -> None:
    third_run = Caller("k3", INDEX, Grant(run=("",)), depth=3, self_calls=False)
    async for cells in attach(kernel, responder, third_run):
        printed = await cells.run(
            f"try:\n    h.notebooks.run({FREMONT!r})\nexcept HostError as e:\n    print(e)"
        )
    assert printed == "denied: notebooks.run: a run 3 deep may not start another\n"
    assert runner.orders == []


def gate(tmp_path: Path, name: str) -> dict[str, str]:
    return {"pid": str(tmp_path / f"{name}.pid"), "gate": str(tmp_path / f"{name}.gate")}


async def test_a_third_concurrent_run_waits(
    cells: Cells,
    runner: Runner,
    grant_store: GrantStore,
    file_ids: FileIdStore,
    tmp_path: Path,
) -> None:
    grant_store.set(file_ids.index(INDEX), NotebookGrant(run=("journal",)), INDEX)
    gates = [gate(tmp_path, name) for name in "abc"]
    for params in gates:
        os.mkfifo(params["pid"])
    running = asyncio.ensure_future(
        cells.run(
            "import asyncio\n"
            f"gates = {json.dumps(gates)}\n"
            "runs = await asyncio.gather(*(\n"
            "    h.notebooks.arun('journal/gated.ipynb', params=g) for g in gates))\n"
            "print([run['status'] for run in runs])"
        )
    )
    pids = [int(await asyncio.to_thread(Path(g["pid"]).read_text)) for g in gates[:2]]
    assert len(runner.orders) == 2  # both slots taken, the third waits for one
    Path(gates[0]["gate"]).touch()
    third_pid = int(await asyncio.to_thread(Path(gates[2]["pid"]).read_text))
    assert third_pid not in pids
    for params in gates[1:]:
        Path(params["gate"]).touch()
    assert await running == "['ok', 'ok', 'ok']\n"


async def test_interrupting_the_cell_shuts_the_runs_kernel_down(
    kernel: AsyncKernelManager,
    cells: Cells,
    runner: Runner,
    grant_store: GrantStore,
    file_ids: FileIdStore,
    tmp_path: Path,
) -> None:
    grant_store.set(file_ids.index(INDEX), NotebookGrant(run=("journal",)), INDEX)
    params = gate(tmp_path, "interrupted")
    os.mkfifo(params["pid"])
    call = f"h.notebooks.run('journal/gated.ipynb', params={json.dumps(params)})"
    running = asyncio.ensure_future(
        cells.run(f"try:\n    {call}\nexcept KeyboardInterrupt:\n    print('interrupted')")
    )
    pid = int(await asyncio.to_thread(Path(params["pid"]).read_text))
    await kernel.interrupt_kernel()
    assert await running == "interrupted\n"
    await asyncio.wait_for(runner.ended.wait(), 60)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_self_edit_checks_the_hash_and_reaches_the_room(
    cells: Cells, rooms: RoomManager, file_ids: FileIdStore
) -> None:
    person = Mirror()
    room = await rooms.join(f"json:notebook:{file_ids.index(INDEX)}", person)
    assert isinstance(room, DocumentRoom)
    await room.handle(person, protocol.SyncStep1(person.shared.ydoc.get_state()))
    stale = source_hash("print('older index')")
    printed = await cells.run(
        "try:\n"
        f"    h.self.edit('toc', 'print(1)', {stale!r})\n"
        "except HostError as e:\n"
        "    print(e)\n"
        "me = h.notebooks.read(h.notebook)\n"
        "print(h.self.edit('toc', 'print(\"new index\")', me['hashes']['toc']))"
    )
    assert printed.splitlines() == [
        "failed: source_mismatch: cell toc changed since it was read",
        "{}",
    ]
    assert person.cells()[1]["source"] == 'print("new index")'
    rooms.leave(room, person)


CHAIN = (
    "from ganymede.kernel import host, result, HostError\n"
    "h = host()\n"
    "try:\n"
    "    result('inner', h.notebooks.run('journal/chain.ipynb')['results'])\n"
    "except HostError as e:\n"
    "    result('inner', str(e))"
)


async def test_runs_answer_host_calls_down_to_depth_three(
    cells: Cells, root: Path, grant_store: GrantStore, file_ids: FileIdStore
) -> None:
    chain = "journal/chain.ipynb"
    write_notebook(root / chain, code(CHAIN))
    grant_store.set(file_ids.index(INDEX), NotebookGrant(run=("journal",)), INDEX)
    grant_store.set(file_ids.index(chain), NotebookGrant(run=("journal",)), chain)
    printed = await cells.run(f"print(h.notebooks.run({chain!r})['results'])")
    denied = "denied: notebooks.run: a run 3 deep may not start another"
    assert printed == f"{{'inner': {{'inner': {{'inner': {denied!r}}}}}}}\n"
