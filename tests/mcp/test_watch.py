"""``ganymede mcp watch`` and ``ganymede mcp changes`` as processes, with Thomas in a room."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import nbformat
import pytest

from tests.mcp.conftest import CLIENT_NAME, add_markdown, call, door_to, thomas_in, type_into, until
from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server

pytestmark = pytest.mark.slow

SETTLE = 0.5
FIRST_LINE = 60.0  # the watch process starting up, before it is known to be connected


@asynccontextmanager
async def watching(server: RunningServer, *args: str) -> AsyncIterator[asyncio.subprocess.Process]:
    """A watch process, once it says it is watching (it prints what happens from then on)."""
    env = jupyter_env(server.root.parent / "jupyter")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "ganymede", "mcp", "watch", "--url", server.base, "--token", server.token),
        *("--settle", str(SETTLE), *args),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=server.root,
    )
    try:
        await connected(process)
        yield process
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
            await process.wait()


async def connected(process: asyncio.subprocess.Process) -> None:
    """Wait for the watch to say on stderr that it reached a server."""
    assert process.stderr is not None
    while True:
        line = await asyncio.wait_for(process.stderr.readline(), FIRST_LINE)
        assert line, "watch ended before it reached the server"
        if line.startswith(b"ganymede mcp watch: watching "):
            return


async def next_line(process: asyncio.subprocess.Process, timeout: float) -> str:
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), timeout)
    assert line, "watch ended"
    return line.decode().rstrip("\n")


def open_agent_session(api: httpx.Client) -> str:
    """An agent session of the client's name: requests count only while one is open."""
    answer = api.post("api/agent/sessions", json={"agent": CLIENT_NAME})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["session"])


def write_notebook(server: RunningServer, name: str) -> str:
    cell = nbformat.v4.new_code_cell("rows = load(2019)", id="c1")
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), server.root / name)
    return name


async def test_a_request_is_one_line_and_an_ordinary_edit_none(
    server: RunningServer, api: httpx.Client
) -> None:
    path = write_notebook(server, "journal.ipynb")
    session = open_agent_session(api)
    async with thomas_in(server, api, path) as thomas, watching(server) as watch:
        add_markdown(thomas, "@agent are you there?", "ask0")
        first = await next_line(watch, FIRST_LINE)
        assert first.startswith("journal.ipynb: Thomas asked in cell ask0 (request)")
        type_into(thomas, "c1", "  # an ordinary edit")
        add_markdown(thomas, "@agent check the 2019 rows", "ask1")
        asked = time.monotonic()
        line = await next_line(watch, SETTLE + 1 + FIRST_LINE)
        took = time.monotonic() - asked
        assert line == (
            'journal.ipynb: Thomas asked in cell ask1 (request): "check the 2019 rows"'
            ' → notebook_read(path: "journal.ipynb")'
        )
        assert took < SETTLE + 1, f"the request took {took:.2f} s to be printed"
        add_markdown(thomas, "@agent and 2020?", "ask2")
        # Had the ordinary edit been printed, it would come before this line.
        assert (await next_line(watch, FIRST_LINE)).startswith(
            "journal.ipynb: Thomas asked in cell ask2"
        )
        watch.send_signal(signal.SIGINT)
        assert await watch.wait() == 0
        assert watch.stderr is not None
        assert b"Traceback" not in await watch.stderr.read()
    api.delete(f"api/agent/sessions/{session}")


async def test_with_all_every_settled_edit_by_thomas_is_a_json_line(
    server: RunningServer, api: httpx.Client
) -> None:
    path = write_notebook(server, "all.ipynb")
    async with (
        thomas_in(server, api, path) as thomas,
        watching(server, "--all", "--json") as watch,
    ):
        type_into(thomas, "c1", "  # first")
        event = json.loads(await next_line(watch, FIRST_LINE))
        assert (event["path"], event["id"], event["by"]) == (path, "c1", "Thomas")
        assert event["change"] == ["edited"]
        type_into(thomas, "c1", "  # second")
        again = json.loads(await next_line(watch, FIRST_LINE))
        assert again["source"].endswith("# first  # second")


async def test_changes_for_a_hook_name_thomas_and_nothing_without_a_server(
    server: RunningServer, api: httpx.Client, tmp_path_factory: object
) -> None:
    path = write_notebook(server, "hooked.ipynb")
    async with door_to(server) as door, thomas_in(server, api, path) as thomas:
        await call(door, "notebook_read", path=path)
        type_into(thomas, "c1", "  # Thomas")
        await until(lambda: call(door, "notebooks_list"), "by Thomas", "Thomas's edit")
        answer = await changes(server, "--hook", "user-prompt", "--url", server.base)
    output = json.loads(answer)["hookSpecificOutput"]
    assert output["hookEventName"] == "UserPromptSubmit"
    assert "Changes by others in hooked.ipynb" in output["additionalContext"]
    assert re.search(r"@@changed 1 cell (in \S+ )?by Thomas", output["additionalContext"])


async def test_changes_print_nothing_when_no_server_runs(server: RunningServer) -> None:
    elsewhere = server.root.parent / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    assert await changes(server, "--hook", "post-tool", cwd=str(elsewhere)) == ""


async def changes(server: RunningServer, *args: str, cwd: str | None = None) -> str:
    env = jupyter_env(server.root.parent / "jupyter", GANYMEDE_TOKEN=server.token)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "ganymede", "mcp", "changes", "--agent", CLIENT_NAME, *args),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=cwd or server.root.parent,
    )
    hook_input = json.dumps({"session_id": "s", "hook_event_name": "UserPromptSubmit"}).encode()
    out, err = await process.communicate(hook_input)
    assert process.returncode == 0, err.decode()
    return out.decode()


async def test_watch_finds_a_restarted_server_and_prints_each_request_once(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    env = jupyter_env(tmp_path / "jupyter")
    env.pop("GANYMEDE_URL", None)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "ganymede", "mcp", "watch", "--settle", str(SETTLE)),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=root,
    )
    lines = []
    try:
        for turn in ("before", "after"):
            server = start_server(root, env)
            try:
                with server.client() as api:
                    path = write_notebook(server, f"{turn}.ipynb")
                    open_agent_session(api)
                    await connected(process)
                    async with thomas_in(server, api, path) as thomas:
                        add_markdown(thomas, f"@agent {turn} the restart", f"ask-{turn}")
                        lines.append(await next_line(process, FIRST_LINE))
            finally:
                stop_server(server)
    finally:
        process.send_signal(signal.SIGINT)
        assert await process.wait() == 0
    assert [line.split(":", 1)[0] for line in lines] == ["before.ipynb", "after.ipynb"]
    assert '"before the restart"' in lines[0] and '"after the restart"' in lines[1]
