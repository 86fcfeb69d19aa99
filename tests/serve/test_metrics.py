"""Ganymede's metrics on jupyter_server's ``/metrics``, read as Prometheus reads them.

Each test reads the figures before and after what it does and checks the difference: the module's
server is shared, and other tests' rooms and saves count too.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server
from tests.serve.execution.conftest import execute, hashed, notebook_with
from tests.serve.rooms.client import eventually, room_client
from tests.serve.rooms.conftest import (
    edit_first_cell,
    notebook_bytes,
    open_session,
    sources,
    sources_on_disk,
    write,
)

pytestmark = pytest.mark.slow

Figures = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def figures(api: httpx.Client) -> Figures:
    """Every sample ``/metrics`` shows, by name and labels."""
    answer = api.get("metrics")
    assert answer.status_code == 200, answer.text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def value(seen: Figures, name: str, **labels: str) -> float:
    return seen.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_need_the_servers_authentication(server: RunningServer) -> None:
    with server.client(authenticated=False) as anonymous:
        assert anonymous.get("metrics").status_code == 403


async def test_rooms_clients_and_saves_move_after_an_edit(
    server: RunningServer, api: httpx.Client
) -> None:
    notebook = write(server.root / "counted.ipynb", notebook_bytes("a = 1"))
    before = figures(api)
    name, session = open_session(api, "counted.ipynb")
    async with room_client(server, name, session) as client:
        edit_first_cell(client, " # edited")
        await eventually(lambda: sources_on_disk(notebook) == ["a = 1 # edited"], "the autosave")
        during = figures(api)
    opened = value(during, "ganymede_rooms_open", type="notebook")
    assert opened == value(before, "ganymede_rooms_open", type="notebook") + 1
    assert value(during, "ganymede_room_clients") == value(before, "ganymede_room_clients") + 1
    saves = "ganymede_room_saves_total"
    assert value(during, saves, status="success") >= value(before, saves, status="success") + 1
    timed = "ganymede_room_save_duration_seconds_count"
    assert value(during, timed) >= value(before, timed) + 1
    assert value(during, "ganymede_room_save_duration_seconds_sum") > 0
    after = figures(api)
    assert value(after, "ganymede_room_clients") == value(before, "ganymede_room_clients")


async def test_a_change_on_disk_is_counted_as_taken_in(
    server: RunningServer, api: httpx.Client
) -> None:
    notebook = write(server.root / "outside.ipynb", notebook_bytes("a = 1"))
    name, session = open_session(api, "outside.ipynb")
    async with room_client(server, name, session):
        before = figures(api)
        write(notebook, notebook_bytes("a = 2"))
        taken = "ganymede_room_file_changes_taken_in_total"
        await eventually(
            lambda: value(figures(api), taken) >= value(before, taken) + 1, "the change taken in"
        )


async def test_a_part_both_changed_is_counted_as_a_conflict(tmp_path: Path) -> None:
    """The room's edit stays unsaved (autosave far off) while another program changes the same
    cell: the file wins that part, and the conflict is counted."""
    root = tmp_path / "root"
    write(root / "ganymede.toml", b"[serve]\nsave_delay = 60.0\n")
    notebook = write(root / "both.ipynb", notebook_bytes("a = 1"))
    server = start_server(root, jupyter_env(tmp_path / "jupyter"))
    conflicts = "ganymede_room_merge_conflicts_total"
    try:
        with server.client() as api:
            name, session = open_session(api, "both.ipynb")
            async with (
                room_client(server, name, session) as client,
                room_client(server, name, session) as other,
            ):
                edit_first_cell(client, " # room")
                # Another client has it: the room has it.
                await eventually(lambda: sources(other) == ["a = 1 # room"], "the edit to arrive")
                before = value(figures(api), conflicts)
                write(notebook, notebook_bytes("a = 2"))
                await eventually(
                    lambda: value(figures(api), conflicts) >= before + 1, "the conflict counted"
                )
    finally:
        stop_server(server)


def test_agent_sessions_open_and_close(server: RunningServer, api: httpx.Client) -> None:
    gauge = "ganymede_agent_sessions_open"
    before = value(figures(api), gauge)
    session = api.post("api/agent/sessions", json={"agent": "counted"}).json()["session"]
    assert value(figures(api), gauge) == before + 1
    assert api.delete(f"api/agent/sessions/{session}").status_code == 204
    assert value(figures(api), gauge) == before


async def test_host_calls_by_method_and_outcome(server: RunningServer, api: httpx.Client) -> None:
    source = (
        "from ganymede.kernel import host, HostError\n"
        "h = host()\n"
        "h.notebooks.list()\n"
        "try:\n"
        "    h.call('notebooks.nothing')\n"
        "except HostError as error:\n"
        "    print(error.code)"
    )
    write(server.root / "calls.ipynb", notebook_with(calls=source))
    document, _ = open_session(api, "calls.ipynb")
    kernel = api.post("api/kernels", json={"name": "python3"})
    assert kernel.status_code == 201, kernel.text
    kernel_id = kernel.json()["id"]
    before = figures(api)
    try:
        headers = {"Authorization": f"token {server.token}"}
        async with httpx.AsyncClient(base_url=server.base, headers=headers, timeout=90) as client:
            ran = await execute(client, kernel_id, document, hashed(("calls", source)), wait=60)
        assert ran.status_code == 200 and ran.json()["finished"], ran.text
    finally:
        api.delete(f"api/kernels/{kernel_id}")
    after = figures(api)
    calls = "ganymede_host_calls_total"
    listed = {"method": "notebooks.list", "outcome": "ok"}
    # The run's reply carries the cell's outputs: what the kernel saw if a call went uncounted.
    assert value(after, calls, **listed) == value(before, calls, **listed) + 1, ran.text
    unknown = {"method": "other", "outcome": "unavailable"}
    assert value(after, calls, **unknown) == value(before, calls, **unknown) + 1, ran.text
