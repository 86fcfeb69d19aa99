"""``ganymede serve --gateway-url`` against a real Jupyter kernel gateway on loopback: kernels
started through the server run on the gateway, cells sent to the execute endpoint land in the
room (and the file), a failing cell stops its batch, a restart is survived, such kernels get
no host comm, and output a client is too far behind to take is dropped as for local kernels."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import nbformat
import pytest

from stress.gateway import (
    Gateway,
    open_document,
    round_trips,
    run_cells,
    running_gateway,
    served,
    start_kernel,
    write_notebook,
)
from tests.serve.conftest import RunningServer
from tests.serve.raw_kernel import BOUNDED_CONFIG, output_is_dropped_and_the_connection_stays
from tests.serve.rooms.client import eventually

# A gateway, a server and their kernels start in the first test that needs them.
pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    # The gateway's own iopub rate limit off: only the server's bound may drop output here.
    no_rate_limit = "--ZMQChannelsWebsocketConnection.limit_rate=False"
    with running_gateway(tmp_path_factory.mktemp("gateway"), no_rate_limit) as running:
        yield running


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, gateway: Gateway) -> Iterator[RunningServer]:
    with served(tmp_path_factory.mktemp("serve"), "--gateway-url", gateway.url) as running:
        yield running


@pytest.fixture(scope="module")
def bounded_server(
    tmp_path_factory: pytest.TempPathFactory, gateway: Gateway
) -> Iterator[RunningServer]:
    """A server on the same gateway whose clients may fall only a little behind."""
    home = tmp_path_factory.mktemp("bounded")
    (home / "root").mkdir()
    (home / "root" / "ganymede.toml").write_text(BOUNDED_CONFIG)
    with served(home, "--gateway-url", gateway.url) as running:
        yield running


@pytest.fixture
def api(server: RunningServer) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


@pytest.fixture
def kernel(api: httpx.Client) -> Iterator[str]:
    kernel_id = start_kernel(api)
    yield kernel_id
    api.delete(f"api/kernels/{kernel_id}")


def texts(answer: dict[str, object]) -> list[str]:
    cells = answer["cells"]
    assert isinstance(cells, list)
    return ["".join(o.get("text", "") for o in cell["outputs"]) for cell in cells]


def test_a_kernel_started_through_the_server_runs_on_the_gateway(
    server: RunningServer, gateway: Gateway, api: httpx.Client, kernel: str
) -> None:
    assert gateway.runs_kernel(kernel)
    assert not gateway.runs_kernel("not-a-kernel")
    sources = {"parent": "import os\nprint(os.getppid())"}
    write_notebook(server.root / "where.ipynb", sources)
    answer = run_cells(api, kernel, open_document(api, "where.ipynb"), sources)
    assert answer["finished"] is True
    assert texts(answer) == [f"{gateway.process.pid}\n"]


async def test_cells_run_through_the_execute_endpoint_land_in_the_room_and_the_file(
    server: RunningServer, api: httpx.Client, kernel: str
) -> None:
    sources = {"a": "x = 20", "b": "print(x + 1)", "c": "x * 2"}
    path = server.root / "ran.ipynb"
    write_notebook(path, sources)
    answer = run_cells(api, kernel, open_document(api, "ran.ipynb"), sources)

    assert answer["finished"] is True
    cells = answer["cells"]
    assert [cell["execution_state"] for cell in cells] == ["idle"] * 3
    counts = [cell["execution_count"] for cell in cells]
    assert counts == [counts[0], counts[0] + 1, counts[0] + 2]
    assert cells[1]["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "21\n"}]
    assert cells[2]["outputs"][0]["data"] == {"text/plain": "40"}

    def saved_outputs() -> list[object]:
        return [cell.get("outputs") for cell in nbformat.reads(path.read_text(), 4).cells]

    await eventually(lambda: saved_outputs()[2] == cells[2]["outputs"], "the outputs saved")


def test_a_failing_cell_stops_its_batch_and_the_lab_form_answers_422(
    server: RunningServer, api: httpx.Client, kernel: str
) -> None:
    sources = {"ok": "print('before')", "bad": "1 / 0", "after": "print('never')"}
    write_notebook(server.root / "fails.ipynb", sources)
    document = open_document(api, "fails.ipynb")
    answer = run_cells(api, kernel, document, sources)
    assert texts(answer)[0] == "before\n"
    assert answer["cells"][1]["outputs"][0]["ename"] == "ZeroDivisionError"
    assert answer["cells"][2]["outputs"] == []
    assert answer["cells"][2]["execution_count"] is None

    lab = api.post(
        f"api/kernels/{kernel}/execute", json={"cell_id": "bad", "document_id": document}
    )
    assert lab.status_code == 422 and lab.json()["ename"] == "ZeroDivisionError"


def test_cells_run_after_the_kernel_restarted_on_the_gateway(
    server: RunningServer, api: httpx.Client, kernel: str
) -> None:
    sources = {"set": "value = 'before the restart'", "get": "print(globals().get('value'))"}
    write_notebook(server.root / "restart.ipynb", sources)
    document = open_document(api, "restart.ipynb")
    assert texts(run_cells(api, kernel, document, sources))[1] == "before the restart\n"

    assert api.post(f"api/kernels/{kernel}/restart").status_code == 200
    answer = run_cells(api, kernel, document, {"get": sources["get"]})
    assert answer["finished"] is True
    assert texts(answer) == ["None\n"]


HOST_CELLS = {
    "host": "from ganymede.kernel import host\nprint(host() is None)",
    "comms": (
        "import json\n"
        "comms = get_ipython().kernel.comm_manager.comms\n"
        "print(json.dumps(sorted(c.target_name for c in comms.values())))"
    ),
}


def host_comm_seen(server: RunningServer, api: httpx.Client, kernel: str) -> tuple[bool, bool]:
    """Whether ``host()`` answers in the kernel, and whether it holds the host comm."""
    write_notebook(server.root / "host.ipynb", HOST_CELLS)
    answer = run_cells(api, kernel, open_document(api, "host.ipynb"), HOST_CELLS)
    no_host, comms = texts(answer)
    return no_host != "True\n", "ganymede.host.v1" in json.loads(comms)


def test_a_gateway_kernel_gets_no_host_comm_where_a_local_one_does(
    server: RunningServer, api: httpx.Client, kernel: str, tmp_path: Path
) -> None:
    assert host_comm_seen(server, api, kernel) == (False, False)
    with served(tmp_path) as local, local.client() as local_api:
        local_kernel = start_kernel(local_api)
        assert host_comm_seen(local, local_api, local_kernel) == (True, True)
        local_api.delete(f"api/kernels/{local_kernel}")


def test_the_stress_script_measures_round_trips_on_the_gateway(server: RunningServer) -> None:
    timings = round_trips(server, 5)
    assert len(timings) == 5


async def test_a_gateway_kernels_output_past_the_limit_is_dropped_and_the_connection_stays(
    bounded_server: RunningServer,
) -> None:
    with bounded_server.client() as api:
        kernel_id = start_kernel(api)
    try:
        await output_is_dropped_and_the_connection_stays(bounded_server, kernel_id)
    finally:
        with bounded_server.client() as api:
            api.delete(f"api/kernels/{kernel_id}")
