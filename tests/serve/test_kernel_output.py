"""The kernel websocket drops output a client is too far behind to take, and stays open.

The client (``raw_kernel``) reads nothing while its kernel prints megabytes: the server must stop
queueing output for it past ``[serve]`` limits instead of buffering all of it, and once the
client reads again the connection is still there, with the execute reply and a fresh
kernel_info reply. ``tests/stress/test_gateway.py`` holds a gateway's kernels to the same.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ganymede.serve.kernels.output import OutputBacklog
from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server
from tests.serve.raw_kernel import BOUNDED_CONFIG, output_is_dropped_and_the_connection_stays

pytestmark = pytest.mark.slow

# jupyter_server's own rate limits off, so only the bound under test can drop anything.
NO_RATE_LIMITS = ("--ZMQChannelsWebsocketConnection.limit_rate=False",)


def test_a_backlog_is_full_at_either_limit() -> None:
    backlog = OutputBacklog(max_messages=2, max_bytes=100)
    assert not backlog.full(100)
    backlog.written(60)
    assert backlog.full(41)
    assert not backlog.full(40)
    backlog.written(10)
    assert backlog.full(1)
    backlog.flushed(60)
    assert (backlog.messages, backlog.size) == (1, 10)
    assert not backlog.full(90)


@pytest.fixture(scope="module")
def bounded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    home = tmp_path_factory.mktemp("bounded")
    root = home / "root"
    root.mkdir()
    (root / "ganymede.toml").write_text(BOUNDED_CONFIG)
    running = start_server(root, jupyter_env(home / "jupyter"), *NO_RATE_LIMITS)
    yield running
    stop_server(running)


async def test_output_past_the_limit_is_dropped_and_the_connection_stays(
    bounded: RunningServer,
) -> None:
    with bounded.client() as api:
        kernel_id = api.post("api/kernels", json={"name": "python3"}).json()["id"]
    try:
        await output_is_dropped_and_the_connection_stays(bounded, kernel_id)
    finally:
        with bounded.client() as api:
            api.delete(f"api/kernels/{kernel_id}")
