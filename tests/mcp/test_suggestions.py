"""Suggestions through a real ``ganymede mcp`` over stdio: ``cell_edit`` with ``suggest`` leaves
the notebook as it is, a person accepts from a shell (``ganymede suggestions accept``), and the
agent's next tool reply names them; ``suggestions_list`` shows the outcome too."""

from __future__ import annotations

import re
import subprocess
import sys

import nbformat
import pytest

from tests.mcp.conftest import call, door_to
from tests.serve.conftest import RunningServer, jupyter_env
from tests.serve.rooms.client import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
SUGGESTED = re.compile(r'@@suggested \{"cell":"cell-0","id":"([0-9a-f]+)"')


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def write_notebook(server: RunningServer, name: str, source: str) -> str:
    cell = nbformat.v4.new_code_cell(source)
    cell["id"] = "cell-0"
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), server.root / name)
    return name


def suggestions_cli(server: RunningServer, *args: str) -> subprocess.CompletedProcess[str]:
    env = jupyter_env(server.root.parent / "jupyter")
    command = [sys.executable, "-m", "ganymede", "suggestions", *args, "--url", server.base]
    command += ["--token", server.token]
    return subprocess.run(
        command, env=env, cwd=server.root, capture_output=True, text=True, timeout=60
    )


async def test_a_suggestion_accepted_from_a_shell_is_named_in_the_next_reply(
    server: RunningServer,
) -> None:
    path = write_notebook(server, "mcp-suggested.ipynb", "rate = 0.1")
    async with door_to(server) as session:
        await call(session, "notebook_read", path=path)
        reply = await call(
            session, "cell_edit", path=path, id="cell-0", source="rate = 0.2", suggest=True,
            title="Raise the rate",
        )  # fmt: skip
        found = SUGGESTED.search(reply)
        assert found, reply
        suggestion = found.group(1)
        assert "Waiting for a person" in reply
        assert "rate = 0.1" in await call(session, "notebook_read", path=path)

        listed = suggestions_cli(server, path)
        assert listed.returncode == 0, listed.stderr
        assert suggestion in listed.stdout and "Raise the rate" in listed.stdout

        accepted = suggestions_cli(server, "accept", suggestion, "--by", "Thomas")
        assert accepted.returncode == 0, accepted.stderr
        assert f"{suggestion} accepted" in accepted.stdout

        next_reply = await call(session, "suggestions_list")  # the next reply, whatever tool
        assert '"outcome":"accepted"' in next_reply and '"by":"Thomas"' in next_reply
        assert f"@@suggestion {suggestion} accepted by Thomas" in next_reply
        assert "@@suggestion " not in await call(session, "notebooks_list")  # told once
        assert "No suggestions." in await call(session, "suggestions_list")  # nothing left
        assert "rate = 0.2" in await call(session, "notebook_read", path=path)

        def on_disk() -> str:
            return str(nbformat.read(server.root / path, as_version=4).cells[0].source)

        await eventually(lambda: on_disk() == "rate = 0.2", "the accepted edit in the file")


def test_the_cli_refuses_an_unknown_suggestion_and_a_bad_action(server: RunningServer) -> None:
    unknown = suggestions_cli(server, "reject", "abcd", "--by", "Thomas")
    assert unknown.returncode != 0 and "abcd" in unknown.stderr
    bad = suggestions_cli(server, "merge", "abcd")
    assert bad.returncode != 0
