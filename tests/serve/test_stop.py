"""Ctrl-C stops the server even while a request is still working in a background thread."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
from pathlib import Path

import httpx
import pytest

from tests.serve.conftest import STOP_TIMEOUT, jupyter_env, start_server

pytestmark = pytest.mark.slow


def test_ctrl_c_during_a_long_listing_still_exits(tmp_path: Path) -> None:
    """The contents API lists a big directory in a worker thread; stopping mid-way must not hang."""
    root = tmp_path / "root"
    many = root / "many"
    many.mkdir(parents=True)
    for number in range(20_000):
        (many / f"f{number}.txt").touch()
    server = start_server(root, jupyter_env(tmp_path / "jupyter"))
    started = threading.Event()

    def list_many() -> None:
        with server.client() as client:
            started.set()
            # The server goes away mid-request: that is the point of this test.
            with contextlib.suppress(httpx.HTTPError):
                client.get("api/contents/many", params={"content": 1}, timeout=STOP_TIMEOUT)

    lister = threading.Thread(target=list_many)
    lister.start()
    started.wait(timeout=30)
    # Let the request reach its worker thread; the hang needs the stop to land during it.
    threading.Event().wait(0.5)
    server.process.send_signal(signal.SIGINT)
    try:
        status = server.process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        server.process.kill()
        raise AssertionError(f"still running {STOP_TIMEOUT} s after Ctrl-C") from None
    finally:
        lister.join(timeout=STOP_TIMEOUT)
        assert server.process.stdout is not None
        server.process.stdout.close()
    assert status == 0, server.log.read_text()[-2000:]
