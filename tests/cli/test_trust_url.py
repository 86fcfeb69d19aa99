"""``ganymede trust --url/--token`` (or GANYMEDE_URL/GANYMEDE_TOKEN) signs through that server."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from nbformat.sign import NotebookNotary
from nbformat.v4 import new_code_cell, new_notebook, new_output

from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    home = tmp_path_factory.mktemp("server")
    (home / "root").mkdir()
    running = start_server(home / "root", jupyter_env(home / "jupyter"))
    yield running
    stop_server(running)


def trust(
    *args: str, cwd: Path, runtime_dir: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """The CLI with the test's own Jupyter dirs (so it finds no server by itself) unless
    ``runtime_dir`` is the server's."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("GANYMEDE_")} | env
    if runtime_dir is not None:
        environment["JUPYTER_RUNTIME_DIR"] = str(runtime_dir)
    return subprocess.run(
        [sys.executable, "-m", "ganymede", "trust", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environment,
        timeout=60,
    )


def html_notebook(path: Path) -> Path:
    cell = new_code_cell("show()", execution_count=1)
    cell.outputs = [new_output("display_data", data={"text/html": f"<b>{path.name}</b>"})]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(new_notebook(cells=[cell]), path)
    return path


def signed_by(data_dir: Path | None, path: Path) -> bool:
    notary = NotebookNotary(data_dir=str(data_dir)) if data_dir else NotebookNotary()
    with notary:
        return bool(notary.check_signature(nbformat.read(path, as_version=4)))


def server_data(server: RunningServer) -> Path:
    return server.root.parent / "jupyter" / "data"


def test_url_as_serve_prints_it_signs_through_that_server(server: RunningServer) -> None:
    notebook = html_notebook(server.root / "printed.ipynb")
    done = trust("--url", server.url, "printed.ipynb", cwd=server.root)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "printed.ipynb: signed\n"
    assert signed_by(server_data(server), notebook)  # the server's notary, not this process's
    assert not signed_by(None, notebook)


def test_environment_names_the_server_and_its_token(server: RunningServer) -> None:
    notebook = html_notebook(server.root / "sub" / "env.ipynb")
    done = trust(
        "sub/env.ipynb", cwd=server.root, GANYMEDE_URL=server.base, GANYMEDE_TOKEN=server.token
    )
    assert done.returncode == 0, done.stderr
    assert signed_by(server_data(server), notebook)


def test_the_runtime_file_of_the_url_gives_its_root_and_token(server: RunningServer) -> None:
    notebook = html_notebook(server.root / "deeper" / "here.ipynb")
    runtime_dir = server.root.parent / "jupyter" / "runtime"
    done = trust("--url", server.base, "here.ipynb", cwd=notebook.parent, runtime_dir=runtime_dir)
    assert done.returncode == 0, done.stderr
    assert signed_by(server_data(server), notebook)


def test_a_wrong_token_is_refused_and_nothing_is_signed(server: RunningServer) -> None:
    notebook = html_notebook(server.root / "refused.ipynb")
    done = trust("--url", server.base, "--token", "wrong", "refused.ipynb", cwd=server.root)
    assert done.returncode == 6
    assert done.stderr.startswith("ganymede trust: error: refused.ipynb: the server refused: 403")
    assert not signed_by(server_data(server), notebook)
    assert not signed_by(None, notebook)


def test_a_notebook_the_server_does_not_have_exits_5(server: RunningServer) -> None:
    done = trust("--url", server.url, "absent.ipynb", cwd=server.root)
    assert done.returncode == 5
    assert done.stderr == "ganymede trust: error: absent.ipynb: no such file or directory\n"


def test_a_server_that_does_not_answer_is_an_error_not_a_file_signature(tmp_path: Path) -> None:
    notebook = html_notebook(tmp_path / "alone.ipynb")
    done = trust("--url", "http://127.0.0.1:1/", "alone.ipynb", cwd=tmp_path)
    assert done.returncode == 6
    assert "alone.ipynb: the server does not answer" in done.stderr
    assert not signed_by(None, notebook)
