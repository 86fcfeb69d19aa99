"""Where the time of a headless run goes, against papermill on the same notebook.

Runs a trivial 3-cell notebook ROUNDS times each way (interleaved) and prints medians:
``run_notebook`` end to end (until every kernel is gone) and until its outcome is ready; the same
run split into kernel start, cells and kill; and papermill's ``execute_notebook`` (imported
before timing, so its import cost is not counted). Then a batch of BATCH notebooks through
``run_notebooks`` with ``jobs`` 1 and 2 (the next kernel warms while one runs) against papermill
running them one after another.

    .venv/bin/python bench/runner_breakdown.py [ROUNDS]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import nbformat
import papermill

from ganymede.execute import RunEvent, RunRequest, run_notebook, run_notebooks
from ganymede.execute.kernel import Kernel, KernelLaunch
from ganymede.execute.outputs import CellOutputs, DisplayRegistry

SOURCES = ["a = 1", "b = a + 1\nprint(b)", "{'sum': a + b}"]
BATCH = 6


def trivial_notebook() -> dict:
    node = nbformat.v4.new_notebook()
    node.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    node.cells = [nbformat.v4.new_code_cell(source) for source in SOURCES]
    return json.loads(json.dumps(node))


async def ganymede_round(path: Path, notebook: dict) -> tuple[float, float]:
    """Seconds until the outcome was ready, and until run_notebook returned."""
    ready_at: list[float] = []

    def on_event(event: RunEvent) -> None:
        if event.kind == "finished":
            ready_at.append(time.perf_counter())

    began = time.perf_counter()
    outcome = await run_notebook(RunRequest(path=path, notebook=notebook), on_event=on_event)
    returned = time.perf_counter()
    assert outcome.status == "ok", outcome.error
    return ready_at[0] - began, returned - began


async def breakdown_round(directory: Path) -> tuple[float, float, float]:
    """Seconds to start a kernel, run the three cells, and kill it."""
    began = time.perf_counter()
    kernel = await Kernel.start(KernelLaunch("python3", directory), startup_timeout=60)
    started = time.perf_counter()
    displays = DisplayRegistry()
    for source in SOURCES:
        outputs = CellOutputs([], displays)

        def collect(message: Mapping[str, Any], outputs: CellOutputs = outputs) -> None:
            outputs.handle(message["msg_type"], message.get("content", {}))

        await kernel.execute(source, collect, timeout=None, stop_on_error=True)
    ran = time.perf_counter()
    await kernel.kill()
    return started - began, ran - started, time.perf_counter() - ran


async def batch_round(path: Path, notebook: dict, jobs: int) -> float:
    requests = [RunRequest(path=path, notebook=notebook) for _ in range(BATCH)]
    began = time.perf_counter()
    outcomes = await run_notebooks(requests, jobs=jobs)
    assert all(outcome.status == "ok" for outcome in outcomes)
    return time.perf_counter() - began


def papermill_round(path: Path, output: Path) -> float:
    began = time.perf_counter()
    papermill.execute_notebook(str(path), str(output), progress_bar=False, log_output=False)
    return time.perf_counter() - began


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    notebook = trivial_notebook()
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        path = directory / "trivial.ipynb"
        path.write_text(json.dumps(notebook))
        ours, parts, theirs = [], [], []
        for _ in range(rounds):  # interleaved, so a busy moment of the machine hits all three
            ours.append(asyncio.run(ganymede_round(path, notebook)))
            parts.append(asyncio.run(breakdown_round(directory)))
            theirs.append(papermill_round(path, directory / "out.ipynb"))

    def median(values: list[float]) -> float:
        return statistics.median(values)

    ready, returned = median([r for r, _ in ours]), median([t for _, t in ours])
    start, cells, kill = (median([p[i] for p in parts]) for i in range(3))
    paper = median(theirs)
    print(f"median of {rounds} rounds, trivial 3-cell notebook")
    print(f"ganymede run_notebook: outcome ready {ready:.3f} s, returned {returned:.3f} s")
    print(f"  kernel start {start:.3f} s | 3 cells {cells:.3f} s | kill + clean-up {kill:.3f} s")
    print(f"papermill execute_notebook: {paper:.3f} s")
    print(f"ratio papermill / ganymede (returned): {paper / returned:.2f}x")

    with tempfile.TemporaryDirectory() as name:
        path = Path(name) / "trivial.ipynb"
        path.write_text(json.dumps(notebook))
        one_job = asyncio.run(batch_round(path, notebook, jobs=1))
        two_jobs = asyncio.run(batch_round(path, notebook, jobs=2))
        began = time.perf_counter()
        for _ in range(BATCH):
            papermill_round(path, Path(name) / "out.ipynb")
        papermill_batch = time.perf_counter() - began
    print(f"{BATCH} notebooks: run_notebooks jobs=1 {one_job:.3f} s, jobs=2 {two_jobs:.3f} s")
    print(f"  papermill one after another {papermill_batch:.3f} s")


if __name__ == "__main__":
    main()
