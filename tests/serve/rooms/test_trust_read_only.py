"""Trust Notebook on a read-only room is refused, naming the server that owns the file: signing
there would not last, since the owner's room saves over the file without knowing."""

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

from tests.serve.rooms.client import eventually, room_client
from tests.serve.rooms.conftest import open_session, write
from tests.serve.rooms.test_two_servers import Pair, start_pair, stop_server, writable

pytestmark = pytest.mark.slow


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    servers = start_pair(tmp_path)
    cell = new_code_cell("show()", execution_count=1)
    cell.outputs = [new_output("display_data", data={"text/html": "<b>from elsewhere</b>"})]
    write(servers.notebook, (nbformat.writes(new_notebook(cells=[cell])) + "\n").encode())
    yield servers
    stop_server(servers.second)
    stop_server(servers.first)


def signed(pair: Pair) -> bool:
    """By the notary both servers share (one Jupyter data dir)."""
    with NotebookNotary(data_dir=str(pair.runtime_dir.parent / "data")) as notary:
        return bool(notary.check_signature(nbformat.read(pair.notebook, as_version=4)))


async def test_trust_on_the_read_only_room_is_409_naming_the_owner_and_signs_nothing(
    pair: Pair,
) -> None:
    with pair.first.client() as first_api, pair.second.client() as second_api:
        first_name, first_session = open_session(first_api, "nb.ipynb")
        second_name, second_session = open_session(second_api, "nb.ipynb")
        first = room_client(pair.first, first_name, first_session)
        second = room_client(pair.second, second_name, second_session)
        async with first, second:
            assert not writable(pair.second, "nb.ipynb")
            refused = second_api.post("api/contents/nb.ipynb/trust")
            assert refused.status_code == 409
            owner = f"the server at {pair.first.base} (pid {pair.first.process.pid}) owns it"
            why = f"Open read-only here: {owner}; trust it there"
            assert refused.reason_phrase == why
            assert f"nb.ipynb: open read-only here: {owner}" in refused.text  # the error page
            assert not signed(pair)

            done = subprocess.run(
                [sys.executable, "-m", "ganymede", "trust", "--url", pair.second.url, "nb.ipynb"],
                capture_output=True,
                text=True,
                cwd=pair.root,
                env={**os.environ, "JUPYTER_RUNTIME_DIR": str(pair.runtime_dir)},
                timeout=60,
            )
            assert done.returncode == 6
            assert done.stderr == (
                f"ganymede trust: error: nb.ipynb: the server refused: 409 {why}\n"
            )
            assert not signed(pair)

            # Through the owner it works, and the room there signs what it saves.
            trusted = first_api.post("api/contents/nb.ipynb/trust")
            assert trusted.status_code == 201, trusted.text
            await eventually(lambda: signed(pair), "the owner's room to sign")
