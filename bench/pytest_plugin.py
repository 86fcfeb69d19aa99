"""How fast ``pytest --ganymede`` tests a folder of notebooks, against ``pytest --nbmake``.

Every figure is a whole pytest process over the same small notebooks (start-up, collection,
one kernel per notebook, the cells), as a CI job pays it; the two tools alternate, so a busy
machine slows both alike. Usage:

    .venv/bin/python bench/pytest_plugin.py [--repeat 5] [--notebooks 20] [--workers 0] [--warm N]

``--workers N`` runs both under pytest-xdist's ``-n N`` as well; ``--warm N`` adds a run of the
plugin warming N kernels ahead (``--ganymede-warm``) beside its default.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from execute import median_of, timed, write_notebook


def pytest_command(flag: str, folder: str, workers: int) -> list[str]:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", flag, folder]
    return command + (["-n", str(workers)] if workers else [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--notebooks", type=int, default=20)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--warm", type=int, default=None)
    options = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        (work / "nbs").mkdir()
        for n in range(options.notebooks):
            write_notebook(work / "nbs" / f"nb{n}.ipynb", n)
        runs = {
            "pytest --ganymede": lambda: timed(pytest_command("--ganymede", "nbs", 0), work),
            "pytest --nbmake": lambda: timed(pytest_command("--nbmake", "nbs", 0), work),
        }
        if options.warm is not None:
            warm = f"--ganymede-warm={options.warm}"
            runs[f"pytest --ganymede {warm}"] = lambda: timed(
                [*pytest_command("--ganymede", "nbs", 0), warm], work
            )
        if options.workers:
            n = options.workers
            runs[f"pytest --ganymede -n {n}"] = lambda: timed(
                pytest_command("--ganymede", "nbs", n), work
            )
            runs[f"pytest --nbmake -n {n}"] = lambda: timed(
                pytest_command("--nbmake", "nbs", n), work
            )
        medians = median_of(options.repeat, runs)

    print(
        f"{options.notebooks} trivial notebooks, whole pytest process, median of {options.repeat}:"
    )
    for name, seconds in medians.items():
        print(f"  {name:<36} {seconds:6.3f} s")
    ratio = medians["pytest --ganymede"] / medians["pytest --nbmake"]
    print(f"  {'ratio ganymede / nbmake':<36} {ratio:6.2f}")
    if options.workers:
        n = options.workers
        ratio = medians[f"pytest --ganymede -n {n}"] / medians[f"pytest --nbmake -n {n}"]
        print(f"  {f'ratio under -n {n}':<36} {ratio:6.2f}")


if __name__ == "__main__":
    main()
