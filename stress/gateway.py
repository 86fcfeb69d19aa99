"""Scale-out: ``ganymede serve --gateway-url`` against a Jupyter kernel gateway on loopback.

A kernel started through ``ganymede serve`` runs on the gateway; cells sent to the execute
endpoint run there and their outputs land in the room. The script runs the same cells on a
gateway kernel and on a local kernel (a second ``ganymede serve`` without a gateway) and prints
the execute endpoint's round trip (``wait``) for both, and their ratio.

    python -m stress.gateway           # 200 runs of each kind
    python -m stress.gateway --long    # 2,000 runs of each kind
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import nbformat

from ganymede.notebook.hashing import source_hash
from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server

READY = "is available at"
"""The line the kernel gateway logs once it listens."""
STARTUP_TIMEOUT = 60.0
RUN_TIMEOUT = 120.0
CELLS = {
    "arith": "1 + 1",
    "printed": "print('x' * 80)",
}


@dataclass
class Gateway:
    """A ``jupyter kernelgateway`` process on a loopback port."""

    process: subprocess.Popen[str]
    url: str
    log: Path

    def runs_kernel(self, kernel_id: str) -> bool:
        """Whether the gateway itself runs this kernel (its own kernels API)."""
        with httpx.Client(base_url=self.url, timeout=30) as client:
            return client.get(f"/api/kernels/{kernel_id}").status_code == httpx.codes.OK


def free_port() -> int:
    """A loopback port free now (the gateway prints the port it was given, not one it chose)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def running_gateway(home: Path, *args: str) -> Iterator[Gateway]:
    """A kernel gateway serving kernels from this environment, its Jupyter dirs under ``home``;
    ``args`` go on its command line."""
    port = free_port()
    log = home / "gateway.log"
    command = [
        sys.executable,
        "-m",
        "kernel_gateway",
        "--KernelGatewayApp.ip=127.0.0.1",
        f"--KernelGatewayApp.port={port}",
        *args,
    ]
    process = subprocess.Popen(
        command, env=jupyter_env(home / "gateway"), stderr=subprocess.PIPE, text=True
    )
    ready = threading.Event()
    copier = threading.Thread(target=_copy_log, args=(process, log, ready), daemon=True)
    copier.start()
    try:
        if not ready.wait(STARTUP_TIMEOUT) or process.poll() is not None:
            raise RuntimeError(f"the kernel gateway did not start:\n{log.read_text()}")
        yield Gateway(process, f"http://127.0.0.1:{port}", log)
    finally:
        process.terminate()
        process.wait(timeout=STARTUP_TIMEOUT)
        copier.join(timeout=STARTUP_TIMEOUT)
        assert process.stderr is not None
        process.stderr.close()


def _copy_log(process: subprocess.Popen[str], log: Path, ready: threading.Event) -> None:
    """Keep the gateway's stderr flowing into a file (a full pipe would stall it)."""
    assert process.stderr is not None
    with log.open("w") as sink:
        for line in process.stderr:
            sink.write(line)
            sink.flush()
            if READY in line:
                ready.set()
    ready.set()  # it exited: the waiter sees the exit


@contextlib.contextmanager
def served(home: Path, *args: str) -> Iterator[RunningServer]:
    root = home / "root"
    root.mkdir(parents=True, exist_ok=True)
    server = start_server(root, jupyter_env(home / "jupyter"), *args)
    try:
        yield server
    finally:
        stop_server(server)


def write_notebook(path: Path, sources: dict[str, str]) -> None:
    cells = []
    for cell_id, source in sources.items():
        cell = nbformat.v4.new_code_cell(source)
        cell["id"] = cell_id
        cells.append(cell)
    path.write_text(nbformat.writes(nbformat.v4.new_notebook(cells=cells)) + "\n")


def start_kernel(api: httpx.Client) -> str:
    answer = api.post("api/kernels", json={"name": "python3"})
    answer.raise_for_status()
    return str(answer.json()["id"])


def open_document(api: httpx.Client, path: str) -> str:
    """The notebook's room name, the execute endpoint's ``document_id``."""
    answer = api.put(
        f"api/collaboration/session/{path}", json={"format": "json", "type": "notebook"}
    )
    answer.raise_for_status()
    return f"json:notebook:{answer.json()['fileId']}"


def run_cells(
    api: httpx.Client, kernel_id: str, document: str, cells: dict[str, str]
) -> dict[str, Any]:
    """Run ``cells`` (id → the source the caller saw) as one batch and wait for them."""
    body = {
        "document_id": document,
        "cells": [
            {"cell_id": cell_id, "source_hash": source_hash(source)}
            for cell_id, source in cells.items()
        ],
        "request_id": uuid.uuid4().hex,
        "wait": RUN_TIMEOUT,
    }
    answer = api.post(f"api/kernels/{kernel_id}/execute", json=body, timeout=RUN_TIMEOUT + 30)
    answer.raise_for_status()
    return dict(answer.json())


def round_trips(server: RunningServer, runs: int) -> list[float]:
    """Seconds per execute request (one cell, ``wait``) on a fresh kernel of ``server``."""
    write_notebook(server.root / "timed.ipynb", CELLS)
    with server.client() as api:
        kernel_id = start_kernel(api)
        document = open_document(api, "timed.ipynb")
        run_cells(api, kernel_id, document, CELLS)  # the line to the kernel is opened once
        timings = []
        for index in range(runs):
            cell_id = list(CELLS)[index % len(CELLS)]
            started = time.perf_counter()
            answer = run_cells(api, kernel_id, document, {cell_id: CELLS[cell_id]})
            timings.append(time.perf_counter() - started)
            cell = answer["cells"][0]
            if not answer["finished"] or not cell["outputs"]:
                raise AssertionError(f"run {index} did not land in the room: {answer}")
        api.delete(f"api/kernels/{kernel_id}")
    return timings


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def describe(name: str, timings: list[float]) -> str:
    median = statistics.median(timings) * 1000
    p95, p99 = (percentile(timings, fraction) * 1000 for fraction in (0.95, 0.99))
    return f"{name:8} n={len(timings)} median={median:.1f} ms p95={p95:.1f} ms p99={p99:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long", action="store_true", help="2,000 runs of each kind")
    runs = 2000 if parser.parse_args().long else 200
    with tempfile.TemporaryDirectory(prefix="ganymede-gateway-") as scratch:
        home = Path(scratch)
        with (
            running_gateway(home / "gw") as gateway,
            served(home / "remote", "--gateway-url", gateway.url) as server,
        ):
            remote = round_trips(server, runs)
        with served(home / "local") as server:
            local = round_trips(server, runs)
    print(describe("gateway", remote))
    print(describe("local", local))
    ratio = statistics.median(remote) / statistics.median(local)
    print(f"gateway/local median round trip: {ratio:.2f}x")


if __name__ == "__main__":
    main()
