"""What running a cell through the execute endpoint costs over talking to the kernel directly.

One `ganymede serve`, one kernel started through its API, one notebook room. Each round runs
`1 + 1` twice, interleaved so a busy machine slows both alike: once through
`POST /api/kernels/{id}/execute` with `wait` (request, checks, clearing the cell, the server's
own kernel client, outputs written into the room, answer), once as a bare jupyter_client
execute on the same kernel (request, reply and iopub idle). Prints the p50 of each and the ratio.

    .venv/bin/python bench/execute_endpoint.py [--runs 200]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from jupyter_client import BlockingKernelClient

from ganymede.notebook.hashing import source_hash

SOURCE = "1 + 1"
SERVING = "ganymede: serving "


def start_server(root: Path, home: Path) -> tuple[subprocess.Popen[str], str]:
    env = dict(os.environ)
    for name in ("data", "runtime", "config"):
        (home / name).mkdir(parents=True, exist_ok=True)
        env[f"JUPYTER_{name.upper()}_DIR"] = str(home / name)
    env.pop("JUPYTER_TOKEN", None)
    command = [sys.executable, "-m", "ganymede", "serve", str(root), "--port", "0", "--no-browser"]
    log = (home / "server.log").open("w")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith(SERVING):
            return process, line.rsplit(" at ", 1)[1].strip()
    raise SystemExit(f"ganymede serve exited {process.wait()}; see {home / 'server.log'}")


def write_notebook(path: Path) -> None:
    cell = {
        "cell_type": "code",
        "execution_count": None,
        "id": "sum",
        "metadata": {},
        "outputs": [],
        "source": SOURCE,
    }
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(notebook, indent=1))


def bare_execute(client: BlockingKernelClient) -> float:
    started = time.perf_counter()
    reply = client.execute_interactive(SOURCE, output_hook=lambda message: None, timeout=60)
    elapsed = time.perf_counter() - started
    assert reply["content"]["status"] == "ok"
    return elapsed


def endpoint_execute(api: httpx.Client, kernel_id: str, body: dict[str, object]) -> float:
    started = time.perf_counter()
    answer = api.post(f"api/kernels/{kernel_id}/execute", json=body)
    elapsed = time.perf_counter() - started
    assert answer.status_code == 200 and answer.json()["finished"], answer.text
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as scratch:
        root, home = Path(scratch, "root"), Path(scratch, "jupyter")
        root.mkdir()
        write_notebook(root / "bench.ipynb")
        process, url = start_server(root, home)
        base, token = url.split("lab?token=")
        try:
            headers = {"Authorization": f"token {token}"}
            with httpx.Client(base_url=base, headers=headers, timeout=60) as api:
                kernel_id = api.post("api/kernels", json={"name": "python3"}).json()["id"]
                session = api.put(
                    "api/collaboration/session/bench.ipynb",
                    json={"format": "json", "type": "notebook"},
                ).json()
                body = {
                    "document_id": f"json:notebook:{session['fileId']}",
                    "cells": [{"cell_id": "sum", "source_hash": source_hash(SOURCE)}],
                    "wait": 60,
                }
                client = BlockingKernelClient(
                    connection_file=str(home / "runtime" / f"kernel-{kernel_id}.json")
                )
                client.load_connection_file()
                client.start_channels(hb=False)  # no heartbeat: a starting kernel reads as dead
                client.wait_for_ready(timeout=60)
                endpoint_execute(api, kernel_id, body)  # the server connects to the kernel
                bare: list[float] = []
                through_endpoint: list[float] = []
                for _ in range(runs):
                    bare.append(bare_execute(client))
                    through_endpoint.append(endpoint_execute(api, kernel_id, body))
                client.stop_channels()
        finally:
            process.terminate()
            process.wait(timeout=60)
    bare_p50 = statistics.median(bare) * 1000
    endpoint_p50 = statistics.median(through_endpoint) * 1000
    print(f"runs: {runs} of {SOURCE!r}, interleaved")
    print(f"bare jupyter_client execute  p50 {bare_p50:7.2f} ms")
    print(f"execute endpoint with wait   p50 {endpoint_p50:7.2f} ms")
    print(f"ratio endpoint / bare        {endpoint_p50 / bare_p50:7.2f}")


if __name__ == "__main__":
    main()
