"""``ganymede mcp`` over stdio against a real server, with Thomas editing in a room."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import httpx
import nbformat
import pytest
from mcp import types

from tests.mcp.conftest import (
    DEADLINE,
    add_markdown,
    call,
    door_parameters,
    door_to,
    mcp_door,
    text_of,
    thomas_in,
    type_into,
    until,
)
from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server
from tests.serve.rooms.client import eventually

pytestmark = pytest.mark.slow

CHANGED_BY_THOMAS = re.compile(r"@@changed 1 cell (in \S+ )?by Thomas since your last read")
MARK = re.compile(r'@@mark \{"mark":"([0-9a-f]{16})"')
TOOLS = {
    "notebooks_list",
    "notebooks_search",
    "notebook_read",
    "notebook_create",
    "cell_add",
    "cell_edit",
    "cell_delete",
    "cell_move",
    "cell_run",
    "notebook_run",
    "notebook_results",
    "kernel_restart",
    "kernel_interrupt",
    "request_done",
    "suggestions_list",
}
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(32))).decode()


def write_notebook(server: RunningServer, name: str, *cells: nbformat.NotebookNode) -> str:
    nbformat.write(nbformat.v4.new_notebook(cells=list(cells)), server.root / name)
    return name


def mark_of(text: str) -> str:
    found = MARK.search(text)
    assert found, text
    return found.group(1)


async def test_the_door_offers_exactly_the_tools_of_the_contract(server: RunningServer) -> None:
    async with door_to(server) as door:
        listed = await door.list_tools()
    assert {tool.name for tool in listed.tools} == TOOLS
    schema = {tool.name: tool.input_schema for tool in listed.tools}
    suggesting = {"suggest", "title", "description"}
    assert set(schema["cell_add"]["properties"]) == {"path", "source", "cell_type", "after"} | (
        suggesting
    )
    assert set(schema["cell_edit"]["properties"]) == {"path", "id", "source"} | suggesting
    assert set(schema["cell_delete"]["properties"]) == {"path", "id"} | suggesting
    assert set(schema["notebook_read"]["properties"]) == {"path", "since", "cells", "outputs"}


async def test_an_edit_by_thomas_ends_every_reply_and_reads_as_his(
    server: RunningServer, api: httpx.Client
) -> None:
    path = write_notebook(server, "edited.ipynb", nbformat.v4.new_code_cell("total = 1", id="c1"))
    # An agent of its own, with a mark on this notebook only: the line then names no path.
    async with (
        door_to(server, agent="edited-reader") as door,
        thomas_in(server, api, path) as thomas,
    ):
        mark = mark_of(await call(door, "notebook_read", path=path))
        type_into(thomas, "c1", " + 1")
        line = (
            f'@@changed 1 cell by Thomas since your last read: call notebook_read(since: "{mark}")'
        )
        listing = await until(lambda: call(door, "notebooks_list"), line, "the changed line")
        assert listing.rstrip("\n").endswith(line)
        since = await call(door, "notebook_read", since=mark)
    change = json.loads(since.split("@@change ", 1)[1].split("\n", 1)[0])
    assert change["by"] == "Thomas" and change["change"] == ["edited"] and change["id"] == "c1"
    assert "total = 1 + 1" in since
    assert mark_of(since) != mark


async def test_an_edit_of_a_cell_thomas_changed_is_refused_until_read(
    server: RunningServer, api: httpx.Client
) -> None:
    path = write_notebook(server, "refused.ipynb", nbformat.v4.new_code_cell("a = 1", id="c1"))
    async with door_to(server) as door, thomas_in(server, api, path) as thomas:
        await call(door, "notebook_read", path=path)
        type_into(thomas, "c1", "  # Thomas was here")
        await until(lambda: call(door, "notebooks_list"), "by Thomas", "Thomas's edit")
        refused = await door.call_tool("cell_edit", {"path": path, "id": "c1", "source": "a = 2"})
        assert refused.is_error
        text = text_of(refused)
        assert "Thomas" in text and "a = 1  # Thomas was here" in text
        assert CHANGED_BY_THOMAS.match(text.rstrip("\n").splitlines()[-1])
        await call(door, "notebook_read", path=path)
        edited = await call(door, "cell_edit", path=path, id="c1", source="a = 2")
    assert '@@edited {"id":"c1"' in edited


async def test_a_request_cell_from_thomas_is_reported_as_a_request(
    server: RunningServer, api: httpx.Client
) -> None:
    path = write_notebook(server, "asked.ipynb", nbformat.v4.new_code_cell("rows = 3", id="c1"))
    async with door_to(server) as door, thomas_in(server, api, path) as thomas:
        mark = mark_of(await call(door, "notebook_read", path=path))
        add_markdown(thomas, "@agent check the 2019 rows", "ask1")
        await until(lambda: call(door, "notebooks_list"), "by Thomas", "Thomas's request")
        since = await call(door, "notebook_read", since=mark)
        assert '"change":["added","request"]' in since
        done = await call(door, "request_done", path=path, id="ask1")
    assert '@@done {"id":"ask1"' in done


async def test_images_come_back_as_image_content(server: RunningServer) -> None:
    plot = nbformat.v4.new_code_cell("plot()", id="p1")
    plot.outputs = [
        nbformat.v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"})
    ]
    path = write_notebook(server, "plot.ipynb", plot)
    async with door_to(server) as door:
        result = await door.call_tool("notebook_read", {"path": path})
    assert not result.is_error
    images = [item for item in result.content if isinstance(item, types.ImageContent)]
    assert [image.mime_type for image in images] == ["image/png"]
    assert base64.b64decode(images[0].data) == base64.b64decode(PNG)
    assert '"ref":"notebook://plot.ipynb#p1/outputs/0"' in text_of(result)


async def test_a_refusal_the_model_can_read(server: RunningServer) -> None:
    async with door_to(server) as door:
        missing = await door.call_tool("notebook_read", {"path": "nowhere.ipynb"})
        unknown = await door.call_tool("notebook_read", {"since": "0123456789abcdef"})
    assert missing.is_error and "nowhere.ipynb" in text_of(missing)
    assert unknown.is_error and "0123456789abcdef" in text_of(unknown)


async def test_a_run_answers_with_its_outputs_and_images(server: RunningServer) -> None:
    show = "from IPython.display import Image, display\ndisplay(Image(data=DATA, format='png'))"
    cells = [
        nbformat.v4.new_code_cell(f"import base64\nDATA = base64.b64decode({PNG!r})", id="d1"),
        nbformat.v4.new_code_cell(show, id="s1"),
    ]
    path = write_notebook(server, "ran.ipynb", *cells)
    async with door_to(server) as door:
        await call(door, "notebook_read", path=path)
        result = await door.call_tool("cell_run", {"path": path, "ids": ["d1", "s1"]})
    assert not result.is_error, text_of(result)
    images = [item for item in result.content if isinstance(item, types.ImageContent)]
    assert [base64.b64decode(image.data) for image in images] == [base64.b64decode(PNG)]
    assert '@@cell {"cell_type":"code","execution_count":2,"id":"s1"' in text_of(result)


async def test_a_read_notebook_is_a_resource_updated_when_thomas_edits_it(
    server: RunningServer, api: httpx.Client
) -> None:
    path = write_notebook(server, "resource.ipynb", nbformat.v4.new_code_cell("n = 1", id="c1"))
    uri = f"notebook://{path}"
    heard: list[types.ServerNotification] = []

    def updated() -> bool:
        return any(
            isinstance(note, types.ResourceUpdatedNotification) and str(note.params.uri) == uri
            for note in heard
        )

    async with door_to(server, heard) as door, thomas_in(server, api, path) as thomas:
        await call(door, "notebook_read", path=path)
        listed = await door.list_resources()
        assert uri in [str(resource.uri) for resource in listed.resources]
        type_into(thomas, "c1", "  # Thomas")
        await until(lambda: call(door, "notebooks_list"), "by Thomas", "Thomas's edit to be seen")
        await eventually(updated, "notifications/resources/updated", DEADLINE)
        read = await door.read_resource(uri)
    assert "n = 1  # Thomas" in read.contents[0].text  # type: ignore[union-attr]


async def test_a_cut_output_names_a_resource_holding_all_of_it(server: RunningServer) -> None:
    printed = "".join(f"line {n}\n" for n in range(1000))
    cell = nbformat.v4.new_code_cell("for n in range(1000): print('line', n)", id="c1")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
    path = write_notebook(server, "long.ipynb", cell)
    ref = "notebook://long.ipynb#c1/outputs/0"
    async with door_to(server) as door:
        read = await call(door, "notebook_read", path=path)
        whole = await door.read_resource(ref)
    assert f"more characters: read {ref}" in read and "line 999" not in read
    assert printed in whole.contents[0].text  # type: ignore[union-attr]


async def test_the_door_follows_a_restarted_server_to_its_new_port(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    env = jupyter_env(tmp_path / "jupyter")
    env.pop("GANYMEDE_URL", None)
    first = start_server(root, env)
    nbformat.write(nbformat.v4.new_notebook(), root / "kept.ipynb")
    try:
        async with mcp_door(door_parameters(root, env)) as door:
            assert '"path":"kept.ipynb"' in await call(door, "notebooks_list")
            stop_server(first)
            second = start_server(root, env)
            try:
                assert second.port != first.port
                assert '"path":"kept.ipynb"' in await call(door, "notebooks_list")
            finally:
                stop_server(second)
    finally:
        stop_server(first)
