"""The host API from a cell: round trips, and search over many notebooks against ripgrep.

A `ganymede serve` of its own serves a generated corpus of small notebooks and one notebook whose
kernel does the measuring: its cell calls `host()` in a loop and prints the timings, so each
figure is the round trip a cell pays (kernel -> server -> kernel, through the host comm).

- `hello` and `notebooks.read` of a small notebook, p50 over --calls (target <= 5 ms);
- `notebooks.search` over the --notebooks corpus, p50 over --searches, against `rg` over the same
  files in the same run, as a process the way a cell would shell out to it (target <= 3x rg);
  the server keeps what it searched, so the first search, which reads every file, is shown apart
  (the measuring starts once the generated files are old enough to be kept).

    .venv/bin/python bench/host.py [--calls 500] [--notebooks 2000] [--searches 10]

Needs ripgrep (`apt-get install ripgrep`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
from common import Server, notebook_bytes, start_ganymede

from ganymede.core.search_cache import SETTLE_NS

MEASURING = "measure.ipynb"
SMALL = "small.ipynb"
CORPUS = "corpus"
NEEDLE = "zircon_ledger"


def small_notebook(index: int) -> dict[str, object]:
    """Five cells of ordinary work; one notebook in fifty mentions the needle."""
    cells = []
    for k in range(5):
        words = f"total_{index}_{k} = sum(values_{k}) / len(values_{k})"
        if k == 2 and index % 50 == 0:
            words += f"  # {NEEDLE}"
        cells.append(
            {
                "cell_type": "code",
                "execution_count": None,
                "id": f"c{index}-{k}",
                "metadata": {},
                "outputs": [],
                "source": words,
            }
        )
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def measuring_cell(calls: int, searches: int) -> str:
    return f"""
import json, statistics, time
from ganymede.kernel import host

h = host()

def p50(call, times):
    spent = []
    for _ in range(times):
        started = time.perf_counter()
        call()
        spent.append(time.perf_counter() - started)
    return statistics.median(spent)

started = time.perf_counter()
hits = h.notebooks.search({NEEDLE!r}, dir={CORPUS!r}, limit=500)
first = time.perf_counter() - started
print(json.dumps({{
    "first": first,
    "hello": p50(lambda: h.call("hello"), {calls}),
    "read": p50(lambda: h.notebooks.read({SMALL!r}), {calls}),
    "search": p50(lambda: h.notebooks.search({NEEDLE!r}, dir={CORPUS!r}, limit=500), {searches}),
    "hits": hits["total"],
}}))
"""


def measure_in_kernel(server: Server, calls: int, searches: int) -> dict[str, float]:
    with httpx.Client(base_url=server.base, headers=server.headers, timeout=600) as api:
        session = api.post("api/agent/sessions", json={"agent": "bench"}).json()["session"]
        body = {"session": session, "path": MEASURING, "ids": ["measure"], "wait": 600}
        ran = api.post("api/agent/run", json=body)
        ran.raise_for_status()
        cell = ran.json()["cells"][0]
    for output in cell["outputs"]:
        if output.get("name") == "stdout":
            return json.loads(output["text"])
    raise SystemExit(f"the measuring cell printed nothing: {cell['outputs']}")


def ripgrep_p50(root: Path, searches: int) -> tuple[float, int]:
    rg = shutil.which("rg")
    if rg is None:
        raise SystemExit("ripgrep (rg) is needed: apt-get install ripgrep")
    spent, found = [], 0
    for _ in range(searches):
        started = time.perf_counter()
        done = subprocess.run(
            [rg, "--fixed-strings", "--line-number", NEEDLE, CORPUS],
            cwd=root,
            capture_output=True,
            check=True,
        )
        spent.append(time.perf_counter() - started)
        found = len(done.stdout.splitlines())
    return statistics.median(spent), found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--notebooks", type=int, default=2000)
    parser.add_argument("--searches", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root, home = Path(scratch, "root"), Path(scratch, "jupyter")
        (root / CORPUS).mkdir(parents=True)
        home.mkdir()
        for index in range(args.notebooks):
            path = root / CORPUS / f"nb-{index:05d}.ipynb"
            path.write_bytes(notebook_bytes(small_notebook(index)))
        (root / SMALL).write_bytes(notebook_bytes(small_notebook(1)))
        measuring = small_notebook(0)
        measuring["cells"] = [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": "measure",
                "metadata": {},
                "outputs": [],
                "source": measuring_cell(args.calls, args.searches),
            }
        ]
        (root / MEASURING).write_bytes(notebook_bytes(measuring))
        written = time.monotonic()
        server = start_ganymede(root, home)
        # A server keeps only files older than SETTLE_NS; a tree at work is mostly older still.
        time.sleep(max(0.0, written + SETTLE_NS / 1e9 - time.monotonic()))
        try:
            figures = measure_in_kernel(server, args.calls, args.searches)
            rg_p50, rg_lines = ripgrep_p50(root, args.searches)
        finally:
            server.stop()
    print(f"from a cell, p50 of {args.calls}: hello {figures['hello'] * 1000:.2f} ms, ", end="")
    print(f"notebooks.read {figures['read'] * 1000:.2f} ms (target <= 5 ms)")
    search = figures["search"]
    print(
        f"notebooks.search over {args.notebooks} notebooks, p50 of {args.searches}: "
        f"{search * 1000:.1f} ms ({figures['hits']} hits); rg: {rg_p50 * 1000:.1f} ms "
        f"({rg_lines} lines)"
    )
    print(f"ratio search / rg {search / rg_p50:.2f} (target <= 3)")
    print(f"the server's first search (nothing kept yet): {figures['first'] * 1000:.1f} ms")


if __name__ == "__main__":
    main()
