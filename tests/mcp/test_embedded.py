"""With no server running, ``ganymede mcp`` serves the directory itself, for others to join."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from tests.mcp.conftest import call, door_parameters, mcp_door, runtime_files

pytestmark = pytest.mark.slow


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
