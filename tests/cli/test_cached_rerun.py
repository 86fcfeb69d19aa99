"""The quick reading of ``execute`` command lines, what it leaves unloaded, and that it gives
what typer's reading gives."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ganymede.cli.cached_rerun import ExecuteArgs, parse
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
    assert parsed == ExecuteArgs(
        notebooks=[Path("a.ipynb"), Path("b.ipynb")],
        cache=Path(".runs"),
        cache_input=["data/*.csv"],
        output="out",
        kernel="python3",
        jobs=2,
        timeout=5.0,
        as_json=True,
        no_inject=True,
    )


@pytest.mark.parametrize(
    "args",
    [
        ["nb.ipynb", "--help"],
        ["-", "--cache", "c"],
        ["nb.ipynb", "--prepare-only"],
        ["nb.ipynb", "--log-output"],
        ["nb.ipynb", "--grant", "read=x"],
        ["nb.ipynb", "--some-future-option"],
        ["nb.ipynb", "-j", "1.5"],
        ["nb.ipynb", "-j2"],
        ["nb.ipynb", "--timeout", "soon"],
        ["nb.ipynb", "--json=yes"],
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


@pytest.mark.parametrize(
    "args",
    [
        ["-j", "0"],
        ["--timeout", "-1"],
        ["--autosave-every", "-2"],
        ["--cwd", "no-such-dir"],
        ["-o", "out.ipynb", "--no-save"],
        ["-p", "not-a-name", "1"],
        ["--config", "missing.toml"],
    ],
)
def test_usage_errors_read_quickly_are_typers(tmp_path: Path, args: list[str]) -> None:
    write_notebook(tmp_path / "nb.ipynb", code("x = 1"))
    command = [sys.executable, "-m", "ganymede", "execute", "nb.ipynb", *args]
    quick = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=90)
    full = subprocess.run(  # --log-output is not read quickly: typer parses this one
        [*command, "--log-output"], cwd=tmp_path, capture_output=True, text=True, timeout=90
    )
    assert quick.returncode == full.returncode == 2
    assert quick.stderr == full.stderr
    assert quick.stderr.startswith("ganymede execute: error:")


def test_a_run_read_quickly_loads_no_pydantic(tmp_path: Path) -> None:
    write_notebook(tmp_path / "nb.ipynb", code("x = 1"))
    probe = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: print(json.dumps('pydantic' in sys.modules)))\n"
        "sys.argv = ['ganymede', 'execute', 'nb.ipynb', '-j', '1', '--timeout', '60']\n"
        "from ganymede.cli.launch import run\n"
        "run()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=90
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "false"
