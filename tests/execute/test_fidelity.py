"""``ganymede execute`` against nbclient on the same notebooks: identical once normalised.

Each golden notebook (tests/execute/golden/fidelity/) exercises one thing nbclient is the
reference for: the Output widget's capture, widget state, deferred clears and display updates,
interleaved streams, the ``raises-exception`` and ``skip-execution`` tags, history in memory.
Both runners run it on real kernels here; nbclient's result is the expected one.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError

from tests.execute.nbnormal import TIMING_KEYS, normalise, timing_keys

pytestmark = pytest.mark.slow

GOLDEN = Path(__file__).parent / "golden" / "fidelity"
NOTEBOOKS = sorted(path.name for path in GOLDEN.glob("*.ipynb"))
ATTEMPTS = 3
NBCLIENT_CELL_TIMEOUT = 15


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every golden notebook as ``ganymede execute`` wrote it (one process runs them all)."""
    directory = tmp_path_factory.mktemp("fidelity")
    for name in NOTEBOOKS:
        shutil.copy(GOLDEN / name, directory / name)
    done = subprocess.run(
        [sys.executable, "-m", "ganymede", "execute", *NOTEBOOKS, "--json"],
        capture_output=True,
        text=True,
        cwd=directory,
        timeout=240,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    return {name: json.loads((directory / name).read_text()) for name in NOTEBOOKS}


def by_nbclient(name: str, cwd: Path) -> dict[str, Any]:
    """The notebook as nbclient runs it. nbclient's Output widget mimic sends on the shell
    socket while a receive waits on it, which now and then loses the wake-up of the cell's
    reply (about 1 run in 6 here): such a run times out and is run again."""
    for _ in range(ATTEMPTS):
        notebook = nbformat.read(GOLDEN / name, as_version=4)
        client = NotebookClient(
            notebook,
            kernel_name="python3",
            timeout=NBCLIENT_CELL_TIMEOUT,
            resources={"metadata": {"path": str(cwd)}},
        )
        try:
            client.execute()
        except CellTimeoutError:
            continue
        return json.loads(nbformat.writes(notebook))
    raise AssertionError(f"nbclient did not finish {name} in {ATTEMPTS} attempts")


@pytest.mark.timeout(240)  # the first one runs the fixture; nbclient may need a second try
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_ganymede_execute_writes_what_nbclient_writes(
    name: str, executed: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    expected = by_nbclient(name, tmp_path)
    actual = executed[name]
    assert normalise(actual) == normalise(expected)
    assert timing_keys(actual) == timing_keys(expected)
    assert all(keys in (None, TIMING_KEYS) for keys in timing_keys(actual))
    nbformat.validate(nbformat.from_dict(actual))
