"""``POST /api/kernels/{id}/execute`` on a real server, real kernels, real room clients."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import nbformat
import pytest
from nbformat.sign import NotebookNotary

from tests.serve.conftest import RunningServer
from tests.serve.execution.conftest import (
    STARTUP,
    add_notebook,
    execute,
    hashed,
    on_disk,
    room_cells,
)
from tests.serve.rooms.client import eventually, room_client
from tests.serve.rooms.conftest import open_session

pytestmark = pytest.mark.slow


async def test_the_three_hash_vectors_run_and_the_outputs_come_back(
    server: RunningServer, api: httpx.Client, endpoint: httpx.AsyncClient, kernel: str
) -> None:
    document = add_notebook(server, api, "vectors.ipynb", e="", p="print('hello')", s="1 + 1")
    cells = [
        {"cell_id": "e", "source_hash": "0"},
        {"cell_id": "p", "source_hash": "3975440051"},
        {"cell_id": "s", "source_hash": "3531899427"},
    ]
    answer = await execute(endpoint, kernel, document, cells, wait=60)
    assert answer.status_code == 200, answer.text
    reply = answer.json()
    assert reply["finished"] is True
    empty, printed, summed = reply["cells"]
    assert empty["outputs"] == [] and empty["execution_count"] is None
    assert printed["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "hello\n"}]
    assert summed["outputs"][0]["data"] == {"text/plain": "2"}
    assert summed["outputs"][0]["execution_count"] == summed["execution_count"]
    assert summed["execution_count"] == printed["execution_count"] + 1
    assert {cell["execution_state"] for cell in reply["cells"]} == {"idle"}


async def test_a_changed_source_is_refused_and_nothing_in_the_room_changes(
    server: RunningServer, api: httpx.Client, endpoint: httpx.AsyncClient, kernel: str
) -> None:
    document = add_notebook(server, api, "stale.ipynb", a="print('kept')", b="2")
    ran = await execute(endpoint, kernel, document, hashed(("a", "print('kept')")), wait=60)
    assert ran.json()["finished"] is True
    _, session = open_session(api, "stale.ipynb")
    async with room_client(server, document, session) as ada:
        before = room_cells(ada)
        assert before[0]["outputs"][0]["text"] == "kept\n"
        stale = hashed(("a", "print('kept')"), ("b", "1"))
        answer = await execute(endpoint, kernel, document, stale)
        assert answer.status_code == 409
        assert answer.json() == {"error": "source_mismatch", "cell_id": "b"}
        # A run queued after the refusal shows the room saw nothing in between.
        probe = await execute(endpoint, kernel, document, hashed(("b", "2")), wait=60)
        assert probe.json()["finished"] is True
        await eventually(lambda: room_cells(ada)[1]["execution_count"] is not None, "the probe")
        assert room_cells(ada)[0] == before[0]


async def test_a_failing_cell_stops_its_batch_and_the_file_gets_the_outputs_without_a_client(
    server: RunningServer, api: httpx.Client, endpoint: httpx.AsyncClient, kernel: str
) -> None:
    marker = server.root / "third-ran"
    sources = {
        "one": "print('one')",
        "two": "raise ValueError('two')",
        "three": f"open({str(marker)!r}, 'w').close()",
    }
    document = add_notebook(server, api, "batch.ipynb", **sources)
    _, session = open_session(api, "batch.ipynb")
    async with room_client(server, document, session) as ada:
        assert [cell["id"] for cell in room_cells(ada)] == ["one", "two", "three"]

    answer = await execute(endpoint, kernel, document, hashed(*sources.items()))
    assert answer.status_code == 200 and answer.json() is None

    path = server.root / "batch.ipynb"
    await eventually(lambda: on_disk(path)[1]["outputs"], "the autosave of the error")
    one, two, three = on_disk(path)
    assert one["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "one\n"}]
    assert one["execution_count"] is not None
    assert two["outputs"][0]["output_type"] == "error"
    assert two["outputs"][0]["ename"] == "ValueError"
    assert two["execution_count"] == one["execution_count"] + 1
    assert three["outputs"] == [] and three["execution_count"] is None
    assert not marker.exists()
    async with room_client(server, document, session) as bob:
        cells = room_cells(bob)
        assert [cell["execution_state"] for cell in cells] == ["idle"] * 3
        assert cells[1]["outputs"][0]["evalue"] == "two"


async def test_a_short_wait_answers_unfinished_and_the_output_arrives_later(
    server: RunningServer, api: httpx.Client, endpoint: httpx.AsyncClient, kernel: str
) -> None:
    ready, go = server.root / "ready", server.root / "go"
    source = "import os, time\n"
    source += f"while not os.path.exists({str(ready)!r}):\n    time.sleep(0.01)\n"
    source += "print('started', flush=True)\n"
    source += f"while not os.path.exists({str(go)!r}):\n    time.sleep(0.01)\nprint('late')"
    document = add_notebook(server, api, "late.ipynb", late=source)
    _, session = open_session(api, "late.ipynb")
    async with room_client(server, document, session) as ada:
        answer = await execute(endpoint, kernel, document, hashed(("late", source)), wait=0.2)
        reply = answer.json()
        assert reply["finished"] is False
        assert reply["cells"][0]["execution_state"] == "running"
        assert reply["cells"][0]["outputs"] == []  # the cell waits for "ready" before printing
        ready.touch()
        # A fresh kernel on a busy machine can take a while to start.
        await eventually(lambda: room_cells(ada)[0]["outputs"], "the cell to start", STARTUP)
        go.touch()
        await eventually(lambda: room_cells(ada)[0]["execution_state"] == "idle", "the run")
        assert room_cells(ada)[0]["outputs"][0]["text"] == "started\nlate\n"


async def test_ten_thousand_lines_make_one_stream_output(
    server: RunningServer, api: httpx.Client, endpoint: httpx.AsyncClient, kernel: str
) -> None:
    source = "for i in range(10_000):\n    print(i)"
    document = add_notebook(server, api, "lines.ipynb", lines=source)
    _, session = open_session(api, "lines.ipynb")
    async with room_client(server, document, session) as ada:
        answer = await execute(endpoint, kernel, document, hashed(("lines", source)), wait=60)
        assert answer.json()["finished"] is True
        expected = "".join(f"{i}\n" for i in range(10_000))
        [output] = answer.json()["cells"][0]["outputs"]
        assert output == {"output_type": "stream", "name": "stdout", "text": expected}
        await eventually(lambda: room_cells(ada)[0]["execution_state"] == "idle", "the room")
        [seen] = room_cells(ada)[0]["outputs"]
        assert seen["text"] == expected


async def test_lines_flushed_one_message_each_arrive_whole_and_in_order(
    server: RunningServer, api: httpx.Client, endpoint: httpx.AsyncClient, kernel: str
) -> None:
    # Thousands of messages pile up faster than the room takes them: read together, in order.
    source = (
        "import sys\nfor i in range(3_000):\n    print(i, flush=True)\n"
        "    if i % 1_000 == 999:\n        print('mark', i, file=sys.stderr, flush=True)"
    )
    document = add_notebook(server, api, "flushed.ipynb", flushed=source)
    answer = await execute(endpoint, kernel, document, hashed(("flushed", source)), wait=60)
    assert answer.json()["finished"] is True
    outputs = answer.json()["cells"][0]["outputs"]
    expected = []
    for block in range(3):
        lines = range(block * 1_000, (block + 1) * 1_000)
        expected.append(("stdout", "".join(f"{i}\n" for i in lines)))
        expected.append(("stderr", f"mark {block * 1_000 + 999}\n"))
    assert [(output["name"], output["text"]) for output in outputs] == expected


async def test_clears_carriage_returns_and_display_updates_as_jupyterlab_shows_them(
    server: RunningServer, api: httpx.Client, endpoint: httpx.AsyncClient, kernel: str
) -> None:
    sources = {
        "deferred": "from IPython.display import clear_output, display\n"
        "print('a')\nclear_output(wait=True)\nprint('b')",
        "at_once": "print('x')\nclear_output()\ndisplay('y')",
        "progress": "import sys\nsys.stdout.write('10%\\r'); sys.stdout.flush()\n"
        "sys.stdout.write('20%\\rdone\\n');",
        "shown": "handle = display('first', display_id=True)",
        "updater": "handle.update('second')\nprint('updated')",
    }
    document = add_notebook(server, api, "display.ipynb", **sources)
    answer = await execute(endpoint, kernel, document, hashed(*sources.items()), wait=60)
    reply = answer.json()
    assert reply["finished"] is True
    deferred, at_once, progress, shown, updater = (cell["outputs"] for cell in reply["cells"])
    assert deferred == [{"output_type": "stream", "name": "stdout", "text": "b\n"}]
    assert [output["data"] for output in at_once] == [{"text/plain": "'y'"}]
    assert progress == [{"output_type": "stream", "name": "stdout", "text": "done\n"}]
    assert [output["data"] for output in shown] == [{"text/plain": "'second'"}]
    assert updater == [{"output_type": "stream", "name": "stdout", "text": "updated\n"}]


async def test_an_output_holding_a_number_beyond_64_bits_is_written_as_javascript_reads_it(
    server: RunningServer, api: httpx.Client, endpoint: httpx.AsyncClient, kernel: str
) -> None:
    """yrs keeps whole numbers in 64 bits and pycrdt aborts on a larger one: the room writes it
    as the float JupyterLab's JavaScript makes of it, and the run carries on."""
    sources = {
        "big": "from IPython.display import display\n"
        "display({'text/plain': 'big'}, raw=True, metadata={'n': 2**70, 'm': 10**400})",
        "after": "print('still running')",
    }
    document = add_notebook(server, api, "big.ipynb", **sources)
    answer = await execute(endpoint, kernel, document, hashed(*sources.items()), wait=60)
    reply = answer.json()
    assert reply["finished"] is True, reply
    big, after = (cell["outputs"] for cell in reply["cells"])
    assert big[0]["metadata"]["n"] == float(2**70)
    assert big[0]["metadata"]["m"] == str(10**400)
    assert after == [{"output_type": "stream", "name": "stdout", "text": "still running\n"}]


async def test_jupyterlabs_form_answers_once_the_cell_ran(
    server: RunningServer, api: httpx.Client, endpoint: httpx.AsyncClient, kernel: str
) -> None:
    document = add_notebook(server, api, "lab.ipynb", good="print('fine')", bad="1 / 0")
    url = f"api/kernels/{kernel}/execute"
    good = await endpoint.post(url, json={"cell_id": "good", "document_id": document})
    assert good.status_code == 200 and good.json() == {"status": "ok"}
    bad = await endpoint.post(url, json={"cell_id": "bad", "document_id": document})
    assert bad.status_code == 422
    assert bad.json()["ename"] == "ZeroDivisionError"
    _, session = open_session(api, "lab.ipynb")
    async with room_client(server, document, session) as ada:
        good_cell, bad_cell = room_cells(ada)
        assert good_cell["outputs"][0]["text"] == "fine\n"
        assert bad_cell["outputs"][0]["ename"] == "ZeroDivisionError"


async def test_a_request_waits_for_the_one_it_follows(
    server: RunningServer, api: httpx.Client, endpoint: httpx.AsyncClient, kernel: str
) -> None:
    first = "import builtins\nbuiltins.order = [*getattr(builtins, 'order', []), 'first']"
    second = "order.append('second')\nprint(order)"
    document = add_notebook(server, api, "order.ipynb", first=first, second=second)
    body = {"document_id": document, "cells": hashed(("second", second)), "wait": 60}
    later = asyncio.create_task(
        endpoint.post(
            f"api/kernels/{kernel}/execute",
            json=body | {"request_id": "r2", "previous_request_id": "r1"},
        )
    )
    earlier = {"document_id": document, "cells": hashed(("first", first)), "request_id": "r1"}
    assert (await endpoint.post(f"api/kernels/{kernel}/execute", json=earlier)).status_code == 200
    reply = (await later).json()
    assert reply["cells"][0]["outputs"][0]["text"] == "['first', 'second']\n"


async def test_refusals(
    server: RunningServer, api: httpx.Client, endpoint: httpx.AsyncClient, kernel: str
) -> None:
    document = add_notebook(server, api, "refusals.ipynb", only="1")
    cells = hashed(("only", "1"))
    unknown_kernel = await execute(endpoint, str(uuid.uuid4()), document, cells)
    assert unknown_kernel.status_code == 404
    unknown_file = await execute(endpoint, kernel, "json:notebook:no-such-id", cells)
    assert unknown_file.status_code == 404
    unknown_cell = await execute(endpoint, kernel, document, hashed(("nope", "1")))
    assert unknown_cell.status_code == 404
    url = f"api/kernels/{kernel}/execute"
    assert (await endpoint.post(url, content=b"{not json")).status_code == 400
    assert (await execute(endpoint, kernel, document, [])).status_code == 400
    assert (await execute(endpoint, kernel, "text:file:x", cells)).status_code == 400
    assert (await execute(endpoint, kernel, document, cells, wait=3601)).status_code == 400
    never = await execute(endpoint, kernel, document, cells, previous_request_id="never-sent")
    assert never.status_code == 408


async def test_a_restart_ends_the_running_batch_and_the_next_batch_runs(
    server: RunningServer, api: httpx.Client, endpoint: httpx.AsyncClient, kernel: str
) -> None:
    endless = "import time\nwhile True:\n    time.sleep(0.01)"
    document = add_notebook(server, api, "restart.ipynb", endless=endless, after="print('fresh')")
    url = f"api/kernels/{kernel}/execute"
    running = asyncio.create_task(
        endpoint.post(url, json={"cell_id": "endless", "document_id": document})
    )
    _, session = open_session(api, "restart.ipynb")
    async with room_client(server, document, session) as ada:
        await eventually(lambda: room_cells(ada)[0]["execution_count"] is not None, "the start")
    assert (await endpoint.post(f"api/kernels/{kernel}/restart")).status_code == 200
    stopped = await running
    assert stopped.status_code == 422 and stopped.json()["ename"] == "KernelDied"
    after = await endpoint.post(url, json={"cell_id": "after", "document_id": document})
    assert after.status_code == 200, after.text


async def test_outputs_of_runs_on_the_server_are_trusted_so_the_saved_file_is_signed(
    server: RunningServer, api: httpx.Client, endpoint: httpx.AsyncClient, kernel: str
) -> None:
    source = "from IPython.display import HTML\nHTML('<b>rich</b>')"
    document = add_notebook(server, api, "signed.ipynb", rich=source)
    answer = await execute(endpoint, kernel, document, hashed(("rich", source)), wait=60)
    assert answer.status_code == 200 and answer.json()["finished"] is True

    path = server.root / "signed.ipynb"
    await eventually(lambda: on_disk(path)[0]["outputs"], "the autosave of the output")
    assert "text/html" in on_disk(path)[0]["outputs"][0]["data"]
    notary = NotebookNotary(data_dir=str(server.log.parent / "data"))  # the server's own store
    await eventually(
        lambda: notary.check_signature(nbformat.read(path, as_version=4)), "the signature"
    )


async def test_a_cell_the_server_ran_stays_trusted_when_a_client_moves_it(
    server: RunningServer, api: httpx.Client, endpoint: httpx.AsyncClient, kernel: str
) -> None:
    """JupyterLab moves a cell by deleting it and inserting a copy: the copy's outputs are ones
    a kernel of this server produced, though the room did not see the client run them."""
    source = "from IPython.display import HTML\nHTML('<b>moved</b>')"
    document = add_notebook(server, api, "moved.ipynb", rich=source, other="1")
    answer = await execute(endpoint, kernel, document, hashed(("rich", source)), wait=60)
    assert answer.status_code == 200 and answer.json()["finished"] is True
    path = server.root / "moved.ipynb"
    name, session = open_session(api, "moved.ipynb")
    async with room_client(server, name, session) as ada:
        await eventually(lambda: room_cells(ada)[0]["outputs"], "the outputs in the client")
        cells = ada.shared.ycells  # type: ignore[attr-defined]
        with ada.shared.ydoc.transaction():
            copy = ada.shared.create_ycell(cells[0].to_py())  # type: ignore[attr-defined]
            del cells[0]
            cells.append(copy)
            ada.shared.ystate["dirty"] = True
        moved = ["other", "rich"]
        await eventually(lambda: [cell.id for cell in on_disk(path)] == moved, "the move saved")
    notary = NotebookNotary(data_dir=str(server.log.parent / "data"))
    await eventually(
        lambda: notary.check_signature(nbformat.read(path, as_version=4)), "the signature"
    )
