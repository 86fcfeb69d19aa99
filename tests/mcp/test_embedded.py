"""With no server running, ``ganymede mcp`` serves the directory itself, for others to join."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from tests.mcp.conftest import call, door_parameters, mcp_door
from tests.serve.conftest import jupyter_env

pytestmark = pytest.mark.slow


@pytest.fixture
def alone(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "root"
    root.mkdir()
    cell = nbformat.v4.new_code_cell("print('hello')", id="c1")
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), root / "solo.ipynb")
    env = jupyter_env(tmp_path / "jupyter")
    env.pop("GANYMEDE_URL", None)
    return root, env


def runtime_files(env: dict[str, str]) -> list[dict[str, object]]:
    folder = Path(env["JUPYTER_RUNTIME_DIR"])
    return [json.loads(file.read_text()) for file in folder.glob("jpserver-*.json")]


async def test_the_embedded_server_serves_the_tools_and_writes_its_runtime_file(
    alone: tuple[Path, dict[str, str]],
) -> None:
    root, env = alone
    async with mcp_door(door_parameters(root, env)) as door:
        listing = await call(door, "notebooks_list")
        served = runtime_files(env)
        ran = await call(door, "cell_run", path="solo.ipynb", ids=["c1"])
    assert '"path":"solo.ipynb"' in listing
    assert [Path(str(info["root_dir"])).resolve() for info in served] == [root.resolve()]
    told = (root.parent / "door.log").read_text()
    assert f"serving it here: {served[0]['url']}lab?token={served[0]['token']}" in told
    assert "hello" in ran
    assert runtime_files(env) == []  # the server stopped with the door
    saved = nbformat.read(root / "solo.ipynb", as_version=4)
    assert saved.cells[0].outputs[0]["text"] == "hello\n"
