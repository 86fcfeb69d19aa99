"""``ganymede execute`` answers its kernels' host calls: a real process, real kernels and files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.core.disk import code, write_notebook

pytestmark = pytest.mark.slow

INDEX = (
    "from ganymede.kernel import host, result, HostError\n"
    "h = host()\n"
    "result('notebook', h.notebook)\n"
    "result('methods', h.methods)\n"
    "result('listed', [j['path'] for j in h.notebooks.list('journal')])\n"
    "try:\n"
    "    result('run', h.notebooks.run('journal/day.ipynb', params={'n': 4})['results'])\n"
    "except HostError as e:\n"
    "    result('run', str(e))"
)
DAY = "from ganymede.kernel import params, result\nresult('doubled', params().get('n', 0) * 2)"


def execute(root: Path, *args: str) -> dict[str, Any]:
    """The named results of running index.ipynb with ``args``, from ``--json``."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("GANYMEDE_")}
    done = subprocess.run(
        [sys.executable, "-m", "ganymede", "execute", "index.ipynb", "--json", *args],
        capture_output=True,
        text=True,
        cwd=root,
        env=environment,
        timeout=100,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    [line] = [json.loads(text) for text in done.stdout.splitlines()]
    return dict(line["results"])


def test_executed_kernels_ask_under_host_and_grant_flags(tmp_path: Path) -> None:
    write_notebook(tmp_path / "index.ipynb", code(INDEX))
    write_notebook(tmp_path / "journal" / "day.ipynb", code(DAY))
    defaults = execute(tmp_path)
    assert defaults["notebook"] == "index.ipynb"
    assert defaults["methods"] == [
        "hello",
        "notebooks.list",
        "notebooks.read",
        "notebooks.search",
        "notebooks.results",
    ]
    assert defaults["listed"] == ["journal/day.ipynb"]
    assert defaults["run"] == "denied: notebooks.run needs a run grant covering journal/day.ipynb"
    granted = execute(tmp_path, "--grant", "run=journal", "--grant", "read=journal")
    assert "notebooks.run" in granted["methods"]
    assert granted["run"] == {"doubled": 8}


def test_edit_self_is_no_grant_for_execute(tmp_path: Path) -> None:
    write_notebook(tmp_path / "index.ipynb", code("1"))
    done = subprocess.run(
        [sys.executable, "-m", "ganymede", "execute", "index.ipynb", "--grant", "edit_self=true"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "--grant edit_self: executed notebooks make no self.* calls" in done.stderr
