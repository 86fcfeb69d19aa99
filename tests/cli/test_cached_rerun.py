"""The cached rerun's own reading of the command line, and what it leaves unloaded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ganymede.cli.cached_rerun import CachedArgs, parse
from tests.cli.test_execute import code, write_notebook

HEAVY = ("typer", "click", "rich", "pydantic", "jupyter_client", "zmq", "nbformat", "ipykernel")


def test_the_options_a_cached_rerun_needs_are_read() -> None:
    parsed = parse(
        [
            "a.ipynb",
            "--cache=.runs",
            "--cache-input",
            "data/*.csv",
            "-o",
            "out",
            "-p",
            "n=3",
            "--json",
            "-k",
            "python3",
            "b.ipynb",
            "-j",
            "2",
            "--timeout=5",
            "--no-inject",
        ]
    )
    assert parsed == CachedArgs(
        notebooks=[Path("a.ipynb"), Path("b.ipynb")],
        cache=Path(".runs"),
        cache_input=["data/*.csv"],
        output="out",
        kernel="python3",
        as_json=True,
        no_inject=True,
    )


@pytest.mark.parametrize(
    "args",
    [
        ["nb.ipynb", "--help"],
        ["-", "--cache", "c"],
        ["nb.ipynb", "--prepare-only"],
        ["nb.ipynb", "--no-cache"],
        ["nb.ipynb", "--log-output"],
        ["nb.ipynb", "--grant", "read=x"],
        ["nb.ipynb", "--some-future-option"],
        ["nb.ipynb", "-j", "0"],
        ["nb.ipynb", "-j", "1.5"],
        ["nb.ipynb", "--timeout", "-1"],
        ["nb.ipynb", "--cache"],
        [],
    ],
)
def test_anything_else_goes_the_whole_way(args: list[str]) -> None:
    assert parse(args) is None


def test_a_cached_rerun_loads_no_kernel_client_and_no_option_parser(tmp_path: Path) -> None:
    write_notebook(
        tmp_path / "nb.ipynb", code("from ganymede.kernel import result\nresult('n', 1)")
    )
    command = [sys.executable, "-m", "ganymede", "execute", "nb.ipynb", "--cache", "c", "--json"]
    first = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=90)
    assert first.returncode == 0, first.stderr
    probe = (
        "import atexit, json, sys\n"
        f"atexit.register(lambda: print(json.dumps(sorted(set({HEAVY!r}) & set(sys.modules)))))\n"
        "sys.argv = ['ganymede', *sys.argv[1:]]\n"
        "from ganymede.cli.launch import run\n"
        "run()\n"
    )
    probed = subprocess.run(
        [sys.executable, "-c", probe, *command[3:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert probed.returncode == 0, probed.stderr
    line, loaded = probed.stdout.splitlines()
    assert json.loads(line)["cached"] is True
    assert json.loads(loaded) == []
