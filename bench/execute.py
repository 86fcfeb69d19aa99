"""How fast `ganymede execute` runs notebooks, against papermill and `jupyter execute`, same run.

Every figure is a whole process (start-up, imports, kernel, cells, write), as a CI job pays it.
Runs are interleaved so a busy machine slows every tool alike. Usage:

    .venv/bin/python bench/execute.py [--repeat 7] [--notebooks 10] [--jobs 2] [--cells 3]

``--cells N`` makes the single notebook N cells long (the trivial three, repeated), which shows
what each cell costs beyond start-up; ``--no-autosave`` beside the default shows what saving the
notebook after every cell costs; ``--cache`` after a first run shows a cached rerun (target
0.15 s, whole process).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

BIN = Path(sys.executable).parent
TRIVIAL_CELLS = ["x = 1", "y = x + 1", "print(y)"]


def write_notebook(path: Path, index: int = 0, count: int = len(TRIVIAL_CELLS)) -> Path:
    """``count`` trivial cells, their ids told apart by ``index`` across notebooks."""
    sources = [TRIVIAL_CELLS[n % len(TRIVIAL_CELLS)] for n in range(count)]
    return write_code_notebook(path, sources, f"c{index}-")


def write_code_notebook(path: Path, sources: list[str], id_prefix: str = "c") -> Path:
    """A Python notebook of one code cell per source, as Jupyter writes it."""
    cells = [
        {
            "cell_type": "code",
            "execution_count": None,
            "id": f"{id_prefix}{n}",
            "metadata": {},
            "outputs": [],
            "source": source,
        }
        for n, source in enumerate(sources)
    ]
    notebook = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook, indent=1))
    return path


def timed(command: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    return elapsed


def median_of(repeat: int, runs: dict[str, Callable[[], float]]) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            samples[name].append(run())
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--notebooks", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--cells", type=int, default=len(TRIVIAL_CELLS))
    options = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        single = write_notebook(work / "single.ipynb", count=options.cells)
        many = [write_notebook(work / f"nb{n}.ipynb", n) for n in range(options.notebooks)]
        ganymede = str(BIN / "ganymede")
        papermill = str(BIN / "papermill")
        jupyter = str(BIN / "jupyter")

        cached = [ganymede, "execute", "--cache", "cache", "-o", "cached.ipynb", single.name]
        timed(cached, work)  # the first run fills the cache
        one = median_of(
            options.repeat,
            {
                "ganymede execute": lambda: timed([ganymede, "execute", single.name], work),
                "ganymede execute --cache (a hit)": lambda: timed(cached, work),
                "ganymede execute --no-autosave": lambda: timed(
                    [ganymede, "execute", "--no-autosave", single.name], work
                ),
                "papermill": lambda: timed([papermill, single.name, "out.ipynb"], work),
                "jupyter execute": lambda: timed(
                    [jupyter, "execute", "--inplace", single.name], work
                ),
            },
        )
        names = [path.name for path in many]

        def papermill_sequential() -> float:
            return sum(timed([papermill, name, f"out-{name}"], work) for name in names)

        batch = median_of(
            max(3, options.repeat // 2),
            {
                f"ganymede execute -j {options.jobs}": lambda: timed(
                    [ganymede, "execute", "-j", str(options.jobs), *names], work
                ),
                "papermill, one after another": papermill_sequential,
            },
        )

    print(f"trivial {options.cells}-cell notebook, whole process, median of {options.repeat}:")
    for name, seconds in one.items():
        print(f"  {name:<34} {seconds:6.3f} s")
    print(f"  ratio ganymede / papermill        {one['ganymede execute'] / one['papermill']:6.2f}")
    ratio_jupyter = one["ganymede execute"] / one["jupyter execute"]
    print(f"  ratio ganymede / jupyter execute  {ratio_jupyter:6.2f}")
    ratio_saving = one["ganymede execute"] / one["ganymede execute --no-autosave"]
    print(f"  ratio autosave on / off           {ratio_saving:6.2f}")
    print(f"{options.notebooks} trivial notebooks, whole run:")
    for name, seconds in batch.items():
        print(f"  {name:<34} {seconds:6.3f} s")
    values = list(batch.values())
    print(f"  ratio ganymede / papermill        {values[0] / values[1]:6.2f}")


if __name__ == "__main__":
    main()
