"""Rooms sign what they save once every output is trusted; Trust Notebook goes through the room."""

from __future__ import annotations

import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import nbformat
import pytest
from jupyter_ydoc import YNotebook
from nbformat.sign import NotebookNotary
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from ganymede.serve.rooms import protocol
from ganymede.serve.rooms.protocol import MessageType
from tests.serve.conftest import RunningServer, jupyter_env
from tests.serve.kernel_socket import KernelSocket, connect
from tests.serve.rooms.client import RoomClient, eventually, room_client
from tests.serve.rooms.conftest import edit_first_cell, open_session, write

pytestmark = pytest.mark.slow

UNTRUSTED_HTML = "<b>from somewhere else</b>"


def html_output(html: str) -> dict[str, Any]:
    return dict(new_output("display_data", data={"text/html": html, "text/plain": "x"}))


def notebook_with_html(server: RunningServer, path: str, *htmls: str) -> Path:
    """A notebook whose code cells each show HTML, plus a markdown cell first; unsigned."""
    cells = [new_markdown_cell("# notes")]
    for index, html in enumerate(htmls):
        cell = new_code_cell(f"show({index})", execution_count=index + 1)
        cell.outputs = [new_output("display_data", data={"text/html": html, "text/plain": "x"})]
        cells.append(cell)
    text = nbformat.writes(new_notebook(cells=cells)) + "\n"
    return write(server.root / path, text.encode())


def notary(server: RunningServer) -> NotebookNotary:
    """The server's own notary: its Jupyter data dir, not the test's."""
    return NotebookNotary(data_dir=str(server.root.parent / "jupyter" / "data"))


def signed(server: RunningServer, path: Path) -> bool:
    with notary(server) as server_notary:
        return bool(server_notary.check_signature(nbformat.read(path, as_version=4)))


async def saved(client: RoomClient, path: Path, text: str) -> None:
    """Wait for the room to write ``text``, then for an explicit save: its answer comes after
    every earlier save of the room finished, signing included."""
    await eventually(lambda: text in path.read_text(), f"the room to save {text!r}")
    await client.send_raw(protocol.save_request(0))
    answer = protocol.decode_raw_json(await client.next_frame(MessageType.RAW))
    assert answer["status"] == "success"


def write_outputs(client: RoomClient, cell_index: int, outputs: list[dict[str, Any]]) -> None:
    """Replace a cell's outputs as a frontend does when a run's results arrive."""
    notebook: YNotebook = client.shared  # type: ignore[assignment]
    youtputs = notebook.ycells[cell_index]["outputs"]
    with notebook.ydoc.transaction():
        youtputs.clear()
        youtputs.extend(notebook._create_youtputs(outputs))
        notebook.ystate["dirty"] = True


def post_trust(api: httpx.Client, path: str) -> httpx.Response:
    return api.post(f"api/contents/{urllib.parse.quote(path)}/trust")


async def test_an_untrusted_notebook_edited_in_a_room_is_saved_unsigned(
    server: RunningServer, api: httpx.Client
) -> None:
    path = notebook_with_html(server, "trust/edited.ipynb", UNTRUSTED_HTML)
    name, session = open_session(api, "trust/edited.ipynb")
    async with room_client(server, name, session) as ada:
        edit_first_cell(ada, " and more")
        await saved(ada, path, "and more")
    assert not signed(server, path)


def append_output(client: RoomClient, cell_index: int, output: dict[str, Any]) -> None:
    """Add one output to a cell, as a client writing into the document can."""
    notebook: YNotebook = client.shared  # type: ignore[assignment]
    with notebook.ydoc.transaction():
        notebook.ycells[cell_index]["outputs"].extend(notebook._create_youtputs([output]))
        notebook.ystate["dirty"] = True


def mark(client: RoomClient, cell_index: int) -> object:
    return client.shared.get()["cells"][cell_index]["metadata"].get("trusted")


def trust_check(server: RunningServer, path: Path) -> subprocess.CompletedProcess[str]:
    """``ganymede trust --check`` on the file, against the server's signature store."""
    env = jupyter_env(server.root.parent / "jupyter")
    command = [sys.executable, "-m", "ganymede", "trust", "--check", path.name]
    return subprocess.run(
        command, capture_output=True, text=True, cwd=path.parent, env=env, timeout=60
    )


@pytest.fixture
def kernel(server: RunningServer, api: httpx.Client) -> Iterator[str]:
    """A python3 kernel started through the server's REST API, as JupyterLab starts one."""
    started = api.post("api/kernels", json={"name": "python3"})
    assert started.status_code == 201, started.text
    kernel_id = str(started.json()["id"])
    yield kernel_id
    api.delete(f"api/kernels/{kernel_id}")


async def run_as_jupyterlab(socket: KernelSocket, code: str, cell_id: str) -> list[dict[str, Any]]:
    """Run a notebook's cell over the kernel websocket as JupyterLab does, and the outputs
    JupyterLab makes of its iopub messages (``{...content, output_type}``, no ``transient``)."""
    msg_id = await socket.execute(code, cell_id)
    reply, _ = await socket.finished(msg_id)
    assert reply["status"] == "ok", reply
    outputs = []
    for message in socket.received:
        msg_type = message["msg_type"]
        if message["parent_header"].get("msg_id") != msg_id or msg_type not in OUTPUT_MESSAGES:
            continue
        content = {key: value for key, value in message["content"].items() if key != "transient"}
        outputs.append({**content, "output_type": msg_type})
    return outputs


OUTPUT_MESSAGES = frozenset({"execute_result", "display_data", "stream", "error"})
SHOW_HTML = (
    "from IPython.display import HTML, display\n"
    "print('ran')\n"
    "display(HTML('<b>{text}</b><script>console.log(1)</script>'))\n"
    "HTML('<i>{text}, the result</i>')"
)


@pytest.mark.parametrize("signed_first", [False, True], ids=["unsigned", "signed"])
async def test_an_output_a_client_makes_up_is_not_trusted(
    server: RunningServer, api: httpx.Client, signed_first: bool
) -> None:
    name_on_disk = f"trust/forged-{signed_first}.ipynb"
    path = notebook_with_html(server, name_on_disk, "<b>mine</b>")
    if signed_first:
        with notary(server) as server_notary:
            server_notary.sign(nbformat.read(path, as_version=4))
    name, session = open_session(api, name_on_disk)
    async with room_client(server, name, session) as mallory:
        forged = html_output("<b>forged</b><script>steal()</script>")
        append_output(mallory, 1, forged)  # no kernel ever ran this
        await saved(mallory, path, "steal()")
        # A page opened now would believe a trusted mark on the cell: it goes.
        await eventually(lambda: mark(mallory, 1) is None, "the cell's trusted mark to go")
    assert not signed(server, path)
    checked = trust_check(server, path)
    assert checked.returncode == 1, checked.stdout + checked.stderr


@pytest.mark.parametrize("v1", [False, True], ids=["json", "v1"])
async def test_outputs_a_client_got_from_a_kernel_of_the_server_get_the_file_signed(
    server: RunningServer, api: httpx.Client, kernel: str, v1: bool
) -> None:
    """JupyterLab's own runs (server-side execution off): it sends the cell over the kernel
    websocket and writes the outputs it receives into the room itself."""
    name_on_disk = f"trust/ran-{v1}.ipynb"
    path = notebook_with_html(server, name_on_disk, UNTRUSTED_HTML, "<i>old</i>")
    name, session = open_session(api, name_on_disk)
    socket = await connect(server, kernel, v1)
    try:
        async with room_client(server, name, session) as ada:
            cells = ada.shared.get()["cells"]
            for index, text in ((1, "ran here"), (2, "ran here too")):
                code = SHOW_HTML.format(text=text)
                write_outputs(ada, index, await run_as_jupyterlab(socket, code, cells[index]["id"]))
                await saved(ada, path, text)
                # The second cell still shows the unsigned file's HTML until it runs too.
                assert signed(server, path) is (index == 2)
    finally:
        await socket.close()
    checked = trust_check(server, path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


async def test_a_client_writing_back_the_untrusted_outputs_does_not_make_them_trusted(
    server: RunningServer, api: httpx.Client
) -> None:
    path = notebook_with_html(server, "trust/laundered.ipynb", UNTRUSTED_HTML)
    name, session = open_session(api, "trust/laundered.ipynb")
    async with room_client(server, name, session) as ada:
        write_outputs(ada, 1, [])
        await eventually(lambda: UNTRUSTED_HTML not in path.read_text(), "the cleared outputs")
        await saved(ada, path, "")
        assert signed(server, path)  # nothing rich left: nothing to distrust
        write_outputs(ada, 1, [html_output(UNTRUSTED_HTML)])
        await saved(ada, path, UNTRUSTED_HTML)
    assert not signed(server, path)


async def test_trust_notebook_with_the_room_open_signs_and_later_saves_stay_signed(
    server: RunningServer, api: httpx.Client
) -> None:
    path = notebook_with_html(server, "trust/trusted.ipynb", UNTRUSTED_HTML)
    name, session = open_session(api, "trust/trusted.ipynb")
    async with room_client(server, name, session) as ada:
        edit_first_cell(ada, " (edited)")
        await saved(ada, path, "(edited)")
        assert not signed(server, path)
        assert post_trust(api, "trust/trusted.ipynb").status_code == 201
        assert signed(server, path)
        edit_first_cell(ada, " (later)")
        await saved(ada, path, "(later)")
    assert signed(server, path)


async def test_a_signed_notebook_stays_signed_after_a_markdown_edit(
    server: RunningServer, api: httpx.Client
) -> None:
    path = notebook_with_html(server, "trust/signed.ipynb", UNTRUSTED_HTML)
    with notary(server) as server_notary:
        server_notary.sign(nbformat.read(path, as_version=4))
    name, session = open_session(api, "trust/signed.ipynb")
    async with room_client(server, name, session) as ada:
        edit_first_cell(ada, " edited")  # the first cell is the markdown one
        await saved(ada, path, "# notes edited")
    assert signed(server, path)


async def test_ganymede_trust_goes_through_the_server_serving_the_notebook(
    server: RunningServer, api: httpx.Client, isolated_jupyter: Path
) -> None:
    path = notebook_with_html(server, "trust/cli.ipynb", UNTRUSTED_HTML)
    name, session = open_session(api, "trust/cli.ipynb")
    async with room_client(server, name, session) as ada:
        edit_first_cell(ada, " (in the room)")
        done = subprocess.run(
            [sys.executable, "-m", "ganymede", "trust", "cli.ipynb"],
            capture_output=True,
            text=True,
            cwd=path.parent,
            env=cli_env(server, isolated_jupyter),
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "cli.ipynb: signed"
        await eventually(lambda: "(in the room)" in path.read_text(), "the room's save")
    # Signed by the server (its data dir), with the room's edit in: not by the CLI on the file.
    assert signed(server, path)
    with NotebookNotary() as own_notary:
        assert not own_notary.check_signature(nbformat.read(path, as_version=4))


def cli_env(server: RunningServer, isolated_jupyter: Path) -> dict[str, str]:
    """The CLI finds the server's runtime file, but keeps its own (empty) signature store."""
    import os

    env = dict(os.environ)
    env["JUPYTER_RUNTIME_DIR"] = str(server.root.parent / "jupyter" / "runtime")
    env["JUPYTER_DATA_DIR"] = str(isolated_jupyter / "data")
    return env


@pytest.mark.parametrize("signed_on_disk", [True, False], ids=["signed", "unsigned"])
async def test_outputs_another_program_writes_are_trusted_only_from_a_signed_version(
    server: RunningServer, api: httpx.Client, signed_on_disk: bool
) -> None:
    name_on_disk = f"trust/merged-{signed_on_disk}.ipynb"
    path = notebook_with_html(server, name_on_disk, "<b>mine</b>")
    with notary(server) as server_notary:
        server_notary.sign(nbformat.read(path, as_version=4))
    name, session = open_session(api, name_on_disk)
    async with room_client(server, name, session) as ada:
        theirs = nbformat.read(path, as_version=4)
        theirs.cells[1].outputs[0]["data"]["text/html"] = "<b>another program's</b>"
        if signed_on_disk:
            with notary(server) as server_notary:
                server_notary.sign(theirs)
        nbformat.write(theirs, path)
        await eventually(lambda: "another program's" in str(ada.shared.get()), "the merge")
        edit_first_cell(ada, " edited")  # the markdown cell
        await saved(ada, path, "# notes edited")
    assert signed(server, path) is signed_on_disk
