"""Ganymede in a plain ``jupyter server``: installing Ganymede enables its extension, and the
extension brings rooms, file ids that follow renames and the host API with no class option."""

from __future__ import annotations

import contextlib
import os
import pty
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.serve.conftest import STOP_TIMEOUT, RunningServer, jupyter_env
from tests.serve.plain_server import (
    SERVER_DOCUMENTS_PACKAGES,
    apart_env,
    install_apart,
    start_jupyter_server,
    stop_plain_server,
)
from tests.serve.rooms.client import eventually, room_client
from tests.serve.rooms.conftest import (
    edit_first_cell,
    notebook_bytes,
    open_session,
    sources,
    sources_on_disk,
    write,
)
from tests.serve.test_cli import page_config
from tests.serve.test_host_calls import run_cell, start_session

pytestmark = pytest.mark.slow

SERVER_DOCUMENTS = "@jupyter-ai-contrib/server-documents"
DOCPROVIDER = "@jupyter/docprovider-extension"
"""Whose document factory, cell executor, timeline and fork manager it would disable."""
NO_AUTOSAVE = b"[serve]\nsave_delay = 60.0\n"
USERS_CONTENTS = "tests.serve.marked_contents.MarkedContentsManager"


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    home = tmp_path_factory.mktemp("plain")
    root = home / "root"
    root.mkdir()
    running = start_jupyter_server(root, jupyter_env(home / "jupyter"))
    yield running
    stop_plain_server(running)


def file_id(api: httpx.Client, path: str) -> str:
    answer = api.get("api/fileid/id", params={"path": path})
    assert answer.status_code == 200, answer.text
    return str(answer.json()["id"])


def rename(api: httpx.Client, old: str, new: str) -> None:
    answer = api.patch(f"api/contents/{old}", json={"path": new})
    assert answer.status_code == 200, answer.text


async def test_a_room_edit_autosaves(plain: RunningServer) -> None:
    path = write(plain.root / "autosaved.ipynb", notebook_bytes("first"))
    with plain.client() as api:
        name, session = open_session(api, "autosaved.ipynb")
    async with room_client(plain, name, session) as ada:
        edit_first_cell(ada, " edit")
        await eventually(lambda: sources_on_disk(path) == ["first edit"], "the autosave")


async def test_a_rename_keeps_the_file_id_and_the_open_room_follows(plain: RunningServer) -> None:
    write(plain.root / "before.ipynb", notebook_bytes("kept"))
    with plain.client() as api:
        name, session = open_session(api, "before.ipynb")
        async with room_client(plain, name, session) as ada:
            rename(api, "before.ipynb", "after.ipynb")
            assert file_id(api, "after.ipynb") == name.rsplit(":", 1)[1]
            edit_first_cell(ada, " and followed")
            after = plain.root / "after.ipynb"
            await eventually(lambda: sources_on_disk(after) == ["kept and followed"], "the save")
        assert not (plain.root / "before.ipynb").exists()


async def test_a_cell_of_a_kernel_it_started_reaches_the_host(plain: RunningServer) -> None:
    write(plain.root / "hosted.ipynb", notebook_bytes())
    with plain.client() as api:
        kernel = start_session(api, "hosted.ipynb")
        try:
            printed = await run_cell(
                plain, kernel, "from ganymede.kernel import host\nprint(host() is not None)"
            )
            assert printed == "True\n"
        finally:
            api.delete(f"api/kernels/{kernel}")


def test_the_log_says_nothing_is_missing(plain: RunningServer) -> None:
    log = plain.log.read_text()
    assert "ganymede.serve.extension | extension was successfully loaded" in log
    assert "does not move file ids" not in log


async def test_a_users_own_contents_manager_keeps_working_with_ids_that_follow(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    write(root / "mine.ipynb", notebook_bytes("mine"))
    env = jupyter_env(tmp_path / "jupyter")
    server = start_jupyter_server(root, env, f"--ServerApp.contents_manager_class={USERS_CONTENTS}")
    try:
        with server.client() as api:
            assert api.get("api/contents/mine.ipynb").json()["marked"] is True
            name, _ = open_session(api, "mine.ipynb")
            rename(api, "mine.ipynb", "moved.ipynb")
            assert file_id(api, "moved.ipynb") == name.rsplit(":", 1)[1]
            assert api.get("api/contents/moved.ipynb").json()["marked"] is True
            assert api.delete("api/contents/moved.ipynb").status_code == 204
            assert (
                api.get("api/fileid/path", params={"id": name.rsplit(":", 1)[1]}).status_code == 404
            )
    finally:
        stop_plain_server(server)
    assert "does not move file ids" not in server.log.read_text()


@pytest.mark.parametrize(
    ("stop", "terminal"),
    [(signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGINT, True)],
    ids=["SIGINT", "SIGTERM", "SIGINT-on-a-terminal"],
)
async def test_a_stop_signal_saves_the_rooms_and_exits(
    tmp_path: Path, stop: signal.Signals, terminal: bool
) -> None:
    """A spawner's SIGINT used to be logged and ignored with no terminal (the hub then waited
    for its SIGKILL, losing the edits), and on a terminal it asked "Shut down this server?";
    now either signal saves and exits."""
    root = tmp_path / "root"
    write(root / "ganymede.toml", NO_AUTOSAVE)
    path = write(root / "stop.ipynb", notebook_bytes("unsaved"))
    with contextlib.ExitStack() as stack:
        stdin = subprocess.DEVNULL
        if terminal:
            controller, terminal_end = pty.openpty()
            stack.callback(os.close, controller)
            stack.callback(os.close, terminal_end)
            stdin = terminal_end
        server = start_jupyter_server(root, jupyter_env(tmp_path / "jupyter"), stdin=stdin)
        try:
            with server.client() as api:
                name, session = open_session(api, "stop.ipynb")
            async with room_client(server, name, session) as ada:
                edit_first_cell(ada, " edit")
                async with room_client(server, name, session) as bob:
                    await eventually(lambda: sources(bob) == ["unsaved edit"], "the edit")
                server.process.send_signal(stop)
                assert server.process.wait(timeout=STOP_TIMEOUT) == 0, server.log.read_text()
            assert sources_on_disk(path) == ["unsaved edit"]
        finally:
            stop_plain_server(server)
    assert "Shut down this server" not in server.log.read_text()


def test_disabling_the_extension_turns_it_off(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / "off.ipynb", notebook_bytes())
    env = jupyter_env(tmp_path / "jupyter")
    # --user: the config dir of this test (in a virtualenv the default is the environment's).
    disable = [sys.executable, "-m", "jupyter", "server", "extension", "disable", "--user"]
    subprocess.run([*disable, "ganymede.serve.extension"], env=env, check=True, capture_output=True)
    server = start_jupyter_server(root, env)
    try:
        with server.client() as api:
            assert api.get("api/contents/off.ipynb").status_code == 200
            assert api.get("api/fileid/id", params={"path": "off.ipynb"}).status_code == 404
    finally:
        stop_plain_server(server)


@pytest.fixture(scope="module")
def collaboration(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """jupyter-collaboration's server extensions, installed from PyPI apart from this
    environment (their own dependencies are Ganymede's too), with the config files that enable
    them."""
    packages = ["jupyter-collaboration>=4", "jupyter-server-ydoc>=1", "jupyter-server-fileid>=0.9"]
    return install_apart(tmp_path_factory.mktemp("collaboration"), *packages)


async def edit_and_stop_beside(server: RunningServer, path: Path) -> str:
    """A room edit of ``path`` autosaves and SIGTERM stops the server cleanly beside extensions
    Ganymede keeps disabled, which the log names once; the log."""
    try:
        with server.client() as api:
            name, session = open_session(api, path.name)
        async with room_client(server, name, session) as ada:
            edit_first_cell(ada, " and Ganymede's")
            await eventually(lambda: sources_on_disk(path) == ["ours and Ganymede's"], "a save")
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=STOP_TIMEOUT) == 0
    finally:
        stop_plain_server(server)
    log = server.log.read_text()
    assert log.count("kept disabled") == 1, log
    assert "Traceback" not in log, log
    return log


async def test_jupyter_collaboration_installed_is_set_aside_in_one_line_and_stops_cleanly(
    tmp_path: Path, collaboration: Path
) -> None:
    path = write(tmp_path / "root" / "shared.ipynb", notebook_bytes("ours"))
    env = apart_env(jupyter_env(tmp_path / "jupyter"), collaboration)
    log = await edit_and_stop_beside(start_jupyter_server(path.parent, env), path)
    assert "jupyter_server_ydoc, jupyter_server_fileid installed and kept disabled" in log


@pytest.fixture(scope="module")
def server_documents(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """jupyter-server-documents from PyPI apart from this environment: its server extension,
    the config file enabling it and its JupyterLab extension (under ``share/jupyter``), with
    the one dependency of its own this environment lacks."""
    return install_apart(tmp_path_factory.mktemp("server-documents"), *SERVER_DOCUMENTS_PACKAGES)


async def test_jupyter_server_documents_installed_is_kept_out_of_the_server_and_the_page(
    tmp_path: Path, server_documents: Path
) -> None:
    path = write(tmp_path / "root" / "shared.ipynb", notebook_bytes("ours"))
    env = apart_env(jupyter_env(tmp_path / "jupyter"), server_documents)
    server = start_jupyter_server(path.parent, env, module="jupyterlab")
    try:
        with server.client() as api:
            page = page_config(api)
    except BaseException:
        stop_plain_server(server)
        raise
    found = [extension["name"] for extension in page["federated_extensions"]]
    assert SERVER_DOCUMENTS in found  # JupyterLab found its frontend...
    disabled = page["disabledExtensions"]
    assert SERVER_DOCUMENTS in disabled  # ...which stays off,
    assert not [plugin for plugin in disabled if plugin.startswith(DOCPROVIDER)], disabled
    log = await edit_and_stop_beside(server, path)
    assert "jupyter_server_fileid, jupyter_server_documents installed and kept disabled" in log


def test_jupyter_lab_serves_what_ganymede_serve_does(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / "lab.ipynb", notebook_bytes())
    server = start_jupyter_server(root, jupyter_env(tmp_path / "jupyter"), module="jupyterlab")
    try:
        with server.client() as api:
            indexed = api.post("api/fileid/index", params={"path": "lab.ipynb"})
            assert indexed.status_code == 201, indexed.text
            assert page_config(api)["serverSideExecution"] == "true"
    finally:
        stop_plain_server(server)
