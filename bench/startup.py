"""`ganymede serve` against jupyter-collaboration's server: from the command to an API that answers.

A JupyterHub single-user server, a CI job's server and every test that starts one pay this.
Both servers start on an empty root, alternating, in the same run: `ganymede serve` from this
environment (JupyterLab, the rooms and every extension installed here) and `jupyter server`
with jupyter-collaboration from the venv `bench/rooms.py` makes. Measured for each start: the
wall time until ``/api/status`` answers (the anchor is polled every 0.1 s, ganymede is asked
once its URL is printed) and the CPU seconds of the whole process, start and SIGTERM stop.

    .venv/bin/python bench/startup.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from common import Server, start_ganymede
from rooms import ensure_anchor, start_anchor


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_start(start: Callable[[Path, Path], Server], scratch: Path) -> tuple[float, float]:
    """Wall seconds to an answering API, and CPU seconds from start to stopped."""
    root, home = scratch / "root", scratch / "home"
    root.mkdir(parents=True)
    home.mkdir()
    cpu_before, started = children_cpu(), time.perf_counter()
    server = start(root, home)
    response = httpx.get(f"{server.base}api/status", headers=server.headers, timeout=30)
    response.raise_for_status()
    answered = time.perf_counter() - started
    server.stop()
    return answered, children_cpu() - cpu_before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--anchor-venv", type=Path, default=Path(".bench-venvs/jupyter-collaboration")
    )
    args = parser.parse_args()
    venv = args.anchor_venv.resolve()
    print(f"anchor: {ensure_anchor(venv)}")
    starters: dict[str, Callable[[Path, Path], Server]] = {
        "ganymede serve": start_ganymede,
        "jupyter-collaboration": lambda root, home: start_anchor(venv, root, home),
    }
    walls: dict[str, list[float]] = {name: [] for name in starters}
    cpus: dict[str, list[float]] = {name: [] for name in starters}
    with tempfile.TemporaryDirectory() as scratch:
        for repetition in range(args.repeat):
            for name, start in starters.items():
                wall, cpu = one_start(start, Path(scratch) / f"{repetition}-{name}")
                walls[name].append(wall)
                cpus[name].append(cpu)
    for name in starters:
        print(
            f"{name:22} answers in {statistics.median(walls[name]):.2f} s, "
            f"{statistics.median(cpus[name]):.2f} CPU s (median of {args.repeat})"
        )
    ours, anchor = starters
    print(
        f"ratio ganymede / jupyter-collaboration: wall "
        f"{statistics.median(walls[ours]) / statistics.median(walls[anchor]):.2f}, CPU "
        f"{statistics.median(cpus[ours]) / statistics.median(cpus[anchor]):.2f}"
    )


if __name__ == "__main__":
    main()
