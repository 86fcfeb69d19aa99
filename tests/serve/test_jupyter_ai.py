"""jupyter-ai 3, installed whole, beside Ganymede: every one of its server extensions loads with
no error, and its router and persona manager are told of a chat room as soon as a chat client
opens one.

The server runs from the layered environment ``tests/jupyter_ai_env.py`` builds (``make
setup``), so jupyter-ai's extensions, one of which binds a port of its own, load in this test's
server only.
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import jupyter_ai_env
from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server
from tests.serve.rooms.client import eventually
from tests.serve.rooms.conftest import chat_client, open_session

pytestmark = pytest.mark.slow

# Enabled from the test venv's own config, not jupyter-ai's environment: the packages that find
# rooms (jupyterlab-chat, jupyter-ai's router) are the test venv's.
TEST_VENV_EXTENSIONS = ("jupyterlab_chat", "jupyter_ai_router")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def jupyter_ai_extensions() -> list[str]:
    """The server extensions jupyter-ai's packages enable, read from the files they install."""
    enabled: list[str] = []
    for config in sorted((jupyter_ai_env.config_dir() / "jupyter_server_config.d").glob("*.json")):
        extensions = json.loads(config.read_text())["ServerApp"]["jpserver_extensions"]
        enabled += [name for name, on in extensions.items() if on]
    return enabled


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    layered = jupyter_ai_env.python()
    if not layered.exists():
        pytest.fail(f"no jupyter-ai environment at {layered.parent.parent}: run `make setup`")
    home = tmp_path_factory.mktemp("jupyter-ai")
    root = home / "root"
    root.mkdir()
    (root / "ganymede.toml").write_text("[serve]\nsave_delay = 0.1\n")
    base_config = str(Path(sys.prefix) / "etc" / "jupyter")
    env = jupyter_env(home / "jupyter", JUPYTER_CONFIG_PATH=base_config)
    mcp_port = f"--MCPExtensionApp.mcp_port={free_port()}"
    running = start_server(root, env, mcp_port, python=str(layered))
    yield running
    stop_server(running)


def test_every_jupyter_ai_server_extension_loads_without_an_error(server: RunningServer) -> None:
    log = server.log.read_text()
    expected = [*jupyter_ai_extensions(), *TEST_VENV_EXTENSIONS]
    assert "jupyter_ai_router" in expected and len(expected) >= 5, expected
    loaded = "| extension was successfully loaded"
    not_loaded = [name for name in expected if f"{name} {loaded}" not in log]
    assert not not_loaded, f"not loaded: {not_loaded}\n{log}"
    errors = [line for line in log.splitlines() if line.startswith("[E ") or "Traceback" in line]
    assert not errors, "\n".join(errors)


async def test_jupyter_ais_router_is_told_of_a_chat_room(server: RunningServer) -> None:
    (server.root / "questions.chat").write_bytes(b"")  # as the chat panel creates it first
    with server.client() as api:
        room, session = open_session(api, "questions.chat", "text:chat")
    async with chat_client(server, room, session):
        await eventually(
            lambda: "to router" in server.log.read_text(), "jupyter-ai's router to connect it"
        )
        # jupyter-ai's persona manager, told by the router, sets the chat up in turn.
        await eventually(
            lambda: "Personas initialized in chat 'questions.chat'" in server.log.read_text(),
            "jupyter-ai's persona manager to set the chat up",
        )
