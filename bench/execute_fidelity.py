"""What nbclient's fidelity costs `ganymede execute`: one source tree against another, same run.

A 100-cell notebook with widgets (sliders, an Output widget printed into) runs as a whole
process from this tree and from ``--before`` (a checkout without per-cell timings and widget
state), interleaved so a busy machine slows both alike. Usage:

    .venv/bin/python bench/execute_fidelity.py --before ../main [--repeat 9] [--cells 100]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from execute import write_code_notebook

HERE = Path(__file__).resolve().parents[1]


def cell_source(n: int) -> str:
    if n == 0:
        return "import ipywidgets as widgets\nout = widgets.Output()\nout"
    if n % 10 == 0:
        return f"widgets.IntSlider(value={n}, max=1000)"
    if n % 10 == 5:
        return f"with out:\n    print({n})"
    return f"x{n} = {n}\nprint(x{n})"


def write_notebook(path: Path, cells: int) -> Path:
    return write_code_notebook(path, [cell_source(n) for n in range(cells)])


def timed(tree: Path, notebook: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, "-m", "ganymede", "execute", notebook.name, "-o", "out.ipynb"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=notebook.parent, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{tree}: ganymede execute failed ({done.returncode}):\n{done.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="the tree to compare with")
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--cells", type=int, default=100)
    options = parser.parse_args()
    trees = {"before": options.before.resolve(), "this tree": HERE}
    samples: dict[str, list[float]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory() as scratch:
        notebook = write_notebook(Path(scratch) / "widgets.ipynb", options.cells)
        for _ in range(options.repeat):
            for name, tree in trees.items():
                samples[name].append(timed(tree, notebook))
    medians = {name: statistics.median(values) for name, values in samples.items()}
    print(f"{options.cells}-cell notebook with widgets, whole process, median of {options.repeat}:")
    for name, seconds in medians.items():
        print(f"  {name:<10} {seconds:6.3f} s")
    print(f"  ratio this tree / before  {medians['this tree'] / medians['before']:6.3f}")


if __name__ == "__main__":
    main()
